"""Answerability: one calibrated probability that the caller's visible corpus answers the
query, from the signals the search already computed (docs/evaluation.md "Answerability").

Inputs over the first ``WINDOW`` fused results, each with a fixed direction (``SIGNS``:
+1 more of it can only make an answer more likely, -1 less; the fit keeps every weight
on its side, so the probability is monotone in the evidence):

- ``sim_max`` (+): the best dense cosine similarity;
- ``sim_gap`` (+): best minus second-best cosine (one clear match vs a flat field);
- ``lex_peak`` (+): the best BM25 score over the window's mean BM25 score (a per-query
  normalisation: raw BM25 is not comparable across queries or corpora);
- ``agree`` (+): the share of the window both legs rank in their top ``WINDOW``;
- ``top_agree`` (+): 1 when the first result is in both legs' top 3;
- ``top_coverage`` (+): the IDF share of the query's words the best lexical hit holds
  (the lexical index's statistics of the caller's scope, ``term_evidence.TermStats``);
- ``missing_share`` (-): the IDF share of the query's words in no chunk the caller sees;
- ``missing_terms`` (-): how many of the query's words occur nowhere (capped at 3, / 3):
  one absent word (a year, a name) is already a different question;
- ``missing_number`` (-): 1 when a word of the query with a digit (a year, a quantity;
  not a version mention, which the version intent weighs) occurs in no chunk the caller
  sees: a question about a date the corpus lacks;
- ``ident_missing`` (-): the share of the query's words that are identifiers occurring
  in no document the caller sees (``abstain.IdentifierStats``);
- ``ident_hit`` (+): a specific identifier of the query occurs verbatim in a result.

``p = sigmoid(bias + sum(w_i * (x_i - mean_i) / scale_i))``. The coefficients are fitted
by ``bench/fit_answerability.py`` (logistic regression, L2, sign-constrained) on the fit
half of the answerability benchmark (evaluation/answerability.py) and stored, versioned,
in ``answerability_model.json`` beside this module, loaded once per process. Inputs a
fit leaves out have weight 0 (the shipped model: the three IDF shares of the query's
words, which depend on the corpus size). ``abstain.assess`` joins it with the rules:
a hybrid search the rules answer abstains when ``p`` is below ``threshold`` (a request
may move it within ``THRESHOLD_BOUNDS``). Statistics that could not be read (a lookup
failed) give the neutral value of their feature (the fit's mean): a failed lookup moves
nothing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

from ragline.errors import ConfigError
from ragline.retrieval.lexical import QUESTION_STOP_WORDS

__all__ = [
    "FEATURES",
    "MODEL_FILE",
    "SIGNS",
    "THRESHOLD_BOUNDS",
    "WINDOW",
    "AnswerabilityModel",
    "Signals",
    "TermEvidence",
    "default_model",
    "features",
    "load_model",
]

WINDOW = 10
SIGNS: dict[str, int] = {
    "sim_max": 1,
    "sim_gap": 1,
    "lex_peak": 1,
    "agree": 1,
    "top_agree": 1,
    "top_coverage": 1,
    "missing_share": -1,
    "missing_terms": -1,
    "missing_number": -1,
    "ident_missing": -1,
    "ident_hit": 1,
    "sent_max": 1,
    "cover_top": 1,
    "cover_top3": 1,
    "cover_long": 1,
    "cover_numbers": 1,
    "sim_lead": 1,
}
FEATURES: tuple[str, ...] = tuple(SIGNS)
THRESHOLD_BOUNDS = (0.01, 0.99)  # a request's own threshold must lie within
MODEL_FILE = Path(__file__).with_name("answerability_model.json")
_MISSING_CAP = 3


class Signals(Protocol):
    """What one fused result carries (abstain.Evidence)."""

    @property
    def text(self) -> str: ...
    @property
    def similarity(self) -> float | None: ...
    @property
    def bm25_score(self) -> float | None: ...
    @property
    def dense_rank(self) -> int | None: ...
    @property
    def bm25_rank(self) -> int | None: ...


class TermEvidence(Protocol):
    """The query's words in the caller's corpus (term_evidence.TermStats)."""

    @property
    def df(self) -> Mapping[str, int]: ...
    @property
    def missing_share(self) -> float | None: ...
    @property
    def top_coverage(self) -> float | None: ...


# a version mention (v1.0, 4.2.1): the version intent weighs those against the caller's
# release labels (version_scope.unresolved); a number here is a year, a count, an id part
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+$")


def _number(term: str) -> bool:
    return any(c.isdigit() for c in term) and not _VERSION.match(term)


def _finite(v: float | None) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


def features(
    results: Sequence[Signals],
    *,
    terms: TermEvidence | None,
    ident_missing: float | None,
    ident_hit: bool,
    has_number: bool = True,
    query: str = "",
    sentence_sims: Sequence[float] | None = None,
) -> dict[str, float | None] | None:
    """The model's inputs (None for a statistic that could not be read), or None when no
    result has a dense similarity (a lexical-only search: the model does not apply).
    ``has_number``: the query has a digit at all (without one, ``missing_number`` is 0
    with no statistics needed: the service reads them only when they can count).
    ``query``: the question (its words against the passages); ``sentence_sims``: the
    question's cosine with each sentence of the first results (``passage_features``)."""
    window = list(results[:WINDOW])
    sims = sorted((s for r in window if (s := _finite(r.similarity)) is not None), reverse=True)
    if not sims:
        return None
    bm25 = [s for r in window if (s := _finite(r.bm25_score)) is not None and s > 0]
    both = [
        r
        for r in window
        if r.dense_rank is not None
        and r.bm25_rank is not None
        and r.dense_rank <= WINDOW
        and r.bm25_rank <= WINDOW
    ]
    first = window[0]
    missing_terms = (
        min(_MISSING_CAP, sum(1 for d in terms.df.values() if d <= 0)) / _MISSING_CAP
        if terms is not None and terms.df
        else None
    )
    numbers = [d for t, d in terms.df.items() if _number(t)] if terms else []
    return {
        "sim_max": sims[0],
        "sim_gap": sims[0] - sims[1] if len(sims) > 1 else 0.0,
        "lex_peak": max(bm25) / (sum(bm25) / len(bm25)) if bm25 else 0.0,
        "agree": len(both) / WINDOW,
        "top_agree": float(
            first.dense_rank is not None
            and first.bm25_rank is not None
            and first.dense_rank <= 3
            and first.bm25_rank <= 3
        ),
        "top_coverage": terms.top_coverage if terms is not None else None,
        "missing_share": terms.missing_share if terms is not None else None,
        "missing_terms": missing_terms,
        "missing_number": (
            float(any(d <= 0 for d in numbers))
            if terms is not None
            else (None if has_number else 0.0)
        ),
        "ident_missing": ident_missing,
        "ident_hit": float(ident_hit),
        **passage_features(
            query,
            [r.text for r in window],
            [r.similarity for r in window],
            sentence_sims=sentence_sims,
        ),
    }


