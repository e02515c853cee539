"""The project's golden set: ``manifest.yaml`` (documents, users, post-ingest changes) and
``cases.yaml`` (questions with required / forbidden evidence), loaded and cross-checked.

Loading fails with every problem listed at once: a case naming an unknown document, a
snippet that is not in its source file, a required document the acting user cannot read
after the post-ingest changes. A golden set that lies is worse than none.
"""

from __future__ import annotations

import json
from datetime import date
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragline.errors import ConfigError
from ragline.evaluation.datasets import (
    AfterIngest,
    EvalCase,
    EvalDataset,
    Matcher,
    Principal,
    RequirementGroup,
    SourceDocument,
    match_text,
)
from ragline.events import Classification, DocumentMeta, TrustLevel

__all__ = ["MIME_BY_SUFFIX", "Category", "load_golden", "source_units"]


class Category(StrEnum):
    """Every category the golden set must cover (issue 8)."""

    SINGLE_HOP = "single_hop"
    EXACT_IDENTIFIER = "exact_identifier"
    PARAPHRASE = "paraphrase"
    TABLE_LOOKUP = "table_lookup"
    VERSION_SPECIFIC = "version_specific"
    VERSION_COMPARISON = "version_comparison"
    TIME_SENSITIVE = "time_sensitive"
    MULTI_HOP = "multi_hop"
    UNANSWERABLE = "unanswerable"
    PERMISSION = "permission"
    DELETED = "deleted"
    ADVERSARIAL = "adversarial"


TRANSCRIPT_MIME = "application/vnd.ragline.transcript+json"
MIME_BY_SUFFIX: dict[str, str] = {
    ".md": "text/markdown",
    ".html": "text/html",
    ".csv": "text/csv",
    ".py": "text/x-python",
    ".json": "application/json",
    ".txt": "text/plain",
}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ManifestUser(_Frozen):
    tenant: str
    groups: tuple[str, ...] = Field(min_length=1)


class ManifestDocument(_Frozen):
    document_id: str
    tenant: str
    path: str
    title: str
    source_type: str = "wiki"
    mime_type: str | None = None
    uri: str | None = None
    acl_groups: tuple[str, ...] = Field(min_length=1)
    classification: Classification = Classification.INTERNAL
    trust: TrustLevel = TrustLevel.MEDIUM
    version: str | None = None
    series_id: str | None = None
    supersedes: tuple[str, ...] = ()
    effective_date: date | None = None
    expiry_date: date | None = None
    language: str | None = "en"
    metadata: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    expect: Literal["indexed", "quarantined"] = "indexed"


class Manifest(_Frozen):
    version: Literal[1]
    users: dict[str, ManifestUser]
    documents: tuple[ManifestDocument, ...]
    after_ingest: tuple[AfterIngest, ...] = ()


class GoldenCase(_Frozen):
    id: str
    question: str
    user: str
    category: Category
    difficulty: Literal["easy", "medium", "hard"]
    required: tuple[RequirementGroup | Matcher, ...] = ()
    forbidden: tuple[Matcher, ...] = ()
    flag_required: tuple[Matcher, ...] = ()
    expect_abstain: bool | None = None
    filters: dict[str, Any] = Field(default_factory=dict)
    request: dict[str, Any] = Field(default_factory=dict)
    notes: str | None = None

    @property
    def expectation(self) -> bool | None:
        """Whether the service should abstain: given, or False when evidence is required,
        or no expectation at all (a case that only checks forbidden/flagged content)."""
        if self.expect_abstain is not None:
            return self.expect_abstain
        return False if self.required else None


class CasesFile(_Frozen):
    version: Literal[1]
    cases: tuple[GoldenCase, ...]


