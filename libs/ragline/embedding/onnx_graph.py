"""A sentence-embedding ONNX graph built from a BERT's ``model.safetensors``, no torch.

``build_bert_graph`` writes, with the ``onnx`` package's helpers only, the graph a
sentence-transformers model of the form Transformer (BERT encoder) + mean Pooling +
Normalize computes: word/position/token-type embeddings + LayerNorm; per layer Q/K/V
projections, scaled dot-product attention over heads with the additive padding mask,
output projection + residual + LayerNorm, erf-GELU feed-forward + residual + LayerNorm;
masked mean pooling; L2 normalisation (opset 17). ``fused=True`` writes
the attention as ONNX Runtime's contrib ``Attention`` (packed Q/K/V projection, one
kernel for scores, softmax and context): not a standard ONNX graph, ONNX Runtime only.
Its inputs are ``input_ids``,
``attention_mask`` and ``token_type_ids`` (int64, ``[batch, sequence]``), its output
``sentence_embedding`` (float32, ``[batch, hidden]``).

The bytes depend on the weights, the config and this code only (no timestamps, no
random names, initializers in a fixed order): the same inputs build the same file, so
its SHA-256 identifies the artifact (tests/unit/embedding/test_onnx_graph.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragline.errors import ConfigError

__all__ = ["OUTLIER_ROWS", "BertShape", "build_bert_graph", "read_bert_shape"]

OPSET = 17
IR_VERSION = 8  # the oldest IR that carries opset 17: any ONNX Runtime of the range reads it
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "sentence_embedding"
_PRODUCER = "ragline.embedding.onnx_graph"
_CONTRIB = "com.microsoft"
# the suffix of an outlier-channel MatMul's weight (``build_bert_graph(outliers=...)``)
OUTLIER_ROWS = ".outlier_rows"
# torch.finfo(float32).min: the additive mask value of transformers' eager attention
_MASK_MIN = float(np.finfo(np.float32).min)


@dataclass(frozen=True)
class BertShape:
    layers: int
    hidden: int
    heads: int
    intermediate: int
    eps: float


def read_bert_shape(model_dir: Path) -> BertShape:
    """The encoder's sizes from ``config.json``; refuses what the graph does not compute."""
    try:
        conf = json.loads((model_dir / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {model_dir / 'config.json'}: {exc}") from exc
    if conf.get("model_type") != "bert" or conf.get("hidden_act", "gelu") != "gelu":
        raise ConfigError(
            f"{model_dir}: the torch-free ONNX builder supports BERT encoders with erf GELU, "
            f"not model_type={conf.get('model_type')!r} hidden_act={conf.get('hidden_act')!r}"
        )
    if conf.get("position_embedding_type", "absolute") != "absolute":
        raise ConfigError(f"{model_dir}: only absolute position embeddings are supported")
    shape = BertShape(
        layers=int(conf["num_hidden_layers"]),
        hidden=int(conf["hidden_size"]),
        heads=int(conf["num_attention_heads"]),
        intermediate=int(conf["intermediate_size"]),
        eps=float(conf.get("layer_norm_eps", 1e-12)),
    )
    if shape.hidden % shape.heads:
        raise ConfigError(f"{model_dir}: hidden size {shape.hidden} not divisible by heads")
    return shape


def _load_weights(model_dir: Path) -> dict[str, NDArray[Any]]:
    from safetensors.numpy import load_file

    file = model_dir / "model.safetensors"
    if not file.is_file():
        raise ConfigError(
            f"no model.safetensors in {model_dir}: the torch-free ONNX builder reads "
            "safetensors weights only"
        )
    raw = load_file(str(file))
    # a checkpoint saved from BertModel has no prefix, one from a task head "bert."
    return {k.removeprefix("bert."): v for k, v in raw.items()}


class _Graph:
    """Nodes and initializers with deterministic, readable names."""

    def __init__(
        self,
        weights: Mapping[str, NDArray[Any]],
        outliers: Mapping[str, Sequence[int]] | None = None,
    ) -> None:
        self.weights = weights
        self.outliers = outliers or {}
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._init_names: set[str] = set()
        self._n = 0

    def const(self, name: str, value: NDArray[Any]) -> str:
        from onnx import numpy_helper

        if name not in self._init_names:
            self._init_names.add(name)
            self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name=name))
        return name

    def array(self, key: str) -> NDArray[np.float32]:
        try:
            return self.weights[key].astype(np.float32)
        except KeyError as exc:
            raise ConfigError(f"model.safetensors has no tensor {key!r}") from exc

    def weight(self, key: str, *, transpose: bool = False) -> str:
        value = self.array(key)
        return self.const(key, value.T if transpose else value)

    def op(self, op_type: str, inputs: list[str], domain: str = "", **attrs: Any) -> str:
        from onnx import helper

        self._n += 1
        out = f"{op_type.lower()}_{self._n}"
        node = helper.make_node(op_type, inputs, [out], name=out, domain=domain or None, **attrs)
        self.nodes.append(node)
        return out

    def linear(self, x: str, prefix: str) -> str:
        key = f"{prefix}.weight"
        if key in self.outliers:
            return self._split_linear(x, prefix, sorted(self.outliers[key]))
        y = self.op("MatMul", [x, self.weight(key, transpose=True)])
        return self.op("Add", [y, self.weight(f"{prefix}.bias")])

    def _split_linear(self, x: str, prefix: str, channels: list[int]) -> str:
        """``x @ W.T + b`` as (x with the ``channels`` zeroed) @ W.T + b plus those
        channels alone @ their rows of W.T: the same product, but a quantizer of the
        first MatMul's input no longer sees the outlier channels (their MatMul's weight
        ``<prefix>.weight.outlier_rows`` is kept fp32 by ``quantize_fused``)."""
        key = f"{prefix}.weight"
        w = self.array(key).T  # [in, out]
        if not channels or max(channels) >= w.shape[0] or min(channels) < 0:
            raise ConfigError(f"outlier channels {channels} out of range for {key}")
        mask = np.ones(w.shape[0], dtype=np.float32)
        mask[channels] = 0.0
        inliers = self.op("Mul", [x, self.const(f"{key}.inlier_mask", mask)])
        y = self.op("MatMul", [inliers, self.const(key, np.ascontiguousarray(w))])
        y = self.op("Add", [y, self.weight(f"{prefix}.bias")])
        picked = self.op(
            "Gather", [x, self.const(f"{key}.outlier_index", _i64(*channels))], axis=-1
        )
        rows = self.const(f"{key}{OUTLIER_ROWS}", np.ascontiguousarray(w[channels, :]))
        return self.op("Add", [y, self.op("MatMul", [picked, rows])])

    def layer_norm(self, x: str, prefix: str, eps: float) -> str:
        return self.op(
            "LayerNormalization",
            [x, self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")],
            axis=-1,
            epsilon=eps,
        )


def _i64(*values: int) -> NDArray[np.int64]:
    return np.array(values, dtype=np.int64)


def _f32(value: float) -> NDArray[np.float32]:
    return np.array(value, dtype=np.float32)


def _fused_attention(g: _Graph, x: str, mask_index: str, i: int, s: BertShape) -> str:
    """ONNX Runtime's contrib ``Attention``: Q/K/V as one packed projection, the scaled
    dot-product and softmax over heads in one kernel (the raw 0/1 mask as ``mask_index``)."""
    pre = f"encoder.layer.{i}.attention"
    parts = [f"{pre}.self.{n}" for n in ("query", "key", "value")]
    # [hidden, 3 * hidden]: the three projections side by side (x @ W.T each)
    qkv_w = g.const(
        f"{pre}.self.qkv.weight", np.concatenate([g.array(f"{p}.weight").T for p in parts], axis=1)
    )
    qkv_b = g.const(f"{pre}.self.qkv.bias", np.concatenate([g.array(f"{p}.bias") for p in parts]))
    ctx = g.op("Attention", [x, qkv_w, qkv_b, mask_index], domain=_CONTRIB, num_heads=s.heads)
    out = g.linear(ctx, f"{pre}.output.dense")
    return g.layer_norm(g.op("Add", [out, x]), f"{pre}.output.LayerNorm", s.eps)


def _attention(g: _Graph, x: str, mask: str, i: int, s: BertShape) -> str:
    pre = f"encoder.layer.{i}.attention"
    head = s.hidden // s.heads
    split = g.const("shape_heads", _i64(0, 0, s.heads, head))
    merge = g.const("shape_hidden", _i64(0, 0, s.hidden))

    def heads(name: str, perm: list[int]) -> str:
        return g.op(
            "Transpose", [g.op("Reshape", [g.linear(x, f"{pre}.self.{name}"), split])], perm=perm
        )

    q = heads("query", [0, 2, 1, 3])  # [B, H, S, d]
    k = heads("key", [0, 2, 3, 1])  # [B, H, d, S]
    v = heads("value", [0, 2, 1, 3])
    scores = g.op("Mul", [g.op("MatMul", [q, k]), g.const("attn_scale", _f32(head**-0.5))])
    probs = g.op("Softmax", [g.op("Add", [scores, mask])], axis=-1)
    ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    out = g.linear(g.op("Reshape", [ctx, merge]), f"{pre}.output.dense")
    return g.layer_norm(g.op("Add", [out, x]), f"{pre}.output.LayerNorm", s.eps)


def _feed_forward(g: _Graph, x: str, i: int, s: BertShape) -> str:
    pre = f"encoder.layer.{i}"
    h = g.linear(x, f"{pre}.intermediate.dense")
    # erf GELU: 0.5 * h * (1 + erf(h / sqrt(2))) (opset 17 has no Gelu operator)
    erf = g.op("Erf", [g.op("Div", [h, g.const("sqrt2", _f32(2.0**0.5))])])
    gelu = g.op(
        "Mul",
        [
            g.op("Mul", [h, g.op("Add", [erf, g.const("one", _f32(1.0))])]),
            g.const("half", _f32(0.5)),
        ],
    )
    out = g.linear(gelu, f"{pre}.output.dense")
    return g.layer_norm(g.op("Add", [out, x]), f"{pre}.output.LayerNorm", s.eps)


def _graph(
    weights: Mapping[str, NDArray[Any]],
    s: BertShape,
    *,
    fused: bool = False,
    outliers: Mapping[str, Sequence[int]] | None = None,
) -> Any:
    from onnx import TensorProto, helper

    g = _Graph(weights, outliers)
    ids, mask_in, types = INPUTS
    # embeddings: word + position (0..S-1) + token type, LayerNorm
    seq = g.op(
        "Slice", [g.op("Shape", [ids]), g.const("idx_1", _i64(1)), g.const("idx_2", _i64(2))]
    )
    positions = g.op(  # rows 0..S-1 of the position table: [S, hidden]
        "Slice",
        [
            g.weight("embeddings.position_embeddings.weight"),
            g.const("idx_0", _i64(0)),
            seq,
            g.const("idx_0", _i64(0)),
        ],
    )
    emb = g.op(
        "Add",
        [
            g.op(
                "Add",
                [g.op("Gather", [g.weight("embeddings.word_embeddings.weight"), ids]), positions],
            ),
            g.op("Gather", [g.weight("embeddings.token_type_embeddings.weight"), types]),
        ],
    )
    x = g.layer_norm(emb, "embeddings.LayerNorm", s.eps)
    mask_f = g.op("Cast", [mask_in], to=TensorProto.FLOAT)
    if fused:  # the raw 0/1 mask [B, S] as the Attention kernel's mask_index
        mask_index = g.op("Cast", [mask_in], to=TensorProto.INT32)
        for i in range(s.layers):
            x = _feed_forward(g, _fused_attention(g, x, mask_index, i, s), i, s)
    else:  # additive mask [B, 1, 1, S]: 0 where attended, float32 min where padded
        inverted = g.op("Sub", [g.const("one", _f32(1.0)), mask_f])
        additive = g.op("Mul", [inverted, g.const("mask_min", _f32(_MASK_MIN))])
        mask = g.op("Unsqueeze", [additive, g.const("axes_1_2", _i64(1, 2))])
        for i in range(s.layers):
            x = _feed_forward(g, _attention(g, x, mask, i, s), i, s)
    # masked mean pooling, then L2 normalisation (torch's clamps: 1e-9 count, 1e-12 norm)
    m = g.op("Unsqueeze", [mask_f, g.const("axes_last", _i64(-1))])
    axis1 = g.const("axes_1", _i64(1))
    summed = g.op("ReduceSum", [g.op("Mul", [x, m]), axis1], keepdims=0)
    count = g.op(
        "Max", [g.op("ReduceSum", [m, axis1], keepdims=0), g.const("count_floor", _f32(1e-9))]
    )
    mean = g.op("Div", [summed, count])
    norm = g.op(
        "Max", [g.op("ReduceL2", [mean], axes=[-1], keepdims=1), g.const("norm_floor", _f32(1e-12))]
    )
    g.nodes.append(helper.make_node("Div", [mean, norm], [OUTPUT], name="normalize"))

    int_in = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"]) for n in INPUTS
    ]
    out = helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", s.hidden])
    return helper.make_graph(g.nodes, "sentence_embedding", int_in, [out], initializer=g.inits)


def build_bert_graph(
    model_dir: Path,
    dest: Path,
    *,
    fused: bool = False,
    outliers: Mapping[str, Sequence[int]] | None = None,
) -> None:
    """Write the fp32 sentence-embedding graph of ``model_dir`` to ``dest`` (``fused``:
    attention as ONNX Runtime's contrib ``Attention``; ``outliers``: per linear layer's
    weight name, input channels computed by a MatMul of their own, see
    ``_Graph._split_linear``)."""
    import onnx
    from onnx import helper

    shape = read_bert_shape(model_dir)
    weights = _load_weights(model_dir)
    unknown = sorted(set(outliers or {}) - set(weights))
    if unknown:
        raise ConfigError(f"{model_dir}: outlier channels for unknown weights {unknown}")
    graph = _graph(weights, shape, fused=fused, outliers=outliers)
    opsets = [helper.make_opsetid("", OPSET)]
    if fused:
        opsets.append(helper.make_opsetid(_CONTRIB, 1))
    model = helper.make_model(
        graph,
        opset_imports=opsets,
        producer_name=_PRODUCER,
        producer_version="1",
        ir_version=IR_VERSION,
    )
    onnx.checker.check_model(model)
    dest.write_bytes(model.SerializeToString(deterministic=True))
