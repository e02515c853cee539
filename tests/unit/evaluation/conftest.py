"""Small datasets and runs shared by the evaluation unit tests."""

from __future__ import annotations

import pytest

from ragline.evaluation.datasets import (
    EvalCase,
    EvalDataset,
    Matcher,
    Principal,
    RequirementGroup,
    SourceDocument,
)
from ragline.evaluation.metrics import Hit
from ragline.evaluation.summary import CaseRun
from ragline.events import DocumentMeta

ALICE = Principal(subject="alice", tenant="acme", groups=("staff",))


def _doc(doc_id: str) -> SourceDocument:
    return SourceDocument(
        tenant="acme",
        document_id=doc_id,
        meta=DocumentMeta(acl_groups=("staff",)),
        content_text=f"text of {doc_id}\n",
    )


@pytest.fixture
def tiny() -> EvalDataset:
    """Two cases: a fact (category fact) and a leak probe that should abstain."""
    return EvalDataset(
        name="golden:tiny",
        kind="golden",
        documents=(_doc("w:a"), _doc("w:b"), _doc("w:secret")),
        cases=(
            EvalCase(
                case_id="f1",
                question="where is a?",
                principal=ALICE,
                category="fact",
                required=(RequirementGroup(any_of=(Matcher(document_id="w:a"),)),),
                expect_abstain=False,
            ),
            EvalCase(
                case_id="p1",
                question="the secret?",
                principal=ALICE,
                category="permission",
                forbidden=(Matcher(document_id="w:secret"),),
                expect_abstain=True,
            ),
        ),
    )


def hit(doc: str) -> Hit:
    return Hit(document_id=doc, text=f"text of {doc}", chunk_id=f"c-{doc}")


@pytest.fixture
def runs() -> dict[str, list[CaseRun]]:
    """'good' finds a at rank 1 and abstains on p1; 'leaky' finds a at rank 2 and leaks."""
    return {
        "good": [
            CaseRun(
                case_id="f1",
                mode="good",
                hits=[hit("w:a"), hit("w:b")],
                latency_ms=10.0,
                cache="miss",
            ),
            CaseRun(
                case_id="p1",
                mode="good",
                abstained=True,
                abstain_reason="low",
                latency_ms=20.0,
                cache="miss",
            ),
        ],
        "leaky": [
            CaseRun(
                case_id="f1",
                mode="leaky",
                hits=[hit("w:b"), hit("w:a")],
                latency_ms=30.0,
                cache="hit",
            ),
            CaseRun(
                case_id="p1", mode="leaky", hits=[hit("w:secret")], latency_ms=50.0, cache="miss"
            ),
        ],
    }
