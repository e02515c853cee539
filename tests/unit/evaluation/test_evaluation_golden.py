"""The committed golden set: schema, coverage, cross-references, and that its snippets
survive today's parser and chunker."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from ragline.errors import ConfigError
from ragline.evaluation.datasets import EvalDataset, match_text
from ragline.evaluation.golden import Category, load_golden

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
# the second set, in another domain (issue 21): the generic checks run on both
GOLDEN_SETS = (GOLDEN, GOLDEN.with_name("golden_marine"))


@pytest.fixture(scope="module")
def golden() -> EvalDataset:
    return load_golden(GOLDEN)


@pytest.fixture(scope="module", params=GOLDEN_SETS, ids=lambda p: p.name)
def any_golden(request: pytest.FixtureRequest) -> EvalDataset:
    return load_golden(request.param)


@pytest.fixture(scope="module", params=GOLDEN_SETS, ids=lambda p: p.name)
def raw(request: pytest.FixtureRequest) -> tuple[dict, dict]:  # type: ignore[type-arg]
    manifest = yaml.safe_load((request.param / "manifest.yaml").read_text())
    cases = yaml.safe_load((request.param / "cases.yaml").read_text())
    return manifest, cases


def test_size_and_coverage(any_golden: EvalDataset) -> None:
    golden = any_golden
    assert len(golden.cases) >= 60
    per_cat = Counter(c.category for c in golden.cases)
    missing = {c.value for c in Category} - set(per_cat)
    assert not missing, f"categories without cases: {missing}"
    assert min(per_cat.values()) >= 5, per_cat
    assert {c.difficulty for c in golden.cases} == {"easy", "medium", "hard"}
    assert golden.kind == "golden" and not golden.doc_level


def test_every_referenced_document_is_in_the_manifest(raw: tuple[dict, dict]) -> None:  # type: ignore[type-arg]
    manifest, cases = raw
    ids = {d["document_id"] for d in manifest["documents"]}
    users = set(manifest["users"])
    for case in cases["cases"]:
        assert case["user"] in users, case["id"]
        refs = list(case.get("forbidden", [])) + list(case.get("flag_required", []))
        for group in case.get("required", []):
            refs.extend(group.get("any_of", [group]))
        for ref in refs:
            assert ref["document_id"] in ids, (case["id"], ref["document_id"])
    for change in manifest["after_ingest"]:
        assert change["document_id"] in ids


def test_corpus_has_what_the_issue_asks_for(golden: EvalDataset) -> None:
    docs = {d.document_id: d for d in golden.documents}
    tenants = {d.tenant for d in golden.documents}
    assert tenants == {"acme", "globex"}
    # product docs in two versions, both current (neither supersedes the other)
    v39, v42 = docs["docs:acme-gateway/3.9/admin-guide"], docs["docs:acme-gateway/4.2/admin-guide"]
    assert (v39.meta.version, v42.meta.version) == ("3.9", "4.2")
    assert v39.meta.series_id == v42.meta.series_id
    assert not v39.meta.supersedes and not v42.meta.supersedes
    # a policy superseded by a newer one
    assert docs["policy:travel-expense/2025"].meta.supersedes == ("policy:travel-expense/2023",)
    # confidential HR doc readable by one group only
    hr = docs["hr:compensation-bands/2025"]
    assert hr.meta.acl_groups == ("hr",) and hr.meta.classification == "confidential"
    # planted injection in a low-trust ticket
    ticket = docs["tickets:SUP-4502"]
    assert "ignore all previous instructions" in ticket.content_text
    assert ticket.meta.trust == "low"
    # every format: markdown, html, csv, code, transcript
    mimes = {d.meta.mime_type for d in golden.documents}
    assert {"text/markdown", "text/html", "text/csv", "text/x-python"} <= mimes
    assert "application/vnd.ragline.transcript+json" in mimes
    # a deleted document with a unique canary, and an ACL revocation
    actions = {(a.action, a.document_id) for a in golden.after_ingest}
    assert ("delete", "wiki:projects/falcon-decommission") in actions
    assert ("acl", "wiki:procurement/approved-vendors") in actions
    canary = "FALCON-CANARY-7Q2X"
    holders = [d.document_id for d in golden.documents if canary in d.content_text]
    assert holders == ["wiki:projects/falcon-decommission"]


def test_second_tenant_shares_vocabulary(golden: EvalDataset) -> None:
    acme = " ".join(d.content_text.lower() for d in golden.documents if d.tenant == "acme")
    globex = [d for d in golden.documents if d.tenant == "globex"]
    for phrase in ("per diem", "rate limit", "parental leave", "circuit breaker"):
        assert phrase in acme
        assert any(phrase in d.content_text.lower() for d in globex), phrase


def test_cases_are_consistent_with_their_category(any_golden: EvalDataset) -> None:
    for c in any_golden.cases:
        if c.category in {"unanswerable", "deleted"}:
            assert c.expect_abstain is True, c.case_id
        if c.category == "deleted":
            assert c.forbidden, c.case_id
        if c.category == "permission":  # a leak to prevent, or a grant that must work
            assert c.forbidden or c.required, c.case_id
        if c.category in {"multi_hop", "version_comparison"} and c.case_id != "vc-06":
            docs = {m.document_id for g in c.required for m in g.any_of}
            assert len(docs) >= 2, c.case_id
        if c.required:
            assert c.expect_abstain is False


def test_snippets_survive_parsing_and_chunking(any_golden: EvalDataset) -> None:
    """Every snippet a case names is inside one child chunk that the real parser and
    chunker produce for its document (so a perfect retriever can score 1.0)."""
    golden = any_golden
    from ragline.chunking import Chunker, ChunkerSettings
    from ragline.parsing.dispatcher import parse_document
    from ragline.parsing.settings import ParserSettings
    from ragline.text import load_token_counter

    chunker = Chunker(ChunkerSettings(), load_token_counter())
    children: dict[str, list[str]] = {}
    for d in golden.documents:
        parsed = parse_document(d.content_text.encode(), d.meta, ParserSettings())
        chunks = chunker.chunk(parsed, document_id=d.document_id, content_hash=d.content_hash)
        children[d.document_id] = [match_text(c.text) for c in chunks if c.level == "child"]
    missing = []
    for c in golden.cases:
        matchers = [m for g in c.required for m in g.any_of] + [*c.forbidden, *c.flag_required]
        for m in matchers:
            if m.snippet and not any(match_text(m.snippet) in t for t in children[m.document_id]):
                missing.append((c.case_id, m.document_id, m.snippet))
    assert not missing


# ------------------------------------------------------------------ the loader rejects lies


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    dst = tmp_path / "golden"
    shutil.copytree(GOLDEN, dst)
    return dst


def _edit_cases(root: Path, fn: object) -> None:
    data = yaml.safe_load((root / "cases.yaml").read_text())
    fn(data["cases"])  # type: ignore[operator]
    (root / "cases.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda cs: cs[0]["required"][0].update(snippet="not in the document"), "is not in"),
        (lambda cs: cs[0]["required"][0].update(document_id="docs:nope"), "unknown document"),
        (lambda cs: cs[0].update(user="nobody"), "unknown user"),
        (lambda cs: cs[1].update(id=cs[0]["id"]), "used twice"),
        (lambda cs: cs[0].update(user="mallory"), "cannot read required"),
        (lambda cs: cs[0].update(expect_abstain=True), "expects abstention"),
        (lambda cs: cs[0].update(required=[], expect_abstain=None), "asserts nothing"),
        (
            lambda cs: cs[0]["required"][0].update(
                document_id="wiki:projects/falcon-decommission", snippet=None
            ),
            "is deleted",
        ),
        (lambda cs: cs[0].update(category="vibes"), "does not match its schema"),
    ],
)
def test_loader_rejects_inconsistent_cases(copy: Path, edit: object, message: str) -> None:
    _edit_cases(copy, edit)
    with pytest.raises(ConfigError, match=message):
        load_golden(copy)


def test_loader_rejects_missing_files(copy: Path) -> None:
    (copy / "corpus" / "acme" / "approved-vendors.md").unlink()
    with pytest.raises(ConfigError, match="is missing"):
        load_golden(copy)
    with pytest.raises(ConfigError, match="cannot read"):
        load_golden(copy / "nowhere")


def test_second_set_has_what_issue_21_asks_for() -> None:
    """A product in two lines (5.4 and 6.x with 6.0 and 6.1), a superseded policy, tables,
    code, transcripts, a second tenant, a delete and a revocation, in another domain."""
    marine = load_golden(GOLDEN_SETS[1])
    docs = {d.document_id: d for d in marine.documents}
    assert {d.tenant for d in marine.documents} == {"corvid", "marlow"}
    assert not {d.tenant for d in marine.documents} & {"acme", "globex"}
    labels = {d.meta.version for d in marine.documents if d.document_id.startswith("docs:tern/")}
    assert {"5.4", "6.0", "6.1"} <= labels
    m54, m61 = docs["docs:tern/5.4/operator-manual"], docs["docs:tern/6.1/operator-manual"]
    assert m54.meta.series_id == m61.meta.series_id and not m61.meta.supersedes
    assert docs["docs:tern/parameter-reference"].meta.version is None  # answers both lines
    assert docs["policy:standby-allowance/2024"].meta.supersedes == (
        "policy:standby-allowance/2022",
    )
    ticket = docs["tickets:FS-1207"]
    assert "ignore all previous instructions" in ticket.content_text
    assert ticket.meta.trust == "low"
    mimes = {d.meta.mime_type for d in marine.documents}
    assert {"text/markdown", "text/html", "text/csv", "text/x-python"} <= mimes
    assert "application/vnd.ragline.transcript+json" in mimes
    actions = {(a.action, a.document_id) for a in marine.after_ingest}
    assert actions == {
        ("delete", "wiki:projects/heron"),
        ("acl", "wiki:procurement/approved-shipyards"),
    }
    canary = "HERON-CANARY-5VZ8"
    assert [d.document_id for d in marine.documents if canary in d.content_text] == [
        "wiki:projects/heron"
    ]
    # the categories' counts match the first set's floor (>= 5 each) and versions are
    # asked in many surface forms, some ending in punctuation
    questions = " ".join(c.question for c in marine.cases)
    for form in ("Tern 6 ", "6.x", "v5.4", "version 6.1", "release 5.4", "6.1.2", "5.4–6.1"):
        assert form in questions, form
