"""Static int8 quantization of the sentence-embedding graph: batch-independent by design.

Dynamic quantization (ONNX Runtime's ``quantize_dynamic``) scales each activation tensor
by its own range at run time, and a batch is one tensor: a text's vector then depends on
its batch neighbours and their padding, so the dynamic model had to run one text per
call. Here every activation scale is a constant of the graph, calibrated once:

- **calibration**: the fp32 graph runs over a fixed set of real texts (SciFact chunks as
  the embedder sees them, header included, and short queries), **one text per run** (no
  padding ever enters a range), recording each linear layer input's minimum and maximum
  (``activation_ranges``), rounded outwards to float16 and stored as JSON
  (``calibration/<model revision>.json``, shipped with the package). The build reads
  them, so every machine builds the same bytes whatever its float arithmetic;
- **quantization**: activations u8 per tensor (asymmetric: post-GELU inputs are nearly
  non-negative), weights s8 per output channel with 7-bit range (no u8*s8 pair
  saturation on CPUs without VNNI, so every CPU computes the same integers); each
  ``MatMul`` + bias ``Add`` becomes ``QuantizeLinear`` + ``MatMulIntegerToFloat`` (ONNX
  Runtime's int8 GEMM, the kernel the dynamic model used, minus its per-call min/max).

Nothing in the graph depends on a row's neighbours: a batch is many independent rows
(tests/unit/embedding/test_batch_independence.py measures it). Measured on SciFact
chunks: docs/benchmarks.md "Int8 without batch dependence", docs/evaluation.md. A
SmoothQuant-style per-channel rescale (alpha 0.5) was tried and lost accuracy with 7-bit
weights (min cosine vs fp32 0.977 against 0.987 without); ONNX Runtime's own
``quantize_static`` (QDQ) re-quantizes every MatMul output and ran slower than this.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragline.errors import ConfigError

__all__ = [
    "ActivationRanges",
    "OutlierChannels",
    "activation_ranges",
    "calibration_path",
    "linear_groups",
    "load_outliers",
    "load_ranges",
    "outlier_channels",
    "outliers_path",
    "quantize_static",
    "save_outliers",
    "save_ranges",
]

# per linear-layer input tensor: (min, max) over the calibration texts
ActivationRanges = dict[str, tuple[float, float]]
# per linear layer's weight name: input channels computed apart (outliers)
OutlierChannels = dict[str, list[int]]

CALIBRATION_DIR = Path(__file__).with_name("calibration")
_CONTRIB = "com.microsoft"
_W_MAX = 63  # 7-bit weights: u8*s8 pairs never saturate int16 on AVX2 (no VNNI)


@dataclass(frozen=True)
class _Linear:
    matmul: Any  # the MatMul NodeProto
    add: Any  # its bias Add NodeProto
    weight: str
    bias: str


def linear_groups(model: Any) -> dict[str, list[_Linear]]:
    """Linear layers (``MatMul`` by an initializer + bias ``Add``) grouped by their input
    tensor, in graph order (Q/K/V share one input: one quantizer)."""
    inits = {i.name for i in model.graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in model.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    groups: dict[str, list[_Linear]] = {}
    for node in model.graph.node:
        if node.op_type != "MatMul" or node.input[1] not in inits:
            continue
        after = consumers.get(node.output[0], [])
        if len(after) != 1 or after[0].op_type != "Add" or after[0].input[1] not in inits:
            raise ConfigError(f"linear layer {node.name} has no single bias Add")
        groups.setdefault(node.input[0], []).append(
            _Linear(node, after[0], node.input[1], after[0].input[1])
        )
    return groups


def _linear_inputs(
    fp32_path: Path, rows: Iterable[Sequence[int]]
) -> Iterator[dict[str, NDArray[np.float32]]]:
    """Every linear layer's input (by tensor name) for each of ``rows`` (token ids), the
    fp32 graph run one text per run: padding never counts."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(fp32_path))
    names = list(linear_groups(model))
    for name in names:
        model.graph.output.append(
            onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
        )
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    seen = 0
    for row in rows:
        ids = np.array([list(row)], dtype=np.int64)
        feeds = {
            "input_ids": ids,
            "attention_mask": np.ones_like(ids),
            "token_type_ids": np.zeros_like(ids),
        }
        yield dict(zip(names, session.run(names, feeds), strict=True))
        seen += 1
    if not seen:
        raise ConfigError("no calibration rows")


