"""The paraphrase set by construction (ragline.evaluation.paraphrase): a question shares
no content word (by the analyzer's stem) with its answer; the length-preserving variant
keeps the claim's number of content words; the deletion variant is the first set."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.evaluation.paraphrase import Neighbours, Term, rewrite, vocabulary

_STOP = {"the", "of", "in", "a", "is", "and", "to"}


def _analyze(text: str) -> list[Term]:
    """A toy analyzer: words, stop words dropped, the stem is the first 4 letters."""
    return [
        Term(m.start(), m.end(), m.group().lower()[:4])
        for m in re.finditer(r"[A-Za-z]+", text)
        if m.group().lower() not in _STOP
    ]


_VOCAB = [
    "insulin", "glucose", "diabetes", "obesity", "tumour", "cancer", "growth", "decline",
    "increase", "reduces", "mouse", "murine", "patients", "subjects", "cells", "tissue",
    "protein", "enzyme", "kinase", "marker", "signal", "risk", "hazard", "therapy",
]  # fmt: skip


def _neighbours(seed: int, min_similarity: float = -1.0) -> Neighbours:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(len(_VOCAB), 8)).astype(np.float32)
    return Neighbours(
        _VOCAB,
        [w[:4] for w in _VOCAB],
        vecs,
        lambda w: rng.normal(size=8).astype(np.float32),
        min_similarity=min_similarity,
    )


_words = st.sampled_from(_VOCAB[:16] + sorted(_STOP))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_words, min_size=2, max_size=12),
    st.lists(st.sampled_from(_VOCAB), max_size=8),
    st.integers(0, 2**16),
)
def test_no_shared_stem_survives_and_replacement_keeps_the_length(
    claim_words: list[str], answer_words: list[str], seed: int
) -> None:
    claim = " ".join(claim_words).capitalize() + "."
    terms = _analyze(claim)
    answer = {t.stem for t in _analyze(" ".join(answer_words))}
    shared = sum(t.stem in answer for t in terms)

    for sub in (None, _neighbours(seed)):
        p = rewrite(claim, terms, answer, sub)
        out = _analyze(p.text)
        assert not {t.stem for t in out} & answer  # no content word of the answer
        assert p.kept == len(terms) - shared and p.replaced + p.dropped == shared
        if sub is None:
            assert p.replaced == 0 and len(out) == p.kept  # the deletion set: shorter
        else:
            # 8 of the 24 vocabulary words are never in a claim: a substitute exists
            # unless the answer bans them all
            if p.dropped == 0:
                assert len(out) == len(terms)  # the length is kept
            # a replacement is new to the question: in neither the answer nor the claim
            assert not {w[:4] for _, w, _ in p.swaps} & (answer | {t.stem for t in terms})


def test_the_neighbour_is_the_nearest_allowed_word() -> None:
    words = ["raise", "raised", "elevate", "lower"]
    vecs = np.array([[1, 0], [0.99, 0.05], [0.9, 0.3], [-1, 0]], dtype=np.float32)
    nb = Neighbours(words, ["rais", "rais", "elev", "lowe"], vecs, lambda w: vecs[0])
    # the word itself and its stem-mate are banned (its stem is the answer's): next nearest
    word, sim = nb("raise", frozenset({"rais"})) or ("", 0.0)
    assert word == "elevate" and 0.9 < sim < 0.96
    # the next allowed word is opposite: below the default floor (0) there is none
    assert nb("raise", frozenset({"rais", "elev"})) is None
    loose = Neighbours(words, ["rais", "rais", "elev", "lowe"], vecs, lambda w: vecs[0],
                       min_similarity=-1.0)  # fmt: skip
    assert loose("raise", frozenset({"rais", "elev"})) == ("lower", -1.0)
    # a word outside the vocabulary is embedded
    assert nb("boost", frozenset({"rais"})) == nb("raise", frozenset({"rais"}))


def test_rewrite_keeps_case_stop_words_and_punctuation() -> None:
    claim = "Insulin reduces the risk of cancer in mice."
    terms = _analyze(claim)
    subs = {"insulin": ("glucose", 0.8), "cancer": ("tumour", 0.7)}
    p = rewrite(claim, terms, {"insu", "canc"}, lambda w, banned: subs.get(w))
    assert p.text == "Glucose reduces the risk of tumour in mice."
    assert (p.kept, p.replaced, p.dropped) == (3, 2, 0)
    gone = rewrite(claim, terms, {"insu", "canc"})
    assert gone.text == "reduces the risk of in mice."
    assert (gone.kept, gone.replaced, gone.dropped) == (3, 0, 2)


def test_vocabulary_is_words_the_corpus_uses() -> None:
    texts = ["Insulin and glucose.", "insulin, IL-6 and 2 mice", "glucose insulin xq"]
    assert vocabulary(texts) == ["insulin", "and", "glucose"]
    assert vocabulary(texts, min_df=3) == ["insulin"]