# ---------------------------------------------------------------- passage-level evidence

# sentence ends: a period/question/exclamation mark before a capital, a digit or a
# bracket, or a line break (a markdown heading over the abstract)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])|\n+")
_HEADING = re.compile(r"^#+\s*")
SENTENCE_PASSAGES = 3  # the first fused results split into sentences
MAX_SENTENCES = 8  # per passage (the first ones: an abstract states its finding early)
_MIN_SENTENCE_WORDS = 4
_WORD = re.compile(r"[a-z0-9]+(?:[.-][a-z0-9]+)*")
_STEM = 6  # words compare by their first letters: "inflammatory" is "inflammation"
_SUFFIXES = ("ing", "ed", "es", "s")
_QUANTITY = re.compile(r"^\d[\d.,]*[a-z]*$")  # 2010, 5.2, 100mg (not IL-6: an identifier)
# the words a question is made of rather than about: the lexical leg's question stop list
_FUNCTION_WORDS = frozenset(QUESTION_STOP_WORDS)


def sentences(text: str) -> list[str]:
    """A passage's first ``MAX_SENTENCES`` sentences of at least ``_MIN_SENTENCE_WORDS``
    words: a shorter piece ("et al." and "Fig." end none) joins the sentence before it,
    or the next one at the start."""
    out: list[str] = []
    carry = ""
    for raw in _SENTENCE_END.split(text):
        piece = _HEADING.sub("", raw.strip())
        if not piece:
            continue
        if len(piece.split()) < _MIN_SENTENCE_WORDS:
            if out:
                out[-1] = f"{out[-1]} {piece}"
            else:
                carry = f"{carry} {piece}".strip()
            continue
        if len(out) == MAX_SENTENCES:
            break
        out.append(f"{carry} {piece}".strip())
        carry = ""
    return out or ([carry] if carry else [])


def _stem(word: str) -> str:
    """A crude stem: an inflection off ("raised", "raises" are "rais"), then the first
    ``_STEM`` letters ("inflammatory" is "inflammation")."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word.rstrip("e")[:_STEM] if len(word) > 3 else word


def content_words(text: str) -> list[str]:
    """The text's words without function words, stemmed (``_stem``)."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in _FUNCTION_WORDS]