def _read_yaml(path: Path, model: type[Manifest] | type[CasesFile]) -> Any:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        return model.model_validate(raw)
    except OSError as exc:
        raise ConfigError(f"golden set: cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"golden set: {path} is not valid YAML: {exc}") from None
    except ValidationError as exc:
        raise ConfigError(f"golden set: {path} does not match its schema:\n{exc}") from None


def source_units(path: Path, text: str) -> list[str]:
    """The pieces of plain text a snippet must fall inside: table cells and transcript
    strings are separate units, so a snippet cannot straddle two cells."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        import csv
        import io

        return [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    if suffix == ".json":
        out: list[str] = []

        def walk(node: Any) -> None:
            if isinstance(node, str):
                out.append(node)
            elif isinstance(node, dict):
                for v in node.values():
                    walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)

        walk(json.loads(text))
        return out
    if suffix == ".html":
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(text, "lxml")
        tags = ("p", "li", "td", "th", "h1", "h2", "h3", "h4", "pre", "caption", "title")
        return [el.get_text(" ") for el in soup.find_all(tags)]
    return [text]


def _document(root: Path, d: ManifestDocument) -> SourceDocument:
    path = root / d.path
    mime = d.mime_type or (
        TRANSCRIPT_MIME
        if path.name.lower().endswith(".transcript.json")
        else MIME_BY_SUFFIX.get(path.suffix.lower())
    )
    if mime is None:
        raise ConfigError(f"golden set: no mime type for {d.path}")
    meta = DocumentMeta(
        source_type=d.source_type,
        uri=d.uri or f"golden://{d.tenant}/{d.path}",
        title=d.title,
        mime_type=mime,
        acl_groups=d.acl_groups,
        classification=d.classification,
        trust=d.trust,
        version=d.version,
        series_id=d.series_id,
        supersedes=d.supersedes,
        effective_date=d.effective_date,
        expiry_date=d.expiry_date,
        language=d.language,
        metadata=d.metadata,
    )
    return SourceDocument(
        tenant=d.tenant,
        document_id=d.document_id,
        meta=meta,
        content_text=path.read_text(encoding="utf-8"),
        expect=d.expect,
    )


def _alternatives(c: GoldenCase) -> list[Matcher]:
    return [m for g in c.required for m in (g.any_of if isinstance(g, RequirementGroup) else (g,))]


class _Checker:
    """Cross-checks of a manifest and its cases; collects every problem."""

    def __init__(self, manifest: Manifest, root: Path) -> None:
        self.manifest = manifest
        self.root = root
        self.docs = {d.document_id: d for d in manifest.documents}
        self.problems: list[str] = []
        self._units: dict[str, list[str]] = {}
        # visibility after the post-ingest changes
        self.acl = {d.document_id: set(d.acl_groups) for d in manifest.documents}
        self.deleted: set[str] = set()

    def documents(self) -> None:
        seen: set[str] = set()
        for d in self.manifest.documents:
            if d.document_id in seen:
                self.problems.append(f"document {d.document_id}: listed twice")
            seen.add(d.document_id)
            if not (self.root / d.path).is_file():
                self.problems.append(f"document {d.document_id}: file {d.path} is missing")
            self.problems.extend(
                f"document {d.document_id}: supersedes unknown {s}"
                for s in d.supersedes
                if s not in self.docs
            )
        for a in self.manifest.after_ingest:
            if a.document_id not in self.docs:
                self.problems.append(f"after_ingest: unknown document {a.document_id}")
            elif a.action == "delete":
                self.deleted.add(a.document_id)
            else:
                self.acl[a.document_id] = set(a.acl_groups)

    def _snippet_found(self, d: ManifestDocument, snippet: str) -> bool:
        if d.document_id not in self._units:
            path = self.root / d.path
            text = path.read_text("utf-8") if path.is_file() else ""
            self._units[d.document_id] = [match_text(u) for u in source_units(path, text)]
        return any(match_text(snippet) in u for u in self._units[d.document_id])

    def case(self, c: GoldenCase) -> None:
        user = self.manifest.users.get(c.user)
        if user is None:
            self.problems.append(f"case {c.id}: unknown user {c.user}")
            return
        required = _alternatives(c)
        for m in (*required, *c.forbidden, *c.flag_required):
            d = self.docs.get(m.document_id)
            if d is None:
                self.problems.append(f"case {c.id}: unknown document {m.document_id}")
            elif m.snippet is not None and not self._snippet_found(d, m.snippet):
                self.problems.append(
                    f"case {c.id}: snippet {m.snippet!r} is not in {d.document_id}"
                )
        for m in required:
            d = self.docs.get(m.document_id)
            if d is not None and (
                d.tenant != user.tenant or not self.acl[d.document_id] & set(user.groups)
            ):
                self.problems.append(f"case {c.id}: {c.user} cannot read required {d.document_id}")
            if m.document_id in self.deleted:
                self.problems.append(f"case {c.id}: required {m.document_id} is deleted")
        if c.expect_abstain and c.required:
            self.problems.append(f"case {c.id}: expects abstention but lists required evidence")
        if c.expect_abstain is False and not c.required:
            self.problems.append(f"case {c.id}: expects an answer but lists no evidence")
        if not (c.required or c.expect_abstain or c.forbidden or c.flag_required):
            self.problems.append(
                f"case {c.id}: asserts nothing (no required, forbidden, "
                "flag_required or expect_abstain)"
            )


def _check(manifest: Manifest, cases: CasesFile, root: Path) -> list[str]:
    checker = _Checker(manifest, root)
    checker.documents()
    seen: set[str] = set()
    for c in cases.cases:
        if c.id in seen:
            checker.problems.append(f"case {c.id}: id used twice")
        seen.add(c.id)
        checker.case(c)
    return checker.problems


def _case(c: GoldenCase, users: dict[str, ManifestUser]) -> EvalCase:
    u = users[c.user]
    return EvalCase(
        case_id=c.id,
        question=c.question,
        principal=Principal(subject=c.user, tenant=u.tenant, groups=u.groups),
        category=c.category.value,
        difficulty=c.difficulty,
        required=tuple(
            g if isinstance(g, RequirementGroup) else RequirementGroup(any_of=(g,))
            for g in c.required
        ),
        forbidden=c.forbidden,
        flag_required=c.flag_required,
        expect_abstain=c.expectation,
        filters=c.filters,
        request=c.request,
    )


def load_golden(root: Path) -> EvalDataset:
    """The golden set in ``root`` (``manifest.yaml`` + ``cases.yaml``), fully checked."""
    root = Path(root)
    manifest: Manifest = _read_yaml(root / "manifest.yaml", Manifest)
    cases: CasesFile = _read_yaml(root / "cases.yaml", CasesFile)
    problems = _check(manifest, cases, root)
    if problems:
        raise ConfigError("golden set is inconsistent:\n  " + "\n  ".join(problems))
    try:
        documents = tuple(_document(root, d) for d in manifest.documents)
    except (ValidationError, OSError) as exc:
        raise ConfigError(f"golden set: a document is invalid: {exc}") from None
    return EvalDataset(
        name=f"golden:{root.name}",
        kind="golden",
        documents=documents,
        after_ingest=manifest.after_ingest,
        cases=tuple(_case(c, manifest.users) for c in cases.cases),
        doc_level=False,
    )
