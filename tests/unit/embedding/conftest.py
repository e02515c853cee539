"""The ONNX artifacts of the default model, built once per session (worker) into a
temporary directory without torch: fp32 ~2 s, int8 ~3 s more on a quiet machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragline.embedding.onnx_backend import OnnxEmbedder

_WORDS = [
    "vitamin",
    "deficiency",
    "fracture",
    "cohort",
    "randomized",
    "trial",
    "cytokine",
    "receptor",
    "kinase",
    "expression",
    "mortality",
    "placebo",
    "tumour",
    "cells",
    "mice",
    "protein",
    "binding",
    "signalling",
]

# lengths from empty to past the model's 256 word pieces, with a contextual header
MIXED_TEXTS = [
    "",
    "a",
    "Kafka consumer groups rebalance when a member leaves.",
    *(
        f"Title: study {n}\nSection: results\n\n"
        + " ".join(_WORDS[(n + i) % len(_WORDS)] for i in range(n))
        for n in (5, 17, 40, 90, 160, 230, 400)
    ),
]


@pytest.fixture(scope="session")
def mixed_texts() -> list[str]:
    return list(MIXED_TEXTS)


@pytest.fixture(scope="session")
def onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx")


@pytest.fixture(scope="session")
def fp32(onnx_dir: Path) -> OnnxEmbedder:
    return OnnxEmbedder(onnx_dir=onnx_dir, batch_size=4)


@pytest.fixture(scope="session")
def int8(onnx_dir: Path, fp32: OnnxEmbedder) -> OnnxEmbedder:
    return OnnxEmbedder(onnx_dir=onnx_dir, int8=True, batch_size=4)


@pytest.fixture(scope="session")
def int8_dynamic(onnx_dir: Path, fp32: OnnxEmbedder) -> OnnxEmbedder:
    """The previous default (dynamic int8, one text per call): the comparison variant."""
    return OnnxEmbedder(onnx_dir=onnx_dir, variant="int8-dynamic", batch_size=4)


@pytest.fixture(scope="session")
def int8_fused(onnx_dir: Path, fp32: OnnxEmbedder) -> OnnxEmbedder:
    """Dynamic int8 of the fused-attention graph, one text per call, two at once."""
    return OnnxEmbedder(onnx_dir=onnx_dir, variant="int8-fused", batch_size=4, parallel=2)
