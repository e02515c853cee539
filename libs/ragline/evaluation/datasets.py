"""Evaluation datasets: the shared case model, the BEIR loader and the dataset spec parser.

Every dataset becomes one ``EvalDataset``: the source documents to push through the
pipeline, follow-up changes to apply after ingest (deletes, ACL revocations), and the
cases. A case's relevance is a list of *requirement groups*; a group is satisfied by any
of its alternatives (a document id, optionally with a snippet the returned chunk text
must contain), so judgments survive chunking changes that rename every chunk id.
"""

from __future__ import annotations

import csv
import json
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragline.errors import ConfigError
from ragline.events import Classification, DocumentMeta
from ragline.hashing import content_hash

__all__ = [
    "AfterIngest",
    "EvalCase",
    "EvalDataset",
    "Matcher",
    "Principal",
    "RequirementGroup",
    "SourceDocument",
    "load_beir",
    "load_dataset",
    "match_text",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Principal(_Frozen):
    """The acting user of a case: becomes the JWT's subject, tenant and groups."""

    subject: str = Field(min_length=1)
    tenant: str = Field(min_length=1)
    groups: tuple[str, ...]


class Matcher(_Frozen):
    """A returned chunk matches when its document id is equal and, if given, its text
    contains ``snippet`` (compared after ``match_text`` normalization)."""

    document_id: str = Field(min_length=1)
    snippet: str | None = Field(default=None, min_length=1)

    def matches(self, document_id: str, text: str) -> bool:
        if document_id != self.document_id:
            return False
        return self.snippet is None or match_text(self.snippet) in match_text(text)


class RequirementGroup(_Frozen):
    """One piece of evidence the answer needs; any alternative satisfies it."""

    any_of: tuple[Matcher, ...] = Field(min_length=1)
    grade: int = Field(default=1, ge=1, description="gain in nDCG (BEIR qrels score)")


class EvalCase(_Frozen):
    case_id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    principal: Principal
    category: str = "default"
    difficulty: str = "medium"
    required: tuple[RequirementGroup, ...] = ()
    forbidden: tuple[Matcher, ...] = ()
    flag_required: tuple[Matcher, ...] = Field(
        default=(), description="returned chunks matching these must be flagged injection_suspect"
    )
    expect_abstain: bool | None = Field(
        default=None,
        description="None: no expectation (a safety-only case); not counted in abstention",
    )
    filters: dict[str, Any] = Field(default_factory=dict)
    request: dict[str, Any] = Field(
        default_factory=dict, description="extra request body fields, e.g. as_of"
    )


class SourceDocument(_Frozen):
    """One document as the source system would send it (inline text)."""

    tenant: str
    document_id: str
    meta: DocumentMeta
    content_text: str
    expect: Literal["indexed", "quarantined"] = "indexed"

    @property
    def content_hash(self) -> str:
        return content_hash(self.content_text.encode("utf-8"))


class AfterIngest(_Frozen):
    """A change applied once the dataset is indexed: a delete or an ACL change."""

    action: Literal["delete", "acl"]
    tenant: str
    document_id: str
    acl_groups: tuple[str, ...] = ()
    classification: Classification | None = None


class EvalDataset(_Frozen):
    name: str
    kind: Literal["beir", "golden", "answerability"]
    documents: tuple[SourceDocument, ...]
    after_ingest: tuple[AfterIngest, ...] = ()
    cases: tuple[EvalCase, ...]
    doc_level: bool = Field(
        default=False,
        description="judge at document level: a ranked list of chunks collapses to the first "
        "chunk of each document (BEIR qrels judge documents, not chunks)",
    )


_PUNCT = str.maketrans(
    {
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "*": None,
        "`": None,
    }
)
_WS = re.compile(r"\s+")


def match_text(text: str) -> str:
    """Normalization for snippet matching: NFKC, no emphasis/backtick markup, one space,
    plain dashes and quotes, case-folded. Applied to both the snippet and the chunk."""
    text = unicodedata.normalize("NFKC", text).translate(_PUNCT)
    return _WS.sub(" ", text).strip().casefold()


# ------------------------------------------------------------------------------ BEIR

_SOURCE_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ConfigError(f"{path}:{n}: not JSON ({exc.msg})") from None
                if not isinstance(row, dict) or "_id" not in row:
                    raise ConfigError(f"{path}:{n}: a BEIR row needs an `_id`")
                yield row


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``query-id -> corpus-id -> score`` from a BEIR qrels TSV (header row optional)."""
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(encoding="utf-8", newline="") as fh:
        for n, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
            if not row or (n == 1 and row[0] == "query-id"):
                continue
            if len(row) < 3:
                raise ConfigError(f"{path}:{n}: expected query-id, corpus-id, score")
            try:
                qrels[row[0]][row[1]] = int(float(row[2]))
            except ValueError:
                raise ConfigError(f"{path}:{n}: score {row[2]!r} is not a number") from None
    return dict(qrels)


def beir_document_text(title: str, text: str) -> str:
    """Title as a markdown heading over the abstract: both reach BM25 and the embedder."""
    title = title.strip()
    return f"# {title}\n\n{text.strip()}\n" if title else f"{text.strip()}\n"


def load_beir(
    directory: Path,
    *,
    split: str = "test",
    tenant: str = "eval",
    groups: tuple[str, ...] = ("eval",),
    source: str | None = None,
    limit_queries: int | None = None,
) -> EvalDataset:
    """A BEIR dataset directory: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

    Only queries with at least one positive judgment become cases (as in BEIR). Document
    ids become ``<source>:<corpus id>``; every document is readable by ``groups``.
    """
    directory = Path(directory)
    qrels_path = directory / "qrels" / f"{split}.tsv"
    for p in (directory / "corpus.jsonl", directory / "queries.jsonl", qrels_path):
        if not p.is_file():
            raise ConfigError(f"BEIR dataset: {p} is missing")
    source = source or re.sub(r"[^a-z0-9_.-]", "-", directory.name.lower()) or "beir"
    if not _SOURCE_RE.fullmatch(source):
        raise ConfigError(f"BEIR source name {source!r} is not a valid document-id prefix")
    meta_common: Mapping[str, Any] = {
        "source_type": "beir",
        "mime_type": "text/markdown",
        "acl_groups": groups,
        "classification": Classification.INTERNAL,
    }
    documents = tuple(
        SourceDocument(
            tenant=tenant,
            document_id=f"{source}:{row['_id']}",
            meta=DocumentMeta(title=(row.get("title") or None), **meta_common),
            content_text=beir_document_text(row.get("title") or "", row.get("text") or ""),
        )
        for row in _jsonl(directory / "corpus.jsonl")
    )
    principal = Principal(subject="eval-beir", tenant=tenant, groups=groups)
    qrels = read_qrels(qrels_path)
    cases: list[EvalCase] = []
    for row in _jsonl(directory / "queries.jsonl"):
        judged = {d: s for d, s in qrels.get(str(row["_id"]), {}).items() if s > 0}
        if not judged:
            continue
        cases.append(
            EvalCase(
                case_id=str(row["_id"]),
                question=str(row["text"]),
                principal=principal,
                category="beir",
                expect_abstain=False,
                required=tuple(
                    RequirementGroup(any_of=(Matcher(document_id=f"{source}:{d}"),), grade=s)
                    for d, s in sorted(judged.items())
                ),
            )
        )
        if limit_queries is not None and len(cases) >= limit_queries:
            break
    if not cases:
        raise ConfigError(f"BEIR dataset {directory}: no query has a positive judgment in {split}")
    return EvalDataset(
        name=f"beir:{directory.name}:{split}",
        kind="beir",
        documents=documents,
        cases=tuple(cases),
        doc_level=True,
    )


def load_dataset(spec: str, **beir_options: Any) -> EvalDataset:
    """``beir:<dir>``, ``golden:<dir>`` (the directory holding manifest.yaml) or
    ``answerability:<BEIR SciFact dir>`` (evaluation/answerability.py)."""
    kind, sep, location = spec.partition(":")
    if not sep or not location:
        raise ConfigError(
            f"dataset {spec!r}: expected beir:<dir>, golden:<dir> or answerability:<dir>"
        )
    if kind == "beir":
        return load_beir(Path(location), **beir_options)
    if kind == "golden":
        from ragline.evaluation.golden import load_golden

        return load_golden(Path(location))
    if kind == "answerability":
        from ragline.evaluation.answerability import load_answerability
        from ragline.evaluation.scifact import scifact_dir
        from ragline.evaluation.settings import EvalSettings

        # ``answerability:scifact``: wherever SciFact is found (RAGLINE_SCIFACT_DIR, ...)
        where = scifact_dir(EvalSettings(), repo=Path.cwd()) if location == "scifact" else None
        return load_answerability(where or Path(location))
    raise ConfigError(f"dataset {spec!r}: unknown kind {kind!r} (beir, golden or answerability)")
