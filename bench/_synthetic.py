"""The synthetic corpora of the query and growth benchmarks, deterministic for a given
generator seed: random unit 384-d vectors, and either Zipf-distributed made-up words
(``synthetic_docs``) or SciFact-derived text (``scifact_docs``: each child a window of
consecutive words of a random SciFact abstract, so term statistics, stemming and query
terms are those of real English prose, at any corpus size)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import count
from pathlib import Path

import numpy as np

__all__ = [
    "CHUNKS_PER_DOC",
    "DIM",
    "VOCAB",
    "SynthDoc",
    "scifact_docs",
    "scifact_queries",
    "synthetic_docs",
    "synthetic_queries",
]

VOCAB = [f"w{i:04d}" for i in range(5000)]
CHUNKS_PER_DOC = 8
WORDS_PER_CHUNK = 60
DIM = 384

# (document id, title, child texts, child vectors: float32 (n, DIM), unit length)
SynthDoc = tuple[str, str, list[str], np.ndarray]


def _zipf() -> np.ndarray:
    p = 1.0 / np.arange(1, len(VOCAB) + 1)
    p /= p.sum()
    return p


def synthetic_docs(rng: np.random.Generator, n_docs: int | None = None) -> Iterator[SynthDoc]:
    """Documents ``synth:0``, ``synth:1``, ... (endless when ``n_docs`` is None): one
    generator continued across steps yields the same corpus as one long run."""
    p = _zipf()
    for d in count() if n_docs is None else range(n_docs):
        words = rng.choice(len(VOCAB), size=(CHUNKS_PER_DOC, WORDS_PER_CHUNK), p=p)
        vecs = _unit_vectors(rng, CHUNKS_PER_DOC)
        yield (
            f"synth:{d}",
            f"synthetic {d}",
            [" ".join(VOCAB[w] for w in row) for row in words],
            vecs,
        )


def synthetic_queries(rng: np.random.Generator, n: int = 2000) -> list[str]:
    """Four words each from the mid-frequency range (ranks 50..5000), like real keyword
    queries: Zipf-sampled queries are mostly stopword-like terms that match every chunk."""
    return [" ".join(VOCAB[w] for w in rng.integers(50, len(VOCAB), size=4)) for _ in range(n)]


def _unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs


def scifact_docs(
    rng: np.random.Generator, scifact: Path, n_docs: int | None = None
) -> Iterator[SynthDoc]:
    """Documents ``synth:0``, ... whose 8 children are each ``WORDS_PER_CHUNK`` consecutive
    words of one SciFact abstract (random abstract, random start; abstracts joined end to
    end) and whose title is a random SciFact title; vectors are random unit vectors (no
    embedder runs). Endless when ``n_docs`` is None, like ``synthetic_docs``."""
    titles: list[str] = []
    words: list[str] = []
    with (scifact / "corpus.jsonl").open() as fh:
        for line in fh:
            d = json.loads(line)
            titles.append(d.get("title") or "")
            words.extend((d.get("text") or "").split())
    span = len(words) - WORDS_PER_CHUNK
    for d in count() if n_docs is None else range(n_docs):
        starts = rng.integers(0, span, size=CHUNKS_PER_DOC)
        title = titles[int(rng.integers(len(titles)))]
        yield (
            f"synth:{d}",
            title,
            [" ".join(words[s : s + WORDS_PER_CHUNK]) for s in starts],
            _unit_vectors(rng, CHUNKS_PER_DOC),
        )


def scifact_queries(scifact: Path) -> list[str]:
    """SciFact's train claims, in file order."""
    with (scifact / "queries.jsonl").open() as fh:
        return [json.loads(line)["text"] for line in fh]
