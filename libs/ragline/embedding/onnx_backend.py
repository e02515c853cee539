"""ONNX Runtime embedding: the packaged sentence-transformers weights exported offline.

``export_onnx`` traces the model directory's transformer (torch, no hub access) together
with the model's own mean pooling and L2 normalisation into one ONNX graph whose output
is the sentence embedding, fuses it for BERT with ONNX Runtime's transformer optimizer,
and for ``int8`` quantizes its weights dynamically (per channel, reduced range: accurate
on CPUs with or without VNNI). Files are cached under ``<dir>/<revision>/`` (the model
directory's content hash), written atomically, so replicas sharing a directory and an
image that pre-exports at build time (deploy/Dockerfile) all reuse one export.

``OnnxEmbedder`` tokenizes once with the model's own ``tokenizer.json`` (the chunker's
tokenizer), sorts a batch by length to cut padding, and feeds token ids to the session
(int8: one text per run, so a vector never depends on its batch neighbours):
``encode_ids`` takes pre-tokenized input. Output contract: the ``Embedder`` one
(L2-normalised float32 rows, the model's dimension, ``name``/``revision``/``dim``).

    python -m ragline.embedding.onnx_backend [DIR]   # pre-export fp32 + int8 (images)
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ragline.embedding.model import (
    DEFAULT_MODEL_NAME,
    EmbedderIdentity,
    default_model_path,
    model_revision,
)
from ragline.errors import ConfigError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "ONNX_FILES",
    "OnnxEmbedder",
    "default_onnx_dir",
    "export_onnx",
    "load_tokenizer",
    "onnx_revision",
]

_log = logging.getLogger(__name__)

# file name of each variant inside ``<dir>/<revision>/``
ONNX_FILES = {"fp32": "model.onnx", "int8": "model_int8.onnx"}
_OPSET = 17
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def default_onnx_dir() -> Path:
    """``$XDG_CACHE_HOME/ragline/onnx`` (the image sets XDG_CACHE_HOME=/cache), else
    ``~/.cache/ragline/onnx``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragline" / "onnx"


def onnx_revision(base: str, variant: str) -> str:
    """fp32 ONNX vectors equal torch's (cosine > 0.9999): same revision, shared cache.
    int8 vectors differ a little: their own revision, so the cache never mixes them."""
    return base if variant == "fp32" else f"{base}+{variant}"


def _max_seq_length(model_dir: Path) -> int:
    try:
        conf = json.loads((model_dir / "sentence_bert_config.json").read_text())
        return int(conf.get("max_seq_length") or 256)
    except (OSError, ValueError):
        return 256


def _check_pooling(model_dir: Path) -> None:
    """The graph does mean pooling + normalisation: refuse a model configured otherwise."""
    try:
        modules = json.loads((model_dir / "modules.json").read_text())
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{model_dir} is not a sentence-transformers directory") from exc
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v}
    if kinds[:2] != ["Transformer", "Pooling"] or modes != {"pooling_mode_mean_tokens"}:
        raise ConfigError(
            f"the onnx backend supports Transformer + mean Pooling (+ Normalize) models, "
            f"not {kinds} with {sorted(modes)}: use RAGLINE_EMBEDDER_BACKEND=torch"
        )


def _atomic_copy(src: Path, dest: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name, suffix=".tmp")
    os.close(fd)
    shutil.copyfile(src, tmp)
    os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide a build-time export from the service user
    os.replace(tmp, dest)


def _trace(model_dir: Path, dest: Path) -> None:
    """torch -> ONNX: transformer + masked mean pooling + L2 normalisation, one graph."""
    import torch
    from transformers import AutoModel

    class _SentenceEmbedding(torch.nn.Module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    bert = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    dummy = torch.ones((2, 8), dtype=torch.long)
    axes = {name: {0: "batch", 1: "sequence"} for name in _INPUTS}
    # the tracer warns about shape-derived Python values; they are constant per batch shape
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _SentenceEmbedding(bert),
            (dummy, dummy, torch.zeros_like(dummy)),
            str(dest),
            input_names=list(_INPUTS),
            output_names=["sentence_embedding"],
            dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=_OPSET,
            dynamo=False,
        )


def _optimize(src: Path, dest: Path, *, heads: int, hidden: int) -> None:
    """BERT fusions (attention, skip-layernorm, bias-gelu); the plain graph if they fail."""
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        optimize_model(
            str(src), model_type="bert", num_heads=heads, hidden_size=hidden
        ).save_model_to_file(str(dest))
    except Exception as exc:  # an optimizer that cannot fuse: the traced graph still works
        _log.warning("onnx fusion skipped", extra={"fields": {"error": type(exc).__name__}})
        shutil.copyfile(src, dest)


def _quantize(src: Path, dest: Path) -> None:
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(src),
        str(dest),
        weight_type=QuantType.QInt8,
        per_channel=True,  # per-tensor int8 measured cosine 0.90 against torch; this 0.99
        reduce_range=True,  # 7-bit weights: no u8s8 saturation on CPUs without VNNI
        extra_options={"DefaultTensorType": TensorProto.FLOAT},
    )


