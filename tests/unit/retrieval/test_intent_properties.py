"""Version intent as properties: every surface form of a version mention (punctuation
after it, parentheses, v/version/release/product-word cues, majors, ``.x`` wildcards,
ranges, lists) resolves against the caller's release labels, and nothing else does."""

from __future__ import annotations

from datetime import date

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ragline.retrieval.intent import mentions, parse_intent, resolve
from ragline.retrieval.versions import product_words

TODAY = date(2026, 3, 1)
PRODUCT = "Widget"
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parse(q: str, labels: frozenset[str], products: frozenset[str] = frozenset({"widget"})):
    return parse_intent(
        (q,),
        None,
        as_of=None,
        include_history=False,
        today=TODAY,
        known_versions=labels,
        product_words=products,
    )


def _key(label: str) -> tuple[int, ...]:
    return tuple(int(p) for p in label.lstrip("v").split("."))


# a corpus: 2-4 majors with 1-4 minors each ("5.4", "6.0", "6.1", ...)
labels_st = st.dictionaries(
    st.integers(1, 40), st.sets(st.integers(0, 19), min_size=1, max_size=4), min_size=2, max_size=4
).map(lambda d: frozenset(f"{M}.{m}" for M, ms in d.items() for m in ms))

words = st.sampled_from(
    ["what", "is", "the", "default", "timeout", "in", "how", "does", "behave", "for", "our"]
)
prefix_st = st.lists(words, max_size=6).map(" ".join)
suffix_st = st.sampled_from(["", ".", "?", "!", ",", ";", ":", ")", "…", " now", " please?"])
exact_forms = st.sampled_from(
    [
        "{p} {v}",
        "{p} v{v}",
        "{p} V{v}",
        "version {v}",
        "Version {v}",
        "release {v}",
        "ver. {v}",
        "v{v}",
        "({p} {v})",
        "{p} ({v})",
        "[{v}]",
        "{v}",
    ]
)
major_forms = st.sampled_from(
    ["{p} {M}", "v{M}", "version {M}", "release {M}", "{M}.x", "{p} {M}.x", "v{M}.x", "{p} {M}.*"]
)


@SETTINGS
@given(labels=labels_st, data=st.data(), form=exact_forms, pre=prefix_st, post=suffix_st)
def test_a_named_version_in_any_form_resolves_to_its_label(labels, data, form, pre, post):
    label = data.draw(st.sampled_from(sorted(labels)))
    q = f"{pre} {form.format(p=PRODUCT, v=label)}{post}".strip()
    i = _parse(q, labels)
    assert i.scope.mode == "explicit", q
    assert i.scope.versions == [label], q
    assert i.searches[0].unversioned_at == TODAY  # read from the text: ADR 0005
    assert not i.scope.unresolved


@SETTINGS
@given(labels=labels_st, data=st.data(), form=major_forms, pre=prefix_st, post=suffix_st)
def test_a_major_or_wildcard_names_every_label_of_that_major(labels, data, form, pre, post):
    major = data.draw(st.sampled_from(sorted({_key(x)[0] for x in labels})))
    q = f"{pre} {form.format(p=PRODUCT, M=major)}{post}".strip()
    want = sorted((x for x in labels if _key(x)[0] == major), key=_key)
    i = _parse(q, labels)
    assert i.scope.mode == "explicit", q
    assert i.scope.versions == want, q


@SETTINGS
@given(
    labels=labels_st,
    data=st.data(),
    dash=st.sampled_from(["\u2013", "-", " - ", "\u2014", " through ", " thru "]),
    cue=st.sampled_from(["version ", "release ", "Widget ", "v", ""]),
    post=suffix_st,
)
def test_a_range_names_the_labels_between(labels, data, dash, cue, post):
    ordered = sorted(labels, key=_key)
    lo = data.draw(st.sampled_from(ordered))
    hi = data.draw(st.sampled_from(ordered))
    lo, hi = sorted((lo, hi), key=_key)
    assume(lo != hi)
    q = f"what is the default timeout in {cue}{lo}{dash}{hi}{post}"
    want = [x for x in ordered if _key(lo) <= _key(x) <= _key(hi)]
    i = _parse(q, labels)
    assert i.scope.versions == want, q


@SETTINGS
@given(
    labels=labels_st,
    data=st.data(),
    joiner=st.sampled_from([" and ", ", ", " vs ", " vs. ", " versus ", " or ", " to "]),
    verb=st.sampled_from(["Compare", "What changed between", "Difference in", "versus:"]),
    cue=st.sampled_from(["", "Widget ", "version ", "v", "releases "]),
    post=suffix_st,
)
def test_a_comparison_fans_out_one_side_per_version(labels, data, joiner, verb, cue, post):
    picked = data.draw(
        st.lists(st.sampled_from(sorted(labels)), min_size=2, max_size=3, unique=True)
    )
    if len(picked) == 3:
        listed = f"{picked[0]}, {picked[1]} and {picked[2]}"
    else:
        listed = joiner.join(picked)
    q = f"{verb} the timeouts of {cue}{listed}{post}"
    i = _parse(q, labels)
    assert i.scope.mode == "compare", q
    assert [s.label for s in i.searches] == picked, q
    assert set(i.scope.versions) == set(picked)
    # every side keeps current unversioned documents (defect 3)
    assert all(s.unversioned_at == TODAY for s in i.searches)
    for s, v in zip(i.searches, picked, strict=True):
        assert v in (s.versions or ())


