"""PII detection: presidio's pattern recognizers called directly, NER only when asked.

``AnalyzerEngine.analyze`` builds NLP artifacts for every call and runs every
recognizer; here each wanted recognizer's ``analyze`` runs once over the document's
joined text. Presidio's context boost (a context word shortly before a weak match adds
0.35 to its score) is reproduced with a cheap word-window check, so it needs no
lemmas and no spaCy. Two validations are added where presidio is noisy on technical
text: phone numbers must look like phone numbers (no decimals such as ``0.89-1.26``,
three digit groups or a ``+``/``(``, unless a context word is near), and IP addresses
that are private/loopback/documentation ranges or version strings are not personal.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from typing import TYPE_CHECKING, Any

from ragline.scanning.entities import PATTERN_RECOGNIZERS
from ragline.scanning.layout import Layout
from ragline.scanning.model import DetectPlan, Finding, FindingKind
from ragline.scanning.ner import NER_SCORE, NerEngine
from ragline.scanning.person import plausible_person
from ragline.scanning.secret_patterns import check_deadline

if TYPE_CHECKING:
    from presidio_analyzer import EntityRecognizer

__all__ = ["CONTEXT_BOOST", "PiiDetector", "offline_tldextract", "phone_pieces", "phone_windows"]

CONTEXT_BOOST = 0.35
MIN_SCORE_WITH_CONTEXT = 0.4
_CTX_BEFORE = 60
_CTX_AFTER = 20
_WORD = re.compile(r"[a-z]+")
_DECIMAL = re.compile(r"\d\.\d{1,2}(?!\d)")
_DATE = re.compile(r"(?:19|20)\d\d[-/.](?:0[1-9]|1[0-2])[-/.](?:0[1-9]|[12]\d|3[01])(?!\d)")
_SSN_SHAPE = re.compile(r"^\d{3}-\d{2}-\d{4}$")  # no phone plan uses 3-2-4
# an SSN-shaped value (presidio's "SSN5" shape, one delimiter throughout)
_SSN_ANY = re.compile(r"(?<![\w.-])\d{3}([- .])\d{2}\1\d{4}(?![\w-])")
_SSN_LABELLED_SCORE = 0.5  # presidio's SSN5 score; the context word adds the boost
# the published example numbers (SSA, presidio): documentation, not a person's
_SSN_SAMPLES = frozenset({"078051120", "123456789", "987654320"})
_AFTER_VERSION = re.compile(r"\d\.\d+\.$|\bv\d+(?:\.\d+)*\.?$")
_DIGIT_GROUPS = re.compile(r"\d+")
_VERSIONISH = re.compile(r"(?:\bv|version|release|ver\.?)\s*$", re.IGNORECASE)


def offline_tldextract() -> None:
    """Presidio's email validation calls tldextract, which fetches a suffix list at first
    use; point it at the bundled snapshot instead (see STACK.md). Idempotent."""
    import tldextract
    import tldextract.tldextract as tx

    if getattr(tx.TLD_EXTRACTOR, "_ragline_offline", False):
        return
    extractor = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
    extractor._ragline_offline = True  # type: ignore[attr-defined]
    tx.TLD_EXTRACTOR = extractor


# seven digits or more, at most four separator characters between neighbours: anything
# shorter is rejected by ``_phone_ok`` anyway
_PHONE_CANDIDATE = re.compile(r"\d(?:[ \t().\-/\[\]]{0,4}\d){6,}")
_PHONE_MARGIN = 12
_EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.){1,8}"
    r"[A-Za-z]{2,24}(?![\w-])"
)


def phone_windows(text: str) -> list[tuple[int, int]]:
    """Merged ``[start, end)`` windows (with margin) around possible phone numbers."""
    windows: list[tuple[int, int]] = []
    for m in _PHONE_CANDIDATE.finditer(text):
        s = max(0, m.start() - _PHONE_MARGIN)
        e = min(len(text), m.end() + _PHONE_MARGIN)
        if windows and s <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(windows[-1][1], e))
        else:
            windows.append((s, e))
    return windows


# a window longer than this (a wide table's row of numbers: tens of KB of digits and
# spaces) is read in pieces that overlap by more than any phone number is long, so the
# deadline is checked every piece and a scan past it stops within about a piece's time
# (phonenumbers takes ~0.1 ms per character of such a run: a 40 KB run was ~15 s)
_PHONE_PIECE = 2048
_PHONE_OVERLAP = 128


def phone_pieces(start: int, end: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut into pieces of at most ``_PHONE_PIECE`` characters, each
    overlapping the next by ``_PHONE_OVERLAP``: a number shorter than the overlap lies
    whole in some piece (so it is never only partly found)."""
    if end - start <= _PHONE_PIECE:
        return [(start, end)]
    step = _PHONE_PIECE - _PHONE_OVERLAP
    pieces: list[tuple[int, int]] = []
    s = start
    while True:
        e = min(end, s + _PHONE_PIECE)
        pieces.append((s, e))
        if e == end:
            return pieces
        s += step