def export_onnx(model_dir: Path, out_dir: Path, revision: str, *, int8: bool) -> Path:
    """The cached export for ``revision`` (created if missing); returns the ONNX file."""
    _check_pooling(model_dir)
    target_dir = out_dir / revision
    fp32 = target_dir / ONNX_FILES["fp32"]
    wanted = target_dir / ONNX_FILES["int8" if int8 else "fp32"]
    if wanted.is_file():
        return wanted
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the onnx export directory {target_dir}: {exc}") from exc
    config = json.loads((model_dir / "config.json").read_text())
    with tempfile.TemporaryDirectory(dir=target_dir, prefix=".export-") as tmp_s:
        tmp = Path(tmp_s)
        if not fp32.is_file():
            _trace(model_dir, tmp / "traced.onnx")
            _optimize(
                tmp / "traced.onnx",
                tmp / "fused.onnx",
                heads=int(config.get("num_attention_heads", 12)),
                hidden=int(config.get("hidden_size", 384)),
            )
            _atomic_copy(tmp / "fused.onnx", fp32)
        if int8:
            _quantize(fp32, tmp / "int8.onnx")
            _atomic_copy(tmp / "int8.onnx", wanted)
    return wanted


class OnnxEmbedder(EmbedderIdentity):
    """ONNX Runtime on CPU; construct it off the event loop (exports on first use)."""

    def __init__(
        self,
        model: str | None = None,
        *,
        int8: bool = False,
        onnx_dir: Path | None = None,
        name: str | None = None,
        batch_size: int = 64,
        threads: int | None = None,
    ) -> None:
        location = Path(model or default_model_path())
        if not location.is_dir():
            raise ConfigError(
                f"the onnx backend needs a local model directory, not {str(location)!r}"
            )
        base = model_revision(location)
        variant = "int8" if int8 else "fp32"
        self.backend = "onnx-int8" if int8 else "onnx"
        self._revision = onnx_revision(base, variant)
        self._name = name or (DEFAULT_MODEL_NAME if model is None else location.name)
        self._batch_size = batch_size
        # Dynamic int8 quantization scales each activation tensor by its own range, and
        # a batch is one tensor: a row's vector would depend on its batch neighbours
        # (and their padding), measured cosine down to 0.978 between the same text alone
        # and batched. Run alone, a text's vector depends on its text only, as the
        # query's always did; on 2 cores it is also faster (no padding: 50 vs 41
        # chunks/s on SciFact, docs/benchmarks.md "Embedder backends").
        self._rows_alone = int8
        self._max_len = _max_seq_length(location)
        path = export_onnx(location, onnx_dir or default_onnx_dir(), base, int8=int8)
        self._tok = load_tokenizer(location)
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # no CPU memory arena: the arena keeps its high-water mark for the life of the
        # process (one large document: +4.3 GB kept with 256 long texts per call), while
        # without it the memory goes back after each call and the service returns to its
        # baseline; the calls were no slower (docs/benchmarks.md, issue 18)
        so.enable_cpu_mem_arena = False
        so.inter_op_num_threads = 1
        if threads is not None:
            so.intra_op_num_threads = threads
        try:
            self._session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a corrupt or truncated cached file
            raise ConfigError(f"cannot load {path}: {exc}; delete it to re-export") from exc
        self._input_names = {i.name for i in self._session.get_inputs()}
        dim = self._session.get_outputs()[0].shape[-1]
        self._dim = int(dim) if isinstance(dim, int) else int(config_dim(location))
        self.path = path

    @property
    def max_length(self) -> int:
        """Word pieces the model reads, [CLS] and [SEP] included (longer is truncated)."""
        return self._max_len

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids with [CLS]/[SEP], truncated to ``max_length`` (the model's input).
        A lone surrogate (no UTF-8 form: the tokenizer would raise) reads as U+FFFD."""
        return [e.ids for e in self._tok.encode_batch([_utf8_safe(t) for t in texts])]

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return self.encode_ids(self.tokenize(texts))

    def encode_ids(self, ids: Sequence[Sequence[int]]) -> NDArray[np.float32]:
        """Embed pre-tokenized input (``tokenize``'s output): no second tokenization."""
        out = np.zeros((len(ids), self._dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # less padding
        step = 1 if self._rows_alone else self._batch_size
        for start in range(0, len(order), step):
            rows = order[start : start + step]
            out[rows] = self._run([ids[i][: self._max_len] for i in rows])
        return out

    def _run(self, batch: list[Sequence[int]]) -> NDArray[np.float32]:
        width = max(1, max(len(r) for r in batch))
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for i, row in enumerate(batch):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        try:
            (vecs,) = self._session.run(["sentence_embedding"], feeds)
        except Exception as exc:  # onnxruntime raises its own (Fail, RuntimeException...)
            raise RuntimeError(f"onnx runtime failed: {type(exc).__name__}") from exc
        return np.asarray(vecs, dtype=np.float32)


def _utf8_safe(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def config_dim(model_dir: Path) -> int:
    return int(json.loads((model_dir / "config.json").read_text())["hidden_size"])


def load_tokenizer(model_dir: Path) -> Tokenizer:
    from tokenizers import Tokenizer

    file = model_dir / "tokenizer.json"
    if not file.is_file():
        raise ConfigError(f"no tokenizer.json in {model_dir}")
    tok = Tokenizer.from_file(str(file))
    tok.no_padding()  # padded per batch, after sorting by length
    tok.enable_truncation(max_length=_max_seq_length(model_dir))
    return tok


def main(argv: Sequence[str] | None = None) -> int:
    """Pre-export fp32 and int8 for the configured model into DIR (image builds)."""
    from ragline.embedding.settings import EmbedderSettings

    args = list(sys.argv[1:] if argv is None else argv)
    cfg = EmbedderSettings()
    out = Path(args[0]) if args else (cfg.onnx_dir or default_onnx_dir())
    model_dir = Path(cfg.model or default_model_path())
    revision = model_revision(model_dir)
    for int8 in (False, True):
        print(export_onnx(model_dir, out, revision, int8=int8))
    return 0


if __name__ == "__main__":
    sys.exit(main())