def activation_ranges(fp32_path: Path, rows: Iterable[Sequence[int]]) -> ActivationRanges:
    """Min and max of every linear layer's input over ``rows`` (token ids, one text per
    run: padding never counts), rounded outwards to float16 (a stored, exact value)."""
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    for values in _linear_inputs(fp32_path, rows):
        for name, value in values.items():
            lo[name] = min(lo.get(name, 0.0), float(np.min(value)))
            hi[name] = max(hi.get(name, 0.0), float(np.max(value)))
    return {n: (_f16_down(lo[n]), _f16_up(hi[n])) for n in lo}


def outlier_channels(
    fp32_path: Path, rows: Iterable[Sequence[int]], factor: float
) -> OutlierChannels:
    """Per linear layer (its weight's name), the input channels whose largest magnitude
    over ``rows`` exceeds ``factor`` x the median channel's: the channels that set a
    per-tensor dynamic int8 scale (``build_bert_graph(outliers=...)`` computes them in
    fp32). Layers without such a channel are left out."""
    import onnx

    weights = {
        x: [lin.weight for lin in layers]
        for x, layers in linear_groups(onnx.load(str(fp32_path), load_external_data=False)).items()
    }
    peak: dict[str, NDArray[np.float32]] = {}
    for values in _linear_inputs(fp32_path, rows):
        for name, value in values.items():
            m = np.abs(value.reshape(-1, value.shape[-1])).max(axis=0)
            peak[name] = np.maximum(peak[name], m) if name in peak else m
    out: OutlierChannels = {}
    for name, m in peak.items():
        channels = [int(c) for c in np.nonzero(m > factor * float(np.median(m)))[0]]
        if channels:
            for w in weights[name]:
                out[w] = channels
    return out


def outliers_path(model_revision: str) -> Path:
    """The stored outlier channels of a model (the fused int8 variant's), shipped."""
    return CALIBRATION_DIR / f"{model_revision}.outliers.json"


def save_outliers(path: Path, channels: OutlierChannels, meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"meta": meta, "channels": channels}
    path.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")


def load_outliers(path: Path) -> OutlierChannels:
    """The stored channels (none for a model without a file: its fused variant is built
    without the split)."""
    try:
        data = json.loads(path.read_text())
        return {str(k): [int(c) for c in v] for k, v in data["channels"].items()}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot read the outlier channels {path}: {exc}") from exc


def _f16_up(value: float) -> float:
    v = np.float16(value)
    return float(v if float(v) >= value else np.nextafter(v, np.float16(np.inf)))


def _f16_down(value: float) -> float:
    return -_f16_up(-value)


def calibration_path(model_revision: str) -> Path:
    """The stored ranges of a model (by its weights' revision), shipped with the package."""
    return CALIBRATION_DIR / f"{model_revision}.json"


def save_ranges(path: Path, ranges: ActivationRanges, meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"meta": meta, "ranges": {k: list(v) for k, v in ranges.items()}}
    path.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")


def load_ranges(path: Path) -> ActivationRanges:
    try:
        data = json.loads(path.read_text())
        return {str(k): (float(v[0]), float(v[1])) for k, v in data["ranges"].items()}
    except FileNotFoundError as exc:
        raise ConfigError(
            f"no stored calibration ranges {path} for this model: the static int8 variant "
            "needs them (bench/quant_bench.py --calibrate writes them); use "
            "RAGLINE_EMBEDDER_BACKEND=onnx-int8 (dynamic) or onnx"
        ) from exc
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise ConfigError(f"cannot read the calibration ranges {path}: {exc}") from exc


