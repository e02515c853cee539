"""The answerability model: its inputs, the calibrated probability (monotone in the
evidence), the decision and its per-request threshold, the shipped file, and its place
in the API (the OpenAPI document and the client models)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline.errors import ConfigError
from ragline.retrieval.abstain import AbstainPolicy, Evidence, IdentifierStats, assess
from ragline.retrieval.answerability import (
    FEATURES,
    MAX_SENTENCES,
    SIGNS,
    WINDOW,
    AnswerabilityModel,
    default_model,
    features,
    load_model,
    passage_features,
    sentences,
)
from ragline.retrieval.term_evidence import TermStats


def ev(
    sim: float | None,
    bm25: float | None = None,
    d: int | None = None,
    b: int | None = None,
    text: str = "x",
) -> Evidence:
    return Evidence(
        text=text, similarity=sim, rerank=None, bm25_score=bm25, dense_rank=d, bm25_rank=b
    )


def _x(rows: list[Evidence], **kw: object) -> dict[str, float | None]:
    x = features(rows, terms=kw.get("terms"), ident_missing=0.0, ident_hit=False)  # type: ignore[arg-type]
    assert x is not None
    return x


def test_features_by_hand() -> None:
    rows = [ev(0.6, 4.0, 1, 1), ev(0.5, 2.0, 2, 5), ev(0.4, None, 3, None), ev(0.1, 0.0, 40, 2)]
    df = {"gene": 3, "zebra": 0, "cell": 50, "2019": 4}
    terms = TermStats(chunks=100, df=df, top=frozenset({"gene"}))
    x = _x(rows, terms=terms)
    assert x["sim_max"] == 0.6 and x["sim_gap"] == pytest.approx(0.1)
    assert x["lex_peak"] == pytest.approx(4.0 / 3.0)  # zero BM25 scores do not count
    assert x["agree"] == pytest.approx(2 / WINDOW)  # both legs' top 10: the first two
    assert x["top_agree"] == 1.0
    assert x["missing_terms"] == pytest.approx(1 / 3)
    assert x["missing_number"] == 0.0  # 2019 occurs; 2041 would not
    later = _x(rows, terms=TermStats(chunks=100, df={**df, "2041": 0}))
    assert later["missing_number"] == 1.0
    version = _x(rows, terms=TermStats(chunks=100, df={**df, "v1.0": 0, "4.2.1": 0}))
    assert version["missing_number"] == 0.0  # versions: the version intent's business
    assert x["missing_share"] == terms.missing_share and x["top_coverage"] == terms.top_coverage


def test_features_only_look_at_the_window_and_need_a_similarity() -> None:
    head = [ev(0.3, 1.0, i, i) for i in range(1, WINDOW + 1)]
    tail = [ev(0.99, 99.0, 1, 1)]
    assert _x(head + tail) == _x(head)
    assert features([ev(None, 3.0, None, 1)], terms=None, ident_missing=0, ident_hit=False) is None
    assert features([], terms=None, ident_missing=0, ident_hit=False) is None
    # statistics that could not be read are None (neutral in the model), not 0
    x = _x([ev(0.5, 1.0, 1, 1)])
    assert x["missing_share"] is None and x["top_coverage"] is None
    assert x["missing_number"] is None
    # ... except what needs none: a query without a digit has no missing number
    plain = features(
        [ev(0.5, 1.0, 1, 1)], terms=None, ident_missing=0, ident_hit=False, has_number=False
    )
    assert plain is not None and plain["missing_number"] == 0.0
    # the shipped model weighs no word share: the service reads the statistics only for a
    # query with a number (or near the rules' threshold)
    assert not default_model().reads_terms


def _model(threshold: float = 0.5, **w: float) -> AnswerabilityModel:
    n = len(FEATURES)
    return AnswerabilityModel(
        version="test",
        mean=(0.0,) * n,
        scale=(1.0,) * n,
        weights=tuple(w.get(f, 0.0) for f in FEATURES),
        bias=0.0,
        threshold=threshold,
    )


def test_model_validates_its_numbers() -> None:
    n = len(FEATURES)
    with pytest.raises(ConfigError):
        AnswerabilityModel(
            version="v", mean=(0.0,), scale=(1.0,), weights=(1.0,), bias=0, threshold=0.5
        )
    with pytest.raises(ConfigError):  # a scale of 0
        AnswerabilityModel(
            version="v",
            mean=(0.0,) * n,
            scale=(0.0,) * n,
            weights=(0.0,) * n,
            bias=0,
            threshold=0.5,
        )
    with pytest.raises(ConfigError):  # more similarity may never mean less answerable
        _model(sim_max=-1.0)
    with pytest.raises(ConfigError):  # threshold outside its bounds
        _model(threshold=0.995)


def test_the_model_file_is_checked(tmp_path: Path) -> None:
    m = default_model()  # the shipped file loads and is well-formed
    raw = m.as_dict()
    assert raw["features"] == list(FEATURES)
    stale = tmp_path / "m.json"
    stale.write_text(json.dumps({**raw, "features": list(FEATURES)[:-1]}))
    with pytest.raises(ConfigError, match="refit"):
        load_model(stale)
    stale.write_text("{not json")
    with pytest.raises(ConfigError):
        load_model(stale)


_VALUES = st.floats(-5.0, 5.0, allow_nan=False)


@given(
    st.lists(_VALUES, min_size=len(FEATURES), max_size=len(FEATURES)),
    st.sampled_from(FEATURES),
    st.floats(0.0, 5.0, allow_nan=False),
)
def test_probability_is_monotone_in_each_feature(
    values: list[float], feature: str, step: float
) -> None:
    """The shipped model: more evidence for an answer never lowers the probability."""
    m = default_model()
    x = dict(zip(FEATURES, values, strict=True))
    more = {**x, feature: x[feature] + SIGNS[feature] * step}
    p, q = m.probability(x), m.probability(more)
    assert 0.0 <= p <= 1.0 and not math.isnan(p)
    assert q >= p - 1e-12


@given(
    st.lists(st.floats(0.0, 0.99, allow_nan=False), min_size=1, max_size=12),
    st.floats(0.0, 0.5, allow_nan=False),
    st.floats(0.0, 1.0, allow_nan=False),
)
def test_probability_is_monotone_in_the_evidence(
    sims: list[float], raise_by: float, missing: float
) -> None:
    """Through the whole decision (features then model): a stronger best match, or fewer
    of the query's words missing from the corpus, never lowers the probability."""
    pol = AbstainPolicy(model=default_model())
    rows = [ev(s, 1.0 + i, i + 1, i + 1) for i, s in enumerate(sorted(sims, reverse=True))]
    best = max(range(len(rows)), key=lambda i: rows[i].similarity or 0.0)
    stronger = list(rows)
    stronger[best] = ev((rows[best].similarity or 0.0) + raise_by, 1.0 + best, best + 1, best + 1)
    df_missing = {"a": 0 if missing > 0.5 else 5, "b": 5}
    terms = TermStats(chunks=100, df=df_missing)
    fewer_missing = TermStats(chunks=100, df={"a": 5, "b": 5})
    p = assess(rows, ["a b"], pol, terms=terms).answerable_probability
    q = assess(stronger, ["a b"], pol, terms=terms).answerable_probability
    r = assess(rows, ["a b"], pol, terms=fewer_missing).answerable_probability
    assert p is not None and q is not None and r is not None
    assert q >= p - 1e-12 and r >= p - 1e-12


