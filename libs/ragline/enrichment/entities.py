"""Entities that make exact-match retrieval work: product names, error codes, versions
and dates, pulled from chunk text with precise patterns (precision over recall).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ragline.enrichment.dates import find_dates

__all__ = ["ENTITY_TYPES", "extract_entities"]

ENTITY_TYPES = ("product", "error_code", "version", "date")


def _w(words: str) -> frozenset[str]:
    return frozenset(words.split())


# --------------------------------------------------------------------------- error codes
# each with the strings one of which every match contains (() = no such string): a text
# without any of them is not searched (most prose has no ``_``, ``0x`` or ``Error``)
_ERROR_PATTERNS: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(r"\bCVE-\d{4}-\d{4,7}\b"), ("CVE-",)),
    (re.compile(r"\b[A-Z]{1,4}-?\d{3,6}\b"), ()),  # E1234, ORA-00942, KB-4021
    # ERR_CONNECTION_RESET
    (re.compile(r"\b(?:ERR|ERROR|E)_[A-Z0-9]+(?:_[A-Z0-9]+)*\b"), ("E_", "R_")),
    (
        re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:ERROR|FAILED|FAILURE|DENIED|TIMEOUT)\b"),
        ("_ERROR", "_FAILED", "_FAILURE", "_DENIED", "_TIMEOUT"),
    ),
    (
        re.compile(
            r"\bE(?:CONNREFUSED|CONNRESET|CONNABORTED|TIMEDOUT|NOENT|ACCES|PERM|ADDRINUSE|PIPE"
            r"|AGAIN|NOMEM|NOSPC|HOSTUNREACH|NETUNREACH|EXIST|INVAL|BADF)\b"
        ),
        ("E",),
    ),
    # ValueError, NullPointerException
    (re.compile(r"\b[A-Z][A-Za-z]+(?:Error|Exception)\b"), ("Error", "Exception")),
    (re.compile(r"\b0x[0-9A-Fa-f]{8}\b"), ("0x",)),  # HRESULT
]
_HTTP = re.compile(r"\b(?:HTTP(?:/\d(?:\.\d)?)?|status(?:\s+code)?)\s*:?\s*([1-5]\d\d)\b", re.I)
_NOT_ERRORS = _w(
    "SHA256 SHA384 SHA512 SHA224 UTF8 UTF16 AES128 AES256 X509 ISO8601 RFC3339 H264 H265 "
    "MP3 MP4 IPV4 IPV6 COVID19 A4"
)

# --------------------------------------------------------------------------- versions
_V_PREFIXED = re.compile(r"(?<![\w.])v(\d+(?:\.\d+){0,3}(?:-[0-9A-Za-z.]+)?)\b")
_V_WORD = re.compile(r"\b(?:version|release|ver\.?)\s+(\d+(?:\.\d+){0,3}[a-z]?)\b", re.I)
_SEMVER = re.compile(r"(?<![\w.])(\d+\.\d+\.\d+(?:\.\d+)?(?:-[0-9A-Za-z.]+)?)(?![\w.]*\d)")
_NUMBERING = re.compile(r"(?:table|figure|fig\.|section|chapter|§|step|page)\s*$", re.I)

# --------------------------------------------------------------------------- products
_REGISTERED = re.compile(r"\b([A-Z][\w.+-]*(?:\s+[A-Z][\w.+-]*){0,3})\s?[®™]")
_CAMEL = re.compile(r"(?<![\w.])(?=\w{4,30}\b)(?:[A-Z][a-z]+[A-Z][A-Za-z]*|i[A-Z][a-z]+)\b")
_CAP_WORD = r"[A-Z][A-Za-z0-9+]{0,29}(?:[.-][A-Za-z0-9]+)*"
_CAP_RUN = re.compile(rf"\b{_CAP_WORD}(?:[ \t]+{_CAP_WORD}){{1,4}}\b")  # one line
_LEADING_NOISE = _w(
    """the a an this that these those in on at for with if when while our we you your it
    its their there here to of by from as and or but not no all any each every some see
    note use using after before during since until then also however table figure step
    section chapter page appendix open click select choose run go check add set enable
    disable install configure start stop restart create delete remove update upgrade
    download verify ensure make read contact call ask try get press type enter navigate
    sign log please thanks dear hi hello yes"""
)
_CALENDAR = _w(
    """january february march april may june july august september october november
    december monday tuesday wednesday thursday friday saturday sunday"""
)


def _is_ip(value: str) -> bool:
    parts = value.split(".")
    return len(parts) == 4 and all(p.isdigit() and int(p) <= 255 for p in parts)


Match = tuple[int, int, str]  # start, end, normalized value


def _outermost(matches: Iterable[Match]) -> Iterable[str]:
    """Values of matches not inside a longer one (``CVE-2024`` inside ``CVE-2024-1234``),
    in text order."""
    kept: list[Match] = []
    for m in sorted(matches, key=lambda m: (m[0], m[0] - m[1])):
        if not any(s <= m[0] and m[1] <= e for s, e, _ in kept):
            kept.append(m)
    return (v for _, _, v in kept)


def _may_match(text: str, needles: tuple[str, ...]) -> bool:
    return not needles or any(n in text for n in needles)


def _error_codes(text: str) -> Iterable[str]:
    found: list[Match] = []
    for pattern, needles in _ERROR_PATTERNS:
        if not _may_match(text, needles):
            continue
        for m in pattern.finditer(text):
            if m.group().replace("-", "").upper() not in _NOT_ERRORS:
                found.append((m.start(), m.end(), m.group()))
    folded = text.casefold()  # what IGNORECASE compares (``ſtatus`` is a ``status``)
    if "http" in folded or "status" in folded:
        found.extend((m.start(), m.end(), f"HTTP {m.group(1)}") for m in _HTTP.finditer(text))
    return _outermost(found)


def _versions(text: str) -> Iterable[str]:
    found: list[Match] = [
        (m.start(), m.end(), "v" + m.group(1)) for m in _V_PREFIXED.finditer(text)
    ]
    found.extend((m.start(1), m.end(1), m.group(1)) for m in _V_WORD.finditer(text))
    for m in _SEMVER.finditer(text):
        value = m.group(1)
        head = value.split(".")[0]
        numbering = _NUMBERING.search(text, max(0, m.start() - 12), m.start())
        if _is_ip(value) or (len(head) == 4 and head.startswith(("19", "20"))) or numbering:
            continue
        found.append((m.start(1), m.end(1), value))
    return _outermost(found)


def _trim(words: list[str]) -> list[str]:
    while words and (words[0].lower() in _LEADING_NOISE or words[0].lower() in _CALENDAR):
        words = words[1:]
    while words and words[-1].lower() in _LEADING_NOISE | _CALENDAR:
        words = words[:-1]
    return words


def _products(text: str) -> Iterable[str]:
    found: list[Match] = []
    for m in _REGISTERED.finditer(text) if "®" in text or "™" in text else ():
        words = _trim(m.group(1).split())
        if words:
            found.append((m.start(), m.end(), " ".join(words)))
    for m in _CAP_RUN.finditer(text):
        words = _trim(m.group().split())
        if len(words) >= 2 and not all(w.isupper() and len(w) <= 1 for w in words):
            found.append((m.start(), m.end(), " ".join(words)))
    for m in _CAMEL.finditer(text):
        if not m.group().endswith(("Error", "Exception")):
            found.append((m.start(), m.end(), m.group()))
    return _outermost(found)


def extract_entities(
    text: str, *, context: str = "", max_per_type: int = 20, products: bool = True
) -> dict[str, tuple[str, ...]]:
    """Entity type -> distinct values in order of appearance (capped); empty types omitted.

    ``context`` (the section headings) is read for codes, versions and dates but not for
    products: Title Case Headings Would All Look Like Product Names.
    """
    full = f"{context}\n{text}" if context else text
    found = {
        "product": _products(text) if products else (),
        "error_code": _error_codes(full),
        "version": _versions(full),
        "date": find_dates(full),
    }
    out: dict[str, tuple[str, ...]] = {}
    for kind, values in found.items():
        distinct = tuple(dict.fromkeys(values))[:max_per_type]
        if distinct:
            out[kind] = distinct
    return out
