"""A paraphrase set built by construction (issue 37 item 3): questions that share no
content word with their answer, generated from a labelled retrieval dataset (SciFact).

Each claim is read through the lexical index's own analyzer (``Term``: a content word's
span in the claim and its stem; stop words yield none). A content word whose stem occurs
in one of the claim's relevant documents is *shared*; the question is the claim with
every shared word

- **deleted** (``rewrite(..., substitute=None)``, the first set: its questions are short,
  so any fusion rule fitted on it can learn "short question" instead of "no lexical
  evidence"), or
- **replaced** by a meaning-near word (``substitute``) whose stem is in no relevant
  document and not in the claim: the question keeps its length and its shape.

``Neighbours`` gives the meaning-near word: the nearest word of a vocabulary (a corpus's
own words, ``vocabulary``) by an embedder's vectors, skipping every banned stem. It has
no thesaurus behind it, so a "neighbour" can be a related word rather than a synonym
(*insulin* for *diabetes*); the dense leg that made the vectors is the judge of "near",
which favours it (docs/evaluation.md says so where the figures are).

Pure logic: the analyzer, the embedder and the index are the caller's
(bench/paraphrase_fusion.py).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "Neighbours",
    "Paraphrase",
    "Term",
    "rewrite",
    "vocabulary",
]

# a vocabulary word: letters only, 3 or more (numbers and codes have no "near" word)
_WORD = re.compile(r"[a-z]{3,}")


@dataclass(frozen=True, slots=True)
class Term:
    """One content word of a text as the index's analyzer gives it: its character span
    and its stem."""

    start: int
    end: int
    stem: str


@dataclass(frozen=True, slots=True)
class Paraphrase:
    """A claim rewritten so that no content word is shared with its answer."""

    text: str
    kept: int  # content words not in the answer, as they were
    replaced: int  # shared words swapped for a neighbour
    dropped: int  # shared words deleted (no substitute, or none allowed)
    swaps: tuple[tuple[str, str, float], ...] = ()  # (word, replacement, similarity)


Substitute = Callable[[str, frozenset[str]], "tuple[str, float] | None"]


def _cased(word: str, like: str) -> str:
    """``word`` capitalised like ``like`` (a sentence-initial word stays initial-capped)."""
    if like[:1].isupper() and not like.isupper():
        return word[:1].upper() + word[1:]
    return word


def rewrite(
    claim: str,
    terms: Sequence[Term],
    answer_stems: Collection[str],
    substitute: Substitute | None = None,
) -> Paraphrase:
    """The claim with every content word whose stem is in ``answer_stems`` replaced by
    ``substitute(word, banned)`` (a word whose stem is not in ``banned``: the answer's
    stems and the claim's own) or, when that is None or gives nothing, deleted. Spaces
    are normalised; everything else of the claim (stop words, punctuation) stays."""
    banned = frozenset(answer_stems) | {t.stem for t in terms}
    out: list[str] = []
    pos = kept = replaced = dropped = 0
    swaps: list[tuple[str, str, float]] = []
    for t in sorted(terms, key=lambda t: t.start):
        if t.stem not in answer_stems:
            kept += 1
            continue
        word = claim[t.start : t.end]
        out.append(claim[pos : t.start])
        pos = t.end
        found = substitute(word.lower(), banned) if substitute is not None else None
        if found is None:
            dropped += 1
            continue
        new, sim = found
        out.append(_cased(new, word))
        replaced += 1
        swaps.append((word.lower(), new, round(sim, 4)))
    out.append(claim[pos:])
    text = " ".join("".join(out).split())
    return Paraphrase(text=text, kept=kept, replaced=replaced, dropped=dropped, swaps=tuple(swaps))


def vocabulary(texts: Iterable[str], *, min_df: int = 2, limit: int | None = None) -> list[str]:
    """The words of a corpus (lower-cased letters, 3 or more) found in at least
    ``min_df`` of its texts, most frequent first (ties by the word): a neighbour must be
    a word the corpus uses, not a typo."""
    df: Counter[str] = Counter()
    for text in texts:
        df.update(set(_WORD.findall(text.lower())))
    words = sorted((w for w, n in df.items() if n >= min_df), key=lambda w: (-df[w], w))
    return words[:limit] if limit is not None else words


class Neighbours:
    """The nearest vocabulary word to a word by cosine of an embedder's vectors, among
    the words whose stem is not banned. ``vectors`` are the words' embeddings (one row
    each, any norm); ``embed`` embeds a word not in the vocabulary."""

    def __init__(
        self,
        words: Sequence[str],
        stems: Sequence[str],
        vectors: npt.NDArray[np.float32],
        embed: Callable[[str], npt.NDArray[np.float32]],
        *,
        min_similarity: float = 0.0,
    ) -> None:
        if not (len(words) == len(stems) == len(vectors)):
            raise ValueError("words, stems and vectors must have the same length")
        self._words = list(words)
        self._stems = list(stems)
        self._index = {w: i for i, w in enumerate(self._words)}
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self._unit = (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        self._embed = embed
        self._min = min_similarity

    def _vector(self, word: str) -> npt.NDArray[np.float32]:
        i = self._index.get(word)
        v: npt.NDArray[np.float32] = (
            self._unit[i] if i is not None else np.asarray(self._embed(word), dtype=np.float32)
        )
        n = float(np.linalg.norm(v))
        return v / n if n > 0 else v

    def __call__(self, word: str, banned: frozenset[str]) -> tuple[str, float] | None:
        """The most similar allowed word and its cosine, or None when none reaches
        ``min_similarity``."""
        sims = self._unit @ self._vector(word)
        for i in np.argsort(-sims, kind="stable"):
            sim = float(sims[i])
            if sim < self._min:
                return None
            if self._stems[i] not in banned and self._words[i] != word:
                return self._words[i], sim
        return None