def test_the_model_joins_the_rules_on_hybrid_searches_and_a_request_moves_it() -> None:
    pol = AbstainPolicy(min_similarity=0.3, model=_model(0.5, sim_max=2.0))
    # the rules abstain first (below the similarity threshold); the probability is there
    weak = assess([ev(-0.2, 1.0, 1, 1), ev(-0.3, 0.5, 2, 2)], ["q"], pol)
    assert (weak.reason, weak.signal) == ("below_similarity_threshold", "similarity")
    assert weak.answerable_probability is not None and weak.answerable_probability < 0.5
    assert weak.features is not None and set(weak.features) == set(FEATURES)
    # the rules answer (0.4 > 0.3) but the model's probability is below its threshold
    doubt = assess([ev(0.4, 1.0, 1, 1)], ["q"], pol, threshold=0.95)
    assert (doubt.reason, doubt.signal, doubt.threshold) == ("low_answerability", "model", 0.95)
    strong = assess([ev(0.9, 1.0, 1, 1)], ["q"], pol)
    assert (strong.reason, strong.signal) == (None, "similarity")
    p = strong.answerable_probability
    assert p is not None and p > 0.5
    # a caller asking for more certainty than this answer has gets an abstention
    strict = assess([ev(0.9, 1.0, 1, 1)], ["q"], pol, threshold=min(0.99, p + 0.001))
    assert strict.reason == "low_answerability" and strict.answerable_probability == p
    # dense only (no BM25 rank anywhere): the rules alone, no probability
    dense = assess([ev(0.2, None, 1, None)], ["q"], pol)
    assert (dense.signal, dense.answerable_probability) == ("similarity", None)
    none = assess([], ["q"], pol)
    assert (none.signal, none.answerable_probability) == ("no_results", 0.0)
    # without a model: the rules, nothing else
    plain = assess([ev(0.4, 1.0, 1, 1)], ["q"], AbstainPolicy(min_similarity=0.3))
    assert (plain.reason, plain.answerable_probability) == (None, None)


