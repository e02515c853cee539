"""Regenerate fixtures/reference_vectors.npz: sentence-transformers' vectors of TEXTS with
the default model (needs the torch extra; not a test):

    make install-torch && .venv/bin/python tests/unit/embedding/make_reference_vectors.py

The ONNX artifact is checked against these without torch (test_onnx_reference.py), and
against sentence-transformers live where torch is installed (`make test-torch`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

FIXTURE = Path(__file__).with_name("fixtures") / "reference_vectors.npz"

# short; between 128 and 256 word pieces (cut at 128 by tokenizer.json's own truncation:
# the trap); beyond 256 (truncated by the model); non-Latin scripts; empty-ish
_LONG = (
    "Microstructural development of human newborn cerebral white matter was assessed in "
    "vivo by diffusion tensor imaging, with apparent diffusion coefficients and relative "
    "anisotropy measured in the central white matter, the internal capsule and the corpus "
    "callosum of preterm infants imaged at term equivalent age and of full-term controls. "
)
TEXTS = [
    "Vitamin D deficiency is associated with increased risk of fractures.",
    "Kafka consumer groups rebalance when a member leaves.",
    "how many weeks of parental leave do employees get",
    _LONG * 2,  # ~150 word pieces
    _LONG * 3,  # ~225 word pieces
    _LONG * 8,  # ~600 word pieces: the model reads the first 256
    "word " * 600,
    "检索增强生成系统把文档切分成块，再为每一块计算向量。",
    "Система индексирования хранит векторы в PostgreSQL и тексты в OpenSearch.",
    "نظام الاسترجاع يعيد المستندات المسموح بها فقط",
    "émojis 🧬🧪 and RTL עברית and Ελληνικά",
    "",
    " ",
    "a",
    ".",
    "\u200b",
]


def main() -> int:
    from sentence_transformers import SentenceTransformer

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "libs"))
    import sentence_transformers
    import torch

    from ragline.embedding.model import default_model_path

    model = SentenceTransformer(default_model_path(), device="cpu")
    vecs = model.encode(TEXTS, batch_size=4, normalize_embeddings=True, convert_to_numpy=True)
    FIXTURE.parent.mkdir(exist_ok=True)
    np.savez_compressed(
        FIXTURE,
        texts=np.array(TEXTS),
        vectors=np.asarray(vecs, dtype=np.float32),
        made_with=np.array(
            f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}"
        ),
    )
    print(f"{FIXTURE}: {len(TEXTS)} vectors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