@SETTINGS
@given(
    labels=labels_st,
    data=st.data(),
    verb=st.sampled_from(["Compare", "What changed between", "How do the timeouts differ in"]),
    cue=st.sampled_from(["Widget ", "version ", "v"]),
)
def test_comparing_two_majors_gives_one_side_per_major(labels, data, verb, cue):
    majors = sorted({_key(x)[0] for x in labels})
    a, b = data.draw(st.lists(st.sampled_from(majors), min_size=2, max_size=2, unique=True))
    i = _parse(f"{verb} {cue}{a} and {b}?", labels)
    assert i.scope.mode == "compare"
    assert [set(s.versions or ()) & labels for s in i.searches] == [
        {x for x in labels if _key(x)[0] == a},
        {x for x in labels if _key(x)[0] == b},
    ]


@SETTINGS
@given(
    labels=labels_st,
    missing=st.integers(41, 10**6),
    form=st.sampled_from(["Widget {M}", "version {M}", "v{M}", "{M}.x", "release {M}.9"]),
    post=suffix_st,
)
def test_a_version_the_corpus_lacks_is_reported_and_restricts_nothing(labels, missing, form, post):
    q = f"what is the default timeout in {form.format(M=missing)}{post}"
    i = _parse(q, labels)
    assert i.scope.mode == "current" and i.scope.versions == []
    assert i.scope.unresolved and str(missing) in i.scope.unresolved[0]
    assert all(s.versions is None for s in i.searches)
    assert "no release" in i.scope.note


@SETTINGS
@given(
    labels=labels_st,
    data=st.data(),
    noise=st.sampled_from(
        [
            "ERR-{M}{m}",
            "{M}.{m}%",
            "1,{M}00",
            "2024-0{d}-1{d}",
            "{M}.{m}.{m}.{m}.{m}",
            "x{M}.{m}",
            "{M}.{m}-beta",
            "/api/{M}.{m}/",
            "SEV{M}",
            "{M}.{m}ms",
            "step {M}",
            "{M} nodes",
        ]
    ),
)
def test_numbers_that_are_not_versions_never_restrict(labels, data, noise):
    label = data.draw(st.sampled_from(sorted(labels)))
    major, minor = label.split(".")
    d = data.draw(st.integers(1, 9))
    q = f"why does {noise.format(M=major, m=minor, d=d)} happen"
    assert _parse(q, labels).scope.mode == "current", q


@settings(max_examples=500, deadline=None)
@given(labels=labels_st, text=st.text(max_size=300), products=st.sets(st.text(max_size=8)))
def test_only_the_callers_labels_ever_come_back(labels, text, products):
    """Arbitrary text (NUL, lone surrogates, huge numbers): no crash, and the scope names
    only labels the caller can see (resolution never invents or leaks a label)."""
    i = _parse(text, labels, frozenset(products))
    assert set(i.scope.versions) <= labels
    for s in i.searches:
        assert s.versions is None or {v.lstrip("vV") for v in s.versions} <= labels


@given(st.integers(0, 2**63), st.integers(0, 2**63))
def test_huge_numbers_are_harmless(a, b):
    i = _parse(f"Widget {a}.{b} and v{2**63} vs {b}.x", frozenset({"1.0", "2.0"}))
    assert i.scope.mode in ("current", "explicit", "compare")


def test_patch_release_resolves_to_its_line() -> None:
    i = _parse("What was fixed in Widget 6.1.3?", frozenset({"6.0", "6.1", "5.4"}))
    assert i.scope.versions == ["6.1"]
    assert resolve(mentions("v6.1.3")[0], {"6.1.3", "6.1"}) == ("6.1.3",)


def test_defect_1_trailing_full_stop_keeps_both_sides() -> None:
    i = _parse("Compare the ping timeout of Widget 5.4 and 6.1.", frozenset({"5.4", "6.1"}))
    assert i.scope.mode == "compare" and [s.label for s in i.searches] == ["5.4", "6.1"]


def test_defect_2_majors_match_the_labels_of_that_major() -> None:
    labels = frozenset({"5.4", "6.0", "6.1"})
    for q in ("timeouts in Widget 6", "timeouts in v6", "timeouts in version 6", "in 6.x?"):
        assert _parse(q, labels).scope.versions == ["6.0", "6.1"], q


def test_defect_3_comparison_sides_keep_current_unversioned_documents() -> None:
    i = _parse("How did the timeout change between Widget 5.4 and 6.1?", frozenset({"5.4", "6.1"}))
    assert all(s.unversioned_at == TODAY for s in i.searches)


def test_product_words_come_from_titles_before_a_label() -> None:
    words = product_words(
        [
            ("6.1", "Tern Navigator 6.1 Operator Manual"),
            ("v5.4", "Tern Navigator v5.4 Operator Manual"),
            ("2023", "Remote Work Policy (2023)"),
            ("6.0", "Release notes for the 6.0 line"),
            ("7.0", None),
        ]
    )
    assert words == {"tern", "navigator", "remote", "work", "policy"}