def test_identifier_evidence_reaches_the_model() -> None:
    pol = AbstainPolicy(model=_model(0.5, ident_missing=-10.0, ident_hit=10.0))
    q = ["what is ERR-4711"]
    gone = assess([ev(0.5, 1.0, 1, 1)], q, pol, IdentifierStats(documents=100, df={"err-4711": 0}))
    assert gone.features is not None and (gone.features["ident_missing"] or 0) > 0.3
    assert gone.answerable_probability is not None and gone.answerable_probability < 0.5
    assert gone.reason == "low_answerability"  # the rule lets 0.5 through (bar 0.39)
    hit = assess(
        [ev(0.5, 1.0, 1, 1, text="see ERR-4711")],
        q,
        pol,
        IdentifierStats(documents=100, df={"err-4711": 1}),
    )
    assert hit.features is not None and hit.features["ident_hit"] == 1.0 and hit.reason is None


def test_sentences_are_bounded_and_keep_short_pieces_together() -> None:
    text = "# A title over it\n\nBackground. We studied 120 mice (et al. 2010) here. " + " ".join(
        f"Sentence number {i} says something." for i in range(20)
    )
    got = sentences(text)
    assert len(got) == MAX_SENTENCES  # bounded: the embedding cost per search is too
    # a heading is a sentence; a short piece joins the one before
    assert got[:2] == ["A title over it Background.", "We studied 120 mice (et al. 2010) here."]
    assert all(len(s.split()) >= 4 for s in got)
    assert sentences("") == [] and sentences("Too short.") == ["Too short."]
    assert sentences("Short one. This one is long enough.") == [
        "Short one. This one is long enough."
    ]


def test_passage_features_by_hand() -> None:
    q = "Does IL-6 raise inflammatory markers in 2010 cohorts?"
    texts = ["IL-6 raised inflammation in cohorts.", "Markers of 2010.", "other", "markers 2010"]
    x = passage_features(q, texts, [0.7, 0.5, 0.3, 0.1, 0.1, 0.9], sentence_sims=[0.2, 0.8])
    # content words: il-6 raise inflam marker 2010 cohort (stop words out, 6-letter stems)
    assert x["cover_top"] == pytest.approx(4 / 6)  # not "markers", not "2010"
    assert x["cover_top3"] == 1.0  # the second result holds both
    assert x["cover_long"] == 1.0  # inflammatory, markers: the longest two
    assert x["cover_numbers"] == 1.0
    assert x["sim_lead"] == pytest.approx(0.7 - (0.5 + 0.3 + 0.1 + 0.1) / 4)  # first five
    assert x["sent_max"] == 0.8
    alone = passage_features(q, texts[:1], [0.7], sentence_sims=None)
    assert alone["cover_numbers"] == 0.0 and alone["sim_lead"] is None
    assert alone["sent_max"] is None  # not computed: neutral in the model, not 0
    none = passage_features(q, [], [], sentence_sims=None)
    assert none["cover_top"] is None


@given(
    st.lists(st.floats(-0.2, 0.95, allow_nan=False), min_size=1, max_size=24),
    st.floats(0.0, 0.5, allow_nan=False),
)
def test_probability_is_monotone_in_the_sentence_match(sims: list[float], up: float) -> None:
    """A model that weighs ``sent_max`` (the shipped one does not: measured, no gain):
    a sentence of the first results closer to the question never lowers the
    probability, through assess."""
    pol = AbstainPolicy(model=_model(0.01, sent_max=3.0))
    assert pol.model is not None and pol.model.reads_sentences
    rows = [ev(0.5, 2.0, 1, 1, text="alpha beta gamma."), ev(0.4, 1.0, 2, 2)]
    i = max(range(len(sims)), key=lambda k: sims[k])
    closer = [*sims[:i], sims[i] + up, *sims[i + 1 :]]
    p = assess(rows, ["alpha beta"], pol, sentence_sims=sims).answerable_probability
    q = assess(rows, ["alpha beta"], pol, sentence_sims=closer).answerable_probability
    assert p is not None and q is not None and q >= p - 1e-12
    if up > 0.01:
        assert q > p  # the input reaches the probability at all


def test_the_shipped_model_reads_no_sentences() -> None:
    """The sentence step costs ~90 ms p50 per hybrid search (docs/evaluation.md) and the
    measurement gave it no weight: the service runs it only for a model that weighs it."""
    assert not default_model().reads_sentences
    assert _model(sent_max=0.5).reads_sentences and not _model(cover_top3=0.5).reads_sentences
