"""The lexical guard of a semantic hit: words an embedding barely notices but that change
the question.

all-MiniLM-L6-v2 puts "what does error GW-5031 mean" and "... GW-5032 ..." at cosine
0.96, "enable 2FA" and "disable 2FA" at 0.88 (docs/cache.md). So a semantic hit also
needs the same *signature*: identifiers (tokens with a digit or internal ``_ . / : @ #``,
quoted phrases), polarity words (disable, remove, downgrade, min, before/after, ...),
the specific question word a query opens with (when, where, who, why) and negation.
The signature is hashed into the cache key; a paraphrase that changes any of them is a
miss, which only costs a search.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable

from ragline.hashing import sha256_hex

__all__ = ["guard_signature", "normalize_query", "signature_hash"]

_TOKEN_RE = re.compile(r"[\w][\w'’./:@#-]*[\w]|[\w]")
_QUOTED_RE = re.compile(r"[\"“”]([^\"“”]{1,200})[\"“”]")
_IDENT_PUNCT_RE = re.compile(r"[_./:@#]")

# Only the marked member of a contrast pair is listed where the other is an everyday word
# ("open a ticket" = "submit a ticket", but "close" vs "open" still differs on "close").
_POLARITY_WORDS = """
disable deactivate uninstall reinstall remove delete destroy downgrade increase decrease
raise lower reduce extend shorten stop close revoke grant deny block unblock lock unlock
cancel reject import export upload download encrypt decrypt unsubscribe exclude min
minimum before after first last old older newer previous next latest earliest free paid
internal external public private inbound outbound read write less fewer least
hourly daily weekly monthly quarterly annual annually yearly
""".split()  # noqa: SIM905 - a word list reads better as text
_WH_WORDS = frozenset({"when", "where", "who", "whom", "whose", "why"})
_NEGATIONS = frozenset({"not", "no", "never", "without", "cannot", "nor", "none", "nothing"})


def _stem(word: str) -> str:
    """A crude, consistent stem: enough to equate enable/enabled/enabling."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]
    return word


_POLARITY_STEMS = frozenset(_stem(w) for w in _POLARITY_WORDS)


def normalize_query(text: str) -> str:
    """NFKC, casefolded, whitespace collapsed, trailing ``?!.`` dropped: the exact-match
    form of a query (lexical mode hits on equality of this)."""
    t = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    t = " ".join(t.split())
    return t.rstrip("?!. ").strip()


def _is_identifier(token: str) -> bool:
    if any(ch.isdigit() for ch in token):
        return True
    return bool(_IDENT_PUNCT_RE.search(token.strip("./:@#")))


def guard_signature(text: str) -> dict[str, list[str]]:
    """The parts of a query that must match exactly for a semantic hit."""
    norm = normalize_query(text)
    tokens = _TOKEN_RE.findall(norm)
    idents = {t.strip(".-") for t in tokens if _is_identifier(t)}
    idents.update(" ".join(q.split()) for q in _QUOTED_RE.findall(norm))
    polarity = {_stem(t) for t in tokens if _stem(t) in _POLARITY_STEMS}
    # the question word that opens the query; "what happens when ..." is a "what" question
    wh = {tokens[0]} & _WH_WORDS if tokens else set()
    negated = any(t in _NEGATIONS or t.endswith("n't") for t in tokens)
    return {
        "ids": sorted(i for i in idents if i),
        "polarity": sorted(polarity),
        "wh": sorted(wh),
        "neg": ["1"] if negated else [],
    }


def signature_hash(queries: Iterable[str]) -> str:
    """One hash over the signatures of every query of a request, in order."""
    sigs = [guard_signature(q) for q in queries]
    return sha256_hex(json.dumps(sigs, sort_keys=True, separators=(",", ":")))[:32]
