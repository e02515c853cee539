"""The scanner's fast paths find exactly what the full paths find (issue 35, item 5).

detect-secrets' line scanner runs only on windows around lines some plugin could match
(``_detect_secrets`` docstring). Differential: the fast and the full path give the same
hits, in the same order, on generated text (secrets of every plugin, keyword
assignments, allowlist pragmas on the line and the line before, look-alike and
invisible characters, control bytes, long lines) and on real text (the planted corpus,
the prose fixtures, SciFact abstracts when present); and the whole detector set gives
the same findings either way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ragline.scanning import _detect_secrets
from ragline.scanning.adversarial import adversarial_inputs
from ragline.scanning.engine import Detectors
from ragline.scanning.layout import Layout
from ragline.scanning.model import DetectPlan
from ragline.scanning.secrets import SecretDetector, _segments

from .helpers import FIXTURES

# pieces of lines: each hits some plugin, a filter, or neither
_SECRETISH = (
    'password = "hunter2xyzQ"',
    "db_pass = 'Zq9vX2mLp0rT'",
    'API_KEY: "k8s9d7f6g5h4j3k2"',
    '"s3cr3tValue1" == my_password',
    'private_key "abcDEF123456";',
    "Secret => 'Rk2n8QpL0z'",
    "PaSsWoRd='Aa1Bb2Cc3Dd4'",
    'PaSsWoRd = "hunter two!"',  # no other plugin reads this line: only the keyword one
    'API_KEY: "not base64!"',
    "contraseña = 'Xy7Zw8Vu9'",
    "password = get_secret('x')",
    'secret = request.headers["apikey"]',
    "AKIAPTGZ4JFEBZ9SDO78",
    "aws_secret_access_key = 'UJwnHBdHIyvNLVlRXFwF8JlMaLNy02K35uDNHfkf'",
    "ghp_DOrHIPESvjRmeA6mOOCrlwBVLuOJm5ug1dTo",
    "glpat-qqpHnXoA3qjud57uKhKz",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "xoxb-123456789012-abcdefABCDEF",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlX3ZhbHVl",
    '"dGhpcyBpcyBhIHZlcnkgbG9uZyBiYXNlNjQgc3RyaW5nIHdpdGggZW50cm9weQ=="',
    "'0123456789abcdef0123456789abcdef01234567'",
    "postgres://app:Zq9vX2mLp0rT@db:5432/x",
    "https://user:pa55word@example.com/path",
    "AccountKey=" + "a1B2" * 22,
    "npm_" + "a" * 36,
    "SG." + "a" * 22 + "." + "b" * 43,
    "# pragma: allowlist secret",
    "# pragma: allowlist nextline secret",
    "// pragma: allowlist nextline secret",
    "cloudant_password='abcdefghij1234'",
    "softlayer_api_key = 'a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2'",
    "ibm_cos_hmac_secret_access_key = 'a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6'",
)
_PROSE = (
    "Patients' outcomes were measured",
    "the key finding (p < 0.05)",
    "secret of longevity",
    "a password-free login",
    "IL-6 and TNF-α levels",
    "=",
    '"',
    "'",
    "`",
    ":",
    " ",
)
_HOSTILE = (
    "\x0b",
    "\x0c",
    "\r",
    "\x00",
    "\x85",
    "\u2028",
    "\u200b",
    "\ufeff",
    "ﬁ",
    "ｐａｓｓ",
    "\t",
)

_piece = st.one_of(
    st.sampled_from(_SECRETISH),
    st.sampled_from(_PROSE),
    st.sampled_from(_HOSTILE),
    st.text(max_size=12),
    st.text(alphabet="abcdefABCDEF0123456789+/=_-'\"", min_size=8, max_size=60),
)
_line = st.lists(_piece, max_size=6).map("".join)
_lines = st.lists(_line, min_size=1, max_size=24)


def _hits(lines: list[str], *, fast: bool) -> list[tuple[int, str, str]]:
    return list(_detect_secrets.scan_lines(lines, fast=fast))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=_lines)
@example(lines=["# pragma: allowlist nextline secret", 'password = "hunter2xyzQ"'])
@example(lines=["x"] * 7 + ["// pragma: allowlist nextline secret", "PaSsWoRd='Aa1Bb2Cc3Dd4'"])
@example(lines=['password = "hunter2xyzQ"  # pragma: allowlist secret'])
@example(lines=['PaSsWoRd = "hunter two!"'])  # the keyword plugin alone, any case
@example(lines=["paſsword = 'a b c!'"])  # long s: case-insensitively an "s"
def test_fast_line_scan_equals_the_full_scan(lines: list[str]) -> None:
    assert _hits(lines, fast=True) == _hits(lines, fast=False)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=_lines, filler=st.integers(min_value=0, max_value=300))
def test_fast_secret_detector_equals_the_full_one(lines: list[str], filler: int) -> None:
    # prose between the hits, and a line past MAX_LINE (cut at whitespace)
    text = "\n".join([*lines, "lorem ipsum " * filler, *lines])
    layout = Layout([text, "title", ""])
    assert SecretDetector().detect(layout) == SecretDetector(fast=False).detect(layout)


def _real_texts() -> list[str]:
    texts: list[str] = []
    planted = yaml.safe_load((FIXTURES / "planted.yaml").read_text())
    for doc in planted["documents"]:
        for b in doc.get("blocks", []):
            texts.append(str(b.get("text", "")))
    texts += [p.read_text() for p in sorted((FIXTURES / "prose").glob("*"))]
    texts += adversarial_inputs(6000).values()  # every pathological class, hostile bytes
    corpus = Path(os.environ.get("RAGLINE_SCIFACT_DIR", "/nonexistent")) / "corpus.jsonl"
    if corpus.is_file():
        with corpus.open() as fh:
            for _, line in zip(range(100), fh, strict=False):
                d = json.loads(line)
                texts.append(f"{d['title']}\n{d['text']}")
    return texts


def test_fast_path_on_real_text_finds_the_same(detectors: Detectors) -> None:
    texts = _real_texts()
    assert len(texts) > 20
    found = 0
    for t in texts:
        lines, _ = _segments(t)
        fast = _hits(lines, fast=True)
        assert fast == _hits(lines, fast=False)
        found += len(fast)
    assert found > 10  # the corpus does exercise the plugins


def test_whole_detection_is_unchanged(
    detectors: Detectors, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every pattern detector (secrets, PII) on the real texts, fast vs full."""
    texts = _real_texts()
    plan = DetectPlan(
        pii_patterns=("EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IP_ADDRESS"),
    )
    fast = [detectors.detect([t, "x"], plan).findings for t in texts]
    monkeypatch.setattr(detectors, "secrets", SecretDetector(fast=False))
    full = [detectors.detect([t, "x"], plan).findings for t in texts]
    assert fast == full


@given(data=st.binary(max_size=200))
def test_printable_count_is_the_per_byte_count(data: bytes) -> None:
    from ragline.scanning.secret_patterns import _PRINTABLE, printable_count

    assert printable_count(data) == sum(b in _PRINTABLE for b in data)
