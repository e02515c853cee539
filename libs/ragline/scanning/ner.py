"""Person/location names with spaCy NER, run lean: only the ``ner`` component, batched.

The small English model's ``ner`` carries its own tok2vec, so tagger, parser, lemmatizer
and the shared tok2vec are excluded at load (same PERSON spans as the full pipeline on
SciFact, measured, at well under half the cost). Texts go through ``nlp.pipe`` in
bounded segments so one huge document does not become one huge spaCy doc.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ragline.errors import ConfigError
from ragline.scanning.entities import NER_LABELS

if TYPE_CHECKING:
    from spacy.language import Language

__all__ = ["NerEngine"]

_EXCLUDE = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "senter")
NER_SCORE = 0.85  # what presidio's SpacyRecognizer assigns


class NerEngine:
    def __init__(self, *, model: str, batch_size: int = 32) -> None:
        self.model = model
        self.batch_size = batch_size
        self._nlp: Language | None = None

    @property
    def loaded(self) -> bool:
        return self._nlp is not None

    def load(self) -> None:
        if self._nlp is not None:
            return
        import spacy

        try:
            nlp = spacy.load(self.model, exclude=list(_EXCLUDE))
        except OSError as exc:  # model package missing: a deployment error, not transient
            raise ConfigError(f"spaCy model {self.model!r} is not installed") from exc
        if "ner" not in nlp.pipe_names:
            raise ConfigError(f"spaCy model {self.model!r} has no ner component")
        nlp.max_length = max(nlp.max_length, 2_000_000)
        self._nlp = nlp

    def entities(
        self, segments: Sequence[str], wanted: Iterable[str]
    ) -> list[list[tuple[int, int, str]]]:
        """Per segment, ``(start, end, entity)`` for the wanted presidio entities."""
        self.load()
        assert self._nlp is not None
        label_to_entity: dict[str, str] = {}
        for name in wanted:
            for label in NER_LABELS.get(name, ()):
                label_to_entity[label] = name
        out: list[list[tuple[int, int, str]]] = []
        docs: Iterable[Any] = self._nlp.pipe(segments, batch_size=self.batch_size)
        for doc in docs:
            found: list[tuple[int, int, str]] = []
            for span in doc.ents:
                ent: str | None = label_to_entity.get(span.label_)
                if ent is not None and span.text.strip():
                    found.append((span.start_char, span.end_char, ent))
            out.append(found)
        return out
