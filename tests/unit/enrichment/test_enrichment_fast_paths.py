"""The enricher's cheaper paths read exactly what the straightforward code read (issue 35).

Three cuts, each compared here with a copy of the code it replaced:
- ``language._scripts`` counts an ASCII text's letters by deleting them (no regex match
  per word); the counter must be equal, keys in the same order (``most_common`` breaks
  ties by it);
- ``detect_language`` scores every candidate language in one pass over the words (a
  table word -> languages) instead of one pass per language;
- ``entities``: a pattern is not run on a text without a string each of its matches
  contains (``CVE-``, ``_ERROR``, ``0x``, ``Error``..., ``http``/``status`` folded as
  IGNORECASE folds them, ``®``/``™``).
Generated text mixes every such string with near misses (``ſtatus``, lower-case
``cve-``, ``E-``, Cyrillic and Greek words, CJK, digits, underscores); real text is the
sample sentences, the enrichment fixtures and SciFact abstracts when present.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_enrichment_language import SAMPLES  # this directory (rootdir importmode)

from ragline.enrichment import entities, language
from ragline.enrichment.stopwords import STOPWORDS

# ------------------------------------------------------------------ the replaced code


def _scripts_before(text: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for m in language._SCRIPT_RUNS.finditer(text):
        counts[m.lastgroup or "OTHER"] += m.end() - m.start()
    return counts


def _detect_before(text: str) -> str:
    scripts = _scripts_before(text)
    decided = language._by_script(scripts, text)
    if decided is not None:
        return decided
    words = [w.lower() for w in language._WORD.findall(text)]
    if len(words) < language._MIN_WORDS:
        return language.UNDETERMINED
    cyrillic = scripts.most_common(1)[0][0] == "CYRILLIC"
    candidates = ("ru", "uk") if cyrillic else tuple(k for k in STOPWORDS if k not in ("ru", "uk"))
    counts = Counter(w for w in words if len(w) > 1)
    hits = sorted(
        ((sum(n for w, n in counts.items() if w in STOPWORDS[lang]), lang) for lang in candidates),
        reverse=True,
    )
    (best, lang), (second, _) = hits[0], hits[1]
    if cyrillic and any(ch in language._UKRAINIAN for ch in text.lower()):
        return "uk"
    if (
        best < language._MIN_HITS
        or best / len(words) < language._MIN_RATIO
        or best < language._MARGIN * second
    ):
        return language.UNDETERMINED
    return lang


def _error_codes_before(text: str) -> list[str]:
    found: list[entities.Match] = []
    for pattern, _ in entities._ERROR_PATTERNS:
        for m in pattern.finditer(text):
            if m.group().replace("-", "").upper() not in entities._NOT_ERRORS:
                found.append((m.start(), m.end(), m.group()))
    found.extend((m.start(), m.end(), f"HTTP {m.group(1)}") for m in entities._HTTP.finditer(text))
    return list(entities._outermost(found))


def _products_before(text: str) -> list[str]:
    found: list[entities.Match] = []
    for m in entities._REGISTERED.finditer(text):
        words = entities._trim(m.group(1).split())
        if words:
            found.append((m.start(), m.end(), " ".join(words)))
    for m in entities._CAP_RUN.finditer(text):
        words = entities._trim(m.group().split())
        if len(words) >= 2 and not all(w.isupper() and len(w) <= 1 for w in words):
            found.append((m.start(), m.end(), " ".join(words)))
    for m in entities._CAMEL.finditer(text):
        if not m.group().endswith(("Error", "Exception")):
            found.append((m.start(), m.end(), m.group()))
    return list(entities._outermost(found))


# ------------------------------------------------------------------ the comparison


def _same(text: str) -> None:
    before, after = _scripts_before(text), language._scripts(text)
    assert after == before
    assert list(after) == list(before)  # insertion order: most_common's tie-break
    assert language.detect_language(text) == _detect_before(text)
    assert list(entities._error_codes(text)) == _error_codes_before(text)
    assert list(entities._products(text)) == _products_before(text)


_PIECES = (
    "CVE-2024-12345",
    "cve-2024-12345",
    "ORA-00942",
    "E1234",
    "E-1234",
    "ERR_CONNECTION_RESET",
    "ERROR_DISK_FULL",
    "E_FAIL",
    "DB_CONN_TIMEOUT",
    "AUTH_DENIED",
    "UPLOAD_FAILURE",
    "ECONNREFUSED",
    "econnrefused",
    "ValueError",
    "NullPointerException",
    "Error",
    "0x80070005",
    "0X80070005",
    "HTTP 503",
    "http/1.1: 404",
    "HTTP/2 500",
    "status code 418",
    "Status: 502",
    "ſtatus 404",
    "ſTATUS CODE 500",
    "Acme Cloud® Server",
    "WidgetPro™",
    "iPhone",
    "PostgreSQL",
    "the",
    "and",
    "der",
    "die",
    "le",
    "la",
    "el",
    "que",
    "и",
    "в",
    "не",
    "що",
    "і",
    "η",
    "και",
    "服务",
    "エラー",
    "오류",
    "the Service",
    "Admin Guide",
    "β-cells",
    "IL-6",
    "p53",
    "v4.2.1",
    "version 3.1",
    "1.2.3",
    "_",
    "__init__",
    "12.5",
    "2024-03-15",
    "a",
    "I",
)
_SEPARATORS = st.sampled_from((" ", " ", ", ", ". ", "\n", "\n\n", "-", "_", "/", ": ", "\t"))
_texts = st.lists(
    st.tuples(st.sampled_from(_PIECES) | st.text(max_size=8), _SEPARATORS), max_size=40
).map(lambda parts: "".join(p + s for p, s in parts))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_texts)
@example(text="ſtatus 404 while fetching")
@example(text="the the the and of to in ѐ")
@example(text="и в не на и в не на и в не")
@example(text="HTTP 503 CVE-2024-12345 ERR_CONNECTION_RESET ValueError 0x80070005")
def test_generated_text_reads_the_same(text: str) -> None:
    _same(text)


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=200))
def test_any_text_reads_the_same(text: str) -> None:
    _same(text)


def _real_texts() -> Iterable[str]:
    yield from SAMPLES.values()
    fixtures = Path(__file__).parents[2] / "fixtures" / "chunking"
    for path in sorted(fixtures.glob("*.json")):
        if not path.name.endswith(".golden.json"):  # parsed documents: their blocks' text
            blocks = json.loads(path.read_text(encoding="utf-8"))["document"]["blocks"]
            yield "\n\n".join(b["text"] for b in blocks)
    corpus = Path(os.environ.get("RAGLINE_SCIFACT_DIR", "/nonexistent")) / "corpus.jsonl"
    if corpus.is_file():
        with corpus.open(encoding="utf-8") as fh:
            for _, line in zip(range(300), fh, strict=False):
                d = json.loads(line)
                yield f"{d['title']}\n\n{d['text']}"


def test_real_text_reads_the_same() -> None:
    n = 0
    for text in _real_texts():
        for piece in (text, *re.split(r"\n\s*\n", text)):
            _same(piece)
            n += 1
    assert n > len(SAMPLES)


@pytest.mark.parametrize("text", ["ſtatus 404", "Status code 500 and ſTATUS 418"])
def test_ignorecase_folding_still_finds_http_codes(text: str) -> None:
    assert list(entities._error_codes(text))  # casefold, not lower: ſ folds to s