def _context_near(text: str, start: int, end: int, words: frozenset[str]) -> bool:
    window = text[max(0, start - _CTX_BEFORE) : start] + " " + text[end : end + _CTX_AFTER]
    return any(w in words for w in _WORD.findall(window.lower()))


def _phone_ok(text: str, start: int, value: str, has_context: bool) -> bool:
    if _DECIMAL.search(value) or _DATE.search(value) or _SSN_SHAPE.match(value):
        return False
    if _AFTER_VERSION.search(text[max(0, start - 8) : start]):
        return False  # the tail of ``3.14.0] - 2025-10-02``
    groups = _DIGIT_GROUPS.findall(value)
    if sum(len(g) for g in groups) < 7:
        return False
    return has_context or len(groups) >= 3 or value.lstrip().startswith(("+", "("))


def _ip_ok(text: str, start: int, value: str) -> bool:
    try:
        addr = ipaddress.ip_address(value.strip())
    except ValueError:
        return False
    if not addr.is_global:
        return False
    return not _VERSIONISH.search(text[max(0, start - 12) : start])


def _is_url_userinfo(text: str, start: int, value: str) -> bool:
    """``user:pw@host`` inside ``scheme://user:pw@host`` is a URL authority, not an email
    (its password is the secret detector's business; the host stays readable)."""
    at = start + value.find("@")
    head = text[max(0, at - 300) : at]
    sep = head.rfind("://")
    if sep < 0:
        return False
    between = head[sep + 3 :]
    return not any(c in between for c in "/ \t\n")


