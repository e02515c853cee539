"""Secret detection: own patterns, the detect-secrets wrapper, spans and placeholders."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.scanning import _detect_secrets
from ragline.scanning.layout import Layout
from ragline.scanning.secret_patterns import (
    column_secret_type,
    find_pattern_secrets,
    looks_like_placeholder,
    shannon_entropy,
)
from ragline.scanning.secrets import SecretDetector

CASES = [
    ("key AKIAPTGZ4JFEBZ9SDO78 here", "AKIAPTGZ4JFEBZ9SDO78", "aws_access_key"),
    ("aws_secret_access_key = UJwnHBdHIyvNLVlRXFwF8JlMaLNy02K35uDNHfkf",
     "UJwnHBdHIyvNLVlRXFwF8JlMaLNy02K35uDNHfkf", "aws_secret_key"),
    ("push with ghp_DOrHIPESvjRmeA6mOOCrlwBVLuOJm5ug1dTo now",
     "ghp_DOrHIPESvjRmeA6mOOCrlwBVLuOJm5ug1dTo", "github_token"),
    ("postgresql://app:c6NqfaDRtOP5DJ@db:5432/x", "c6NqfaDRtOP5DJ", "connection_password"),
    ("mongodb+srv://r:YdQecChUVOpo@c0.mongodb.net/db", "YdQecChUVOpo", "connection_password"),
    ("redis://:Rd5PassW0rd2024@cache:6379/0", "Rd5PassW0rd2024", "connection_password"),
    ("jdbc:sqlserver://h:1433;password=Bx7Lq2Zt9Wm4;", "Bx7Lq2Zt9Wm4", "connection_password"),
    ("jdbc:oracle:thin:hr/Or4cleHrPw77@//ora:1521/HR", "Or4cleHrPw77", "connection_password"),
    ("x?sv=1&sig=WW0J9d%2BNqdDRpGuDjywPzoaTQ6AsVC9sgW7%2FOq4E6Wg%3D",
     "WW0J9d%2BNqdDRpGuDjywPzoaTQ6AsVC9sgW7%2FOq4E6Wg%3D", "azure_sas_signature"),
    ("AccountKey=9F7nwqxYYDbztpzTE2yCnfStKnihNROl87QpWhb/fxNmJKxGnTs==;",
     "9F7nwqxYYDbztpzTE2yCnfStKnihNROl87QpWhb/fxNmJKxGnTs==", "azure_storage_key"),
    ("key AIzauwtP-RHavaNpo_9jF0LTDxagO7N44YsGURr", "AIzauwtP-RHavaNpo_9jF0LTDxagO7N44YsGURr",
     "gcp_api_key"),
    ("xoxb-076163925475-6834567143069-iX9rQ2d3kSODKEVz7ynZan7k",
     "xoxb-076163925475-6834567143069-iX9rQ2d3kSODKEVz7ynZan7k", "slack_token"),
    ("sk_live_ef9IDynYtyoWF29zgeh6NZ4x", "sk_live_ef9IDynYtyoWF29zgeh6NZ4x", "stripe_key"),
    ("glpat-qqpHnXoA3qjud57uKhKz", "glpat-qqpHnXoA3qjud57uKhKz", "gitlab_token"),
    ("Authorization: Bearer Jk4Rt7Yp2Wq9Zx5Cv8Lm3Nb6", "Jk4Rt7Yp2Wq9Zx5Cv8Lm3Nb6", "bearer_token"),
    ("DB_PASSWORD=Hq7!vR2#kP9z", "Hq7!vR2#kP9z", "password"),
    ("the admin password is Wint3r-Is-C0ming!", "Wint3r-Is-C0ming!", "password"),
    ("client_secret: Lk2Jd9Qw8Rt5Zx1Cv7Bn3Mm6", "Lk2Jd9Qw8Rt5Zx1Cv7Bn3Mm6", "api_key"),
    ("signing Tz8Kq2Wm5Rx9Lp3Vn7Bd1Hc6Fj4Gs0Ya8Ue2Oi in staging",
     "Tz8Kq2Wm5Rx9Lp3Vn7Bd1Hc6Fj4Gs0Ya8Ue2Oi", "high_entropy_token"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "value", "type_"), CASES, ids=[c[2] + str(i) for i, c in enumerate(CASES)]
)
def test_own_patterns_find_the_exact_span(text: str, value: str, type_: str) -> None:
    start = text.index(value)
    hits = [(s, e, t) for s, e, t in find_pattern_secrets(text) if t == type_]
    assert any(s <= start and e >= start + len(value) for s, e, _ in hits), hits


def test_private_key_blocks_whole_and_truncated_and_json_escaped() -> None:
    full = "a\n-----BEGIN RSA PRIVATE KEY-----\nAAAA\nBBBB\n-----END RSA PRIVATE KEY-----\nz"
    (s, e, _t), *_ = [h for h in find_pattern_secrets(full) if h[2] == "private_key"]
    assert full[s:e].startswith("-----BEGIN") and full[s:e].endswith("KEY-----")
    cut = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5f0\n\nafter"
    spans = [(s, e) for s, e, t in find_pattern_secrets(cut) if t == "private_key"]
    assert any("MHcCAQEEIBkg" in cut[s:e] and "after" not in cut[s:e] for s, e in spans)
    js = '{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQ\\n-----END PRIVATE KEY-----\\n"}'
    assert any("MIIEvQ" in js[s:e] for s, e, t in find_pattern_secrets(js) if t == "private_key")


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f9a2c1d7e5b8a4f6c0d2e1b9a8f7e6d5c4b3a21 fixed it",
        "request 550e8400-e29b-41d4-a716-446655440000 failed",
        "image sha256:4b825dc642cb6eb9a060e54bf8d69288fbee4904e0b6a1f2a6bdbd8b5f3e2a11",
        "password: ${DB_PASSWORD}",
        'password = os.environ["DB_PASSWORD"]',
        "token: <your-token>",
        "api_key = settings.api_key",
        "the password field is required",
        "password: ********",
        "postgres://USER:PASSWORD@HOST:5432/orders",
        "secret: [REDACTED:password]",
        "see /usr/local/lib/python3.11/site-packages/detect_secrets/plugins",
        "AbstractSingletonProxyFactoryBeanConfigurationHolder",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    d = SecretDetector()
    d.load()
    assert d.detect(Layout([text])) == []


def test_detect_secrets_prefix_values_are_widened_to_the_token() -> None:
    """The GitHub plugin reports only ``ghp``; the redaction must cover the whole token."""
    line = 'token = "ghp_DOrHIPESvjRmeA6mOOCrlwBVLuOJm5ug1dTo"'
    hits = list(_detect_secrets.scan_lines([line]))
    assert ("github_token", "ghp") in [(t, v) for _, t, v in hits]
    d = SecretDetector()
    spans = [(f.start, f.end) for f in d.detect(Layout([line])) if f.detector == "detect-secrets"]
    assert (9, 49) in spans


def test_public_ip_plugin_is_disabled() -> None:
    assert list(_detect_secrets.scan_lines(["server 8.8.8.8 answers"])) == []
    assert _detect_secrets.slug("Some New Plugin Key") == "some_new_plugin_key"


def test_findings_map_back_to_items() -> None:
    items = ["nothing here", "key AKIAPTGZ4JFEBZ9SDO78", "", "x"]
    fs = SecretDetector().detect(Layout(items))
    assert {(f.item, f.start, f.end) for f in fs if f.type == "aws_access_key"} == {(1, 4, 24)}


def test_column_secret_type() -> None:
    assert column_secret_type("Password", "Zr8Qp3Lm6Wn2") == "password"
    assert column_secret_type("DB password", "Zr8Qp3Lm6Wn2") == "password"
    assert column_secret_type("API key", "9f8e7d6c5b4a3928") == "api_key"
    assert column_secret_type("Token count", "1234567") is None
    assert column_secret_type("password", "required") is None
    assert column_secret_type("service", "Zr8Qp3Lm6Wn2") is None


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789abcdef", min_size=32, max_size=64))
def test_property_lowercase_hex_ids_are_never_high_entropy_tokens(h: str) -> None:
    """Git hashes, digests and trace ids: lowercase hex is never a bare secret."""
    assert not [t for *_, t in find_pattern_secrets(f"id {h} done") if t == "high_entropy_token"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits, min_size=40, max_size=60))
def test_property_random_mixed_tokens_are_caught_when_entropy_is_high(tok: str) -> None:
    expected = (
        shannon_entropy(tok) >= 4.2
        and any(c.isupper() for c in tok)
        and any(c.islower() for c in tok)
        and sum(c.isdigit() for c in tok) >= 2
    )
    found = any(t == "high_entropy_token" for *_, t in find_pattern_secrets(f"use {tok} now"))
    assert found == expected


def test_placeholder_heuristic() -> None:
    for v in ("${X}", "<token>", "changeme", "xxxxxxxx", "os.environ", "settings.db.password"):
        assert looks_like_placeholder(v), v
    for v in ("Hq7!vR2#kP9z", "hunter2secret", "correcthorsebatterystaple"):
        assert not looks_like_placeholder(v), v


def test_long_lines_are_cut_at_whitespace_with_exact_offsets() -> None:
    from ragline.scanning.secrets import MAX_LINE, _segments

    text = ("word " * 1000) + "\n" + ("x" * (MAX_LINE * 2 + 7)) + "\nshort"
    lines, offsets = _segments(text)
    assert all(len(ln) <= MAX_LINE for ln in lines)
    for ln, off in zip(lines, offsets, strict=True):
        assert text[off : off + len(ln)] == ln
    assert "".join(lines) == text.replace("\n", "")


def test_many_hits_on_one_long_line_stay_linear() -> None:
    """detect-secrets rescans the whole line per hit: a 50 KB one-line URL list took 14 s
    of CPU before lines were cut; it must stay far below that."""
    import time

    line = " ".join(
        f"http://u{i}:Pw{i}x9Zq@h{i}.example.com/x?token=abc{i}def" for i in range(1000)
    )
    d = SecretDetector()
    d.load()
    t0 = time.process_time()
    found = d.detect(Layout([line]))
    assert time.process_time() - t0 < 4.0
    assert sum(f.type == "connection_password" for f in found) >= 1000