def passage_features(
    query: str,
    texts: Sequence[str],
    similarities: Sequence[float | None],
    *,
    sentence_sims: Sequence[float] | None,
) -> dict[str, float | None]:
    """Passage-level inputs: how well the best passages themselves match the question.

    - ``sent_max``: the best cosine of the question with one sentence of the first
      ``SENTENCE_PASSAGES`` results (``sentence_sims``; None when not computed);
    - ``cover_top`` / ``cover_top3``: the share of the query's content words that occur
      in the first result / in one of the first three (no corpus statistics: the share
      does not move with the corpus size);
    - ``cover_long``: the same for the query's two longest content words (the most
      specific ones, without corpus statistics);
    - ``cover_numbers``: the share of the query's numbers and quantities (2010, 5mg)
      found in the first three (1 without any);
    - ``sim_lead``: the best cosine over the mean of the next four (a clear winner).
    """
    q = list(dict.fromkeys(content_words(query)))
    top = [set(content_words(t)) for t in texts[:SENTENCE_PASSAGES]]
    union = set().union(*top) if top else set()

    def share(words: Sequence[str], pool: set[str]) -> float | None:
        return sum(1 for w in words if w in pool) / len(words) if words else None

    longest = sorted(q, key=lambda w: (-len(w), q.index(w)))[:2]
    nums = [w for w in q if _QUANTITY.match(w)]
    sims = sorted((s for v in similarities[:5] if (s := _finite(v)) is not None), reverse=True)
    return {
        "sent_max": max(sentence_sims) if sentence_sims else None,
        "cover_top": share(q, top[0]) if top else None,
        "cover_top3": share(q, union) if top else None,
        "cover_long": share(longest, union) if top else None,
        "cover_numbers": (share(nums, union) if nums else 1.0) if top else None,
        "sim_lead": sims[0] - sum(sims[1:]) / len(sims[1:]) if len(sims) > 1 else None,
    }


@dataclass(frozen=True, kw_only=True)
class AnswerabilityModel:
    """A fitted logistic model over standardised ``FEATURES``."""

    version: str
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float

    def __post_init__(self) -> None:
        n = len(FEATURES)
        if not (len(self.mean) == len(self.scale) == len(self.weights) == n):
            raise ConfigError(f"an answerability model needs {n} means, scales and weights")
        if any(s <= 0 for s in self.scale):
            raise ConfigError("answerability model: feature scales must be positive")
        for f, w in zip(FEATURES, self.weights, strict=True):
            if w * SIGNS[f] < 0:
                raise ConfigError(f"answerability model: the weight of {f} has the wrong sign")
        lo, hi = THRESHOLD_BOUNDS
        if not lo <= self.threshold <= hi:
            raise ConfigError(f"answerability model: threshold outside {THRESHOLD_BOUNDS}")

    @property
    def reads_terms(self) -> bool:
        """Whether a word-share input (not only ``missing_number``) has a weight: then the
        term statistics are needed on every search, not only for a query with a number."""
        shares = ("top_coverage", "missing_share", "missing_terms")
        return any(w != 0 for f, w in zip(FEATURES, self.weights, strict=True) if f in shares)

    @property
    def reads_sentences(self) -> bool:
        """Whether ``sent_max`` has a weight: then the service embeds the sentences of the
        first ``SENTENCE_PASSAGES`` results (a cost per search, docs/evaluation.md)."""
        return any(w != 0 for f, w in zip(FEATURES, self.weights, strict=True) if f == "sent_max")

    def probability(self, x: Mapping[str, float | None]) -> float:
        z = self.bias
        for f, m, s, w in zip(FEATURES, self.mean, self.scale, self.weights, strict=True):
            v = x.get(f)
            if v is not None and math.isfinite(v):
                z += w * (v - m) / s
        z = max(-60.0, min(60.0, z))
        return 1.0 / (1.0 + math.exp(-z))

    def as_dict(self) -> dict[str, object]:
        return {
            "version": self.version,
            "features": list(FEATURES),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "weights": list(self.weights),
            "bias": self.bias,
            "threshold": self.threshold,
        }


def load_model(path: Path) -> AnswerabilityModel:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"answerability model {path}: {exc}") from None
    if list(raw.get("features", [])) != list(FEATURES):
        raise ConfigError(
            f"answerability model {path}: features {raw.get('features')} are not {FEATURES}; "
            "refit it (bench/fit_answerability.py)"
        )
    try:
        return AnswerabilityModel(
            version=str(raw["version"]),
            mean=tuple(float(v) for v in raw["mean"]),
            scale=tuple(float(v) for v in raw["scale"]),
            weights=tuple(float(v) for v in raw["weights"]),
            bias=float(raw["bias"]),
            threshold=float(raw["threshold"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"answerability model {path}: {exc}") from None


@cache
def default_model() -> AnswerabilityModel:
    """The shipped model (``MODEL_FILE``), read once per process."""
    return load_model(MODEL_FILE)
