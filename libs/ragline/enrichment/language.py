"""A light, deterministic language detector: writing system first, then function words.

Returns an ISO 639-1 code or ``und`` when the evidence is thin (short text, tables of
numbers, code, two close candidates). Being unsure is cheap: the enricher falls back to
the document's language, and ``und`` never excludes a chunk from a search.
"""

from __future__ import annotations

import re
import string
from collections import Counter

from ragline.enrichment.stopwords import STOPWORDS

__all__ = ["UNDETERMINED", "detect_language"]

UNDETERMINED = "und"
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_MIN_WORDS = 6
_MIN_HITS = 2
_MIN_RATIO = 0.08
_MARGIN = 1.3

# script name (first word of the Unicode character name) -> language, where one dominates
_SCRIPT_LANG = {
    "HANGUL": "ko",
    "GREEK": "el",
    "HEBREW": "he",
    "DEVANAGARI": "hi",
    "THAI": "th",
    "ARMENIAN": "hy",
    "GEORGIAN": "ka",
}
_PERSIAN = set("پچژگ")
_UKRAINIAN = set("іїєґ")


_SCRIPT_RUNS = re.compile(
    "|".join(
        f"(?P<{name}>[{ranges}]+)"
        for name, ranges in (
            ("LATIN", "A-Za-z\u00c0-\u024f\u1e00-\u1eff"),
            ("CYRILLIC", "\u0400-\u052f"),
            ("GREEK", "\u0370-\u03ff\u1f00-\u1fff"),
            ("ARABIC", "\u0600-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufeff"),
            ("HEBREW", "\u0590-\u05ff"),
            ("DEVANAGARI", "\u0900-\u097f"),
            ("THAI", "\u0e00-\u0e7f"),
            ("ARMENIAN", "\u0530-\u058f"),
            ("GEORGIAN", "\u10a0-\u10ff"),
            ("HANGUL", "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"),
            ("KANA", "\u3040-\u30ff"),
            ("HAN", "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"),
        )
    )
)


# an ASCII text's only letters are Latin ones: deleting them counts them
_ASCII_LETTERS = str.maketrans("", "", string.ascii_letters)

# word -> the languages whose list holds it: one pass over a text's words scores them all
_LANGS_OF: dict[str, tuple[str, ...]] = {}
for _lang, _words in STOPWORDS.items():
    for _word in _words:
        _LANGS_OF[_word] = (*_LANGS_OF.get(_word, ()), _lang)


def _scripts(text: str) -> Counter[str]:
    """Letters per writing system (one regex pass over runs of letters)."""
    counts: Counter[str] = Counter()
    if text.isascii():  # the common case, without a match object per word
        latin = len(text) - len(text.translate(_ASCII_LETTERS))
        if latin:
            counts["LATIN"] = latin
        return counts
    for m in _SCRIPT_RUNS.finditer(text):
        counts[m.lastgroup or "OTHER"] += m.end() - m.start()
    return counts


def _by_script(scripts: Counter[str], text: str) -> str | None:
    """A language decided by its writing system, or None (Latin/Cyrillic: use words)."""
    total = sum(scripts.values())
    if total == 0:
        return UNDETERMINED
    top, count = scripts.most_common(1)[0]
    if count / total < 0.5:
        return None
    if top in ("HAN", "KANA"):
        return "ja" if scripts["KANA"] >= 0.1 * (scripts["HAN"] + scripts["KANA"]) else "zh"
    if top == "ARABIC":
        return "fa" if any(ch in _PERSIAN for ch in text) else "ar"
    return _SCRIPT_LANG.get(top)


def detect_language(text: str) -> str:
    scripts = _scripts(text)
    decided = _by_script(scripts, text)
    if decided is not None:
        return decided
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < _MIN_WORDS:
        return UNDETERMINED
    cyrillic = scripts.most_common(1)[0][0] == "CYRILLIC"
    candidates = ("ru", "uk") if cyrillic else tuple(k for k in STOPWORDS if k not in ("ru", "uk"))
    score = dict.fromkeys(candidates, 0)  # stopwords of each candidate among the words
    for w in words:
        langs = _LANGS_OF.get(w)
        if langs is not None and len(w) > 1:  # "a", "i", "v" are in too many lists
            for lang in langs:
                if lang in score:
                    score[lang] += 1
    hits = sorted(((n, lang) for lang, n in score.items()), reverse=True)
    (best, lang), (second, _) = hits[0], hits[1]
    if cyrillic and any(ch in _UKRAINIAN for ch in text.lower()):
        return "uk"
    if best < _MIN_HITS or best / len(words) < _MIN_RATIO or best < _MARGIN * second:
        return UNDETERMINED
    return lang