def quantize_static(model: Any, ranges: ActivationRanges) -> Any:
    """The int8 graph of the fp32 ``model`` (an ``onnx.ModelProto``, changed in place and
    returned): each linear input quantized once (u8, the calibrated range), each weight
    per output channel (s8, 7 bits), each ``MatMul`` + bias ``Add`` one
    ``MatMulIntegerToFloat``."""
    from onnx import helper, numpy_helper

    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    groups = linear_groups(model)
    if set(groups) != set(ranges):
        raise ConfigError(
            "the calibration ranges do not match the graph's linear layers: "
            f"{len(ranges)} inputs recorded, {len(groups)} in the graph"
        )
    replaced: dict[str, list[Any]] = {}  # first MatMul's name -> the nodes replacing it
    dropped: set[str] = set()
    new_inits: list[Any] = []
    for x, layers in groups.items():
        lo, hi = min(ranges[x][0], 0.0), max(ranges[x][1], 0.0)
        a_scale = np.float32(max(hi - lo, 1e-8) / 255.0)
        a_zp = np.uint8(np.clip(round(-lo / float(a_scale)), 0, 255))
        scale, zero, xq = f"{x}_scale", f"{x}_zero_point", f"{x}_quantized"
        new_inits += [
            numpy_helper.from_array(np.array(a_scale, dtype=np.float32), scale),
            numpy_helper.from_array(np.array(a_zp, dtype=np.uint8), zero),
        ]
        nodes = [helper.make_node("QuantizeLinear", [x, scale, zero], [xq], name=f"{x}_quantize")]
        for lin in layers:
            w = numpy_helper.to_array(inits[lin.weight]).astype(np.float32)
            w_scale = (np.maximum(np.abs(w).max(axis=0), 1e-8) / _W_MAX).astype(np.float32)
            wq = np.clip(np.rint(w / w_scale), -_W_MAX, _W_MAX).astype(np.int8)
            new_inits += [
                numpy_helper.from_array(wq, f"{lin.weight}_quantized"),
                numpy_helper.from_array(w_scale, f"{lin.weight}_scale"),
            ]
            inputs = [xq, f"{lin.weight}_quantized", scale, f"{lin.weight}_scale", zero, "",
                      lin.bias]  # fmt: skip
            nodes.append(
                helper.make_node(
                    "MatMulIntegerToFloat",
                    inputs,
                    [lin.add.output[0]],
                    name=f"{lin.matmul.name}_int8",
                    domain=_CONTRIB,
                )
            )
            dropped.update({lin.matmul.name, lin.add.name})
        replaced[layers[0].matmul.name] = nodes
    out_nodes: list[Any] = []
    for node in graph.node:
        out_nodes += replaced.get(node.name, [])
        if node.name not in dropped:
            out_nodes.append(node)
    out_nodes = _skip_layer_norms(out_nodes)
    del graph.node[:]
    graph.node.extend(out_nodes)
    used = {i for n in out_nodes for i in n.input}
    kept = [i for i in graph.initializer if i.name in used] + new_inits
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(o.domain == _CONTRIB for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(_CONTRIB, 1))
    return model


def _skip_layer_norms(nodes: list[Any]) -> list[Any]:
    """Residual ``Add`` + ``LayerNormalization`` as one ``SkipLayerNormalization`` (ONNX
    Runtime fuses the pair itself in the fp32 and dynamic graphs, not after an
    ``MatMulIntegerToFloat``: written here, one pass over the activations less)."""
    from onnx import helper

    readers: dict[str, int] = {}
    for node in nodes:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    adds = {n.output[0]: n for n in nodes if n.op_type == "Add"}
    fused: dict[str, Any] = {}
    for node in nodes:
        add = adds.get(node.input[0]) if node.op_type == "LayerNormalization" else None
        if add is None or readers[add.output[0]] != 1 or len(node.output) != 1:
            continue
        eps = next((a.f for a in node.attribute if a.name == "epsilon"), 1e-5)
        fused[add.name] = None
        fused[node.name] = helper.make_node(
            "SkipLayerNormalization",
            [add.input[0], add.input[1], node.input[1], node.input[2]],
            [node.output[0]],
            name=f"{node.name}_skip",
            domain=_CONTRIB,
            epsilon=eps,
        )
    return [fused.get(n.name, n) for n in nodes if fused.get(n.name, n) is not None]