class PiiDetector:
    def __init__(self, *, ner_model: str, ner_batch_size: int = 32) -> None:
        self._recognizers: dict[str, EntityRecognizer] = {}
        self._context: dict[str, frozenset[str]] = {}
        self.ner = NerEngine(model=ner_model, batch_size=ner_batch_size)

    def load(self, *, with_ner: bool) -> None:
        """Instantiate every catalogued recognizer (fast) and, if asked, the spaCy model."""
        if not self._recognizers:
            offline_tldextract()
            # presidio logs per-pattern debug lines; keep them out of service logs
            logging.getLogger("presidio-analyzer").setLevel(logging.WARNING)
            import presidio_analyzer.predefined_recognizers as predefined

            for entity, cls_name in PATTERN_RECOGNIZERS.items():
                cls: Any = getattr(predefined, cls_name)
                rec = cls(supported_language="en")
                self._recognizers[entity] = rec
                self._context[entity] = frozenset(
                    w for c in (rec.context or []) for w in _WORD.findall(c.lower())
                )
        if with_ner:
            self.ner.load()

    def detect(
        self, layout: Layout, plan: DetectPlan, *, deadline: float | None = None
    ) -> list[Finding]:
        """Raises ``ScanDeadline`` once ``deadline`` (``time.monotonic()``) has passed."""
        if not self._recognizers:
            self.load(with_ner=False)
        text = layout.text
        spans: list[tuple[int, int, str, float, str]] = []
        has_digit = any(map(str.isdigit, text))
        for entity in plan.pii_patterns:
            if entity == "EMAIL_ADDRESS":
                if "@" not in text:
                    continue
            elif not has_digit:
                continue
            check_deadline(deadline)
            spans.extend(self._patterns(text, entity, plan.min_score, deadline))
        if plan.ner_entities:
            segs = list(layout.segments(20_000))
            per_seg = []
            for _, seg in segs:
                check_deadline(deadline)
                per_seg.extend(self.ner.entities([seg], plan.ner_entities))
            for (offset, seg), ents in zip(segs, per_seg, strict=True):
                for s, e, ent in ents:
                    if ent == "PERSON" and not plausible_person(seg[s:e]):
                        continue  # a number, a table label or a job title (person.py)
                    if plan.min_score <= NER_SCORE:
                        spans.append((offset + s, offset + e, ent, NER_SCORE, "spacy"))
        out: list[Finding] = []
        for s, e, ent, score, det in spans:
            for item, lo, hi in layout.locate(s, e):
                out.append(
                    Finding(
                        item=item, start=lo, end=hi, kind=FindingKind.PII, type=ent,
                        score=score, detector=det,
                    )
                )  # fmt: skip
        return out

    def _raw(self, text: str, entity: str, deadline: float | None) -> list[tuple[int, int, float]]:
        rec = self._recognizers[entity]
        if entity == "EMAIL_ADDRESS":
            # presidio's local part takes ``/`` and ``:``, so an address in a URL path
            # (``https://h/u/bob@example.com``) fails its validation: add a strict match
            hits = [(r.start, r.end, float(r.score)) for r in rec.analyze(text, [entity], None)]  # type: ignore[arg-type]
            seen = {(s, e) for s, e, _ in hits}
            own = (m.span() for m in _EMAIL.finditer(text))
            return hits + [(s, e, 1.0) for s, e in own if (s, e) not in seen]
        if entity == "US_SSN":
            return self._ssn(text, rec)
        if entity != "PHONE_NUMBER":
            found = rec.analyze(text, [entity], None)  # type: ignore[arg-type]
            return [(r.start, r.end, float(r.score)) for r in found]
        # phonenumbers runs one matcher per region over the whole text (most of presidio's
        # cost on prose); run it only on windows around digit runs that could be a phone
        phones: set[tuple[int, int, float]] = set()  # overlapping pieces find one twice
        for window in phone_windows(text):
            for ws, we in phone_pieces(*window):
                check_deadline(deadline)
                for r in rec.analyze(text[ws:we], [entity], None):  # type: ignore[arg-type]
                    phones.add((ws + r.start, ws + r.end, float(r.score)))
        return sorted(phones)

    def _ssn(self, text: str, rec: EntityRecognizer) -> list[tuple[int, int, float]]:
        """Presidio's SSNs, plus every SSN-shaped value right after an SSN context word
        (``SSN: 412-34-0000``). Presidio drops values the SSA never issues (serial 0000,
        group 00, area 000/666/9xx, one repeated digit, published samples): right for
        finding SSNs in free text, wrong for a value a person labelled as one, which is
        sensitive (or a typo of one) whatever its validity; only the published example
        numbers stay text. The canary draws such a value about once in 10,000 (a serial
        of 0000): the one SSN a scan left in place (issue 31)."""
        hits = [(r.start, r.end, float(r.score)) for r in rec.analyze(text, ["US_SSN"], None)]  # type: ignore[arg-type]
        seen = {(s, e) for s, e, _ in hits}
        words = self._context["US_SSN"]
        for m in _SSN_ANY.finditer(text):
            sample = re.sub(r"\D", "", m.group(0)) in _SSN_SAMPLES
            if m.span() not in seen and not sample and _context_near(text, *m.span(), words):
                hits.append((m.start(), m.end(), _SSN_LABELLED_SCORE))
        return hits

    def _patterns(
        self, text: str, entity: str, min_score: float, deadline: float | None = None
    ) -> list[tuple[int, int, str, float, str]]:
        words = self._context[entity]
        out: list[tuple[int, int, str, float, str]] = []
        for start, end, raw_score in self._raw(text, entity, deadline):
            score = raw_score
            ctx = bool(words) and _context_near(text, start, end, words)
            if ctx and score < 1.0:  # presidio's enhancer: +0.35, and at least 0.4
                score = min(1.0, max(score + CONTEXT_BOOST, MIN_SCORE_WITH_CONTEXT))
            if score < min_score:
                continue
            value = text[start:end]
            if entity == "PHONE_NUMBER" and not _phone_ok(text, start, value, ctx):
                continue
            if entity == "IP_ADDRESS" and not _ip_ok(text, start, value):
                continue
            if entity == "EMAIL_ADDRESS" and _is_url_userinfo(text, start, value):
                continue
            out.append((start, end, entity, score, "presidio"))
        return out
