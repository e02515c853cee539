"""ONNX Runtime embedding: the model's safetensors weights as an ONNX graph, no torch.

``onnx_artifact`` builds, from the model directory's ``model.safetensors`` and
``config.json``, one ONNX graph computing the transformer with the model's own mean
pooling and L2 normalisation (``ragline.embedding.onnx_graph``: the ``onnx`` package's
helpers, no torch); ``int8-dynamic`` (the default ``onnx-int8``) quantizes it
dynamically with ONNX Runtime's quantizer (per channel, reduced range), ``int8``
(``onnx-int8-static``) statically from ranges stored with the package
(``ragline.embedding.quantize``: batch-independent, so it batches; measured slower than
the dynamic one run one text per call, docs/benchmarks.md); ``int8-fused``
(``onnx-int8-fused``) quantizes dynamically the graph built with ONNX Runtime's contrib
``Attention`` and runs it, one text per call, without the SkipLayerNormalization fusion
(its kernel measured ~4x slower than Add + LayerNormalization), the FFN inputs' outlier
channels (stored with the package, ``quantize.outliers_path``) computed in fp32 beside
the int8 MatMuls: its own embedding space.
Same inputs, same bytes: each file's SHA-256 is recorded next to it at build
(``<file>.sha256``) and checked on every load, a mismatch refuses to start, and the
checksum is part of the revision chunks and caches record (``artifact_revision``), so a
changed artifact is another embedding space. Files are cached under
``<dir>/<revision>-<builder>/``, written atomically, so replicas sharing a directory and
an image that builds at image build time (deploy/Dockerfile) reuse one build.

``OnnxEmbedder`` tokenizes once with the model's own ``tokenizer.json`` (the chunker's
tokenizer), cuts a batch into calls of texts of about one length (``length_buckets``:
little padding) and feeds token ids to the session (int8-dynamic: one text per run, so
a vector never depends on its batch neighbours; ``parallel`` such runs at once, each on
one core with one intra-op thread: small GEMMs split badly over two threads, so two texts
side by side beat one text on two threads, and the vectors are the same bytes):
``encode_ids`` takes pre-tokenized input. Output contract: the ``Embedder`` one
(L2-normalised float32 rows, the model's dimension, ``name``/``revision``/``dim``).

    python -m ragline.embedding.onnx_backend [DIR]   # pre-build every variant (images)
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from numpy.typing import NDArray

from ragline.embedding.model import (
    DEFAULT_MODEL_NAME,
    EmbedderIdentity,
    default_model_path,
    model_revision,
)
from ragline.embedding.onnx_graph import OUTLIER_ROWS, build_bert_graph
from ragline.embedding.settings import usable_cpus
from ragline.errors import ConfigError
from ragline.fsutil import file_lock, file_sha256

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "BACKENDS",
    "BATCH_INDEPENDENCE_ATOL",
    "BATCH_TOKENS",
    "ONNX_FILES",
    "OnnxArtifact",
    "OnnxEmbedder",
    "artifact_revision",
    "batch_dependence",
    "configured_revision",
    "default_onnx_dir",
    "export_onnx",
    "fused_linear_ops",
    "length_buckets",
    "load_tokenizer",
    "onnx_artifact",
    "quantize_fused",
    "run_concurrently",
    "variant_of",
    "verify_artifact",
]

_log = logging.getLogger(__name__)

T = TypeVar("T")

# file name of each variant inside ``<dir>/<revision>-<builder>/``: int8 is the static,
# batch-independent quantization (embedding/quantize.py), int8-dynamic the per-call one
ONNX_FILES = {
    "fp32": "model.onnx",
    "int8": "model_int8_static.onnx",
    "int8-dynamic": "model_int8.onnx",
    # a new name when its recipe changed (outlier channels split off, issue 35): a
    # cache directory holding the earlier recipe's file never serves it for this one
    "int8-fused": "model_int8_fused_outliers.onnx",
}
# the backend name of each variant (RAGLINE_EMBEDDER_BACKEND)
# (the default onnx-int8 stays the dynamic one: measured on a quiet machine, the static
# variant batched ran at 0.77x of it one text per call, docs/benchmarks.md)
BACKENDS = {
    "fp32": "onnx",
    "int8": "onnx-int8-static",
    "int8-dynamic": "onnx-int8",
    "int8-fused": "onnx-int8-fused",
}
# the tag the revision records: the dynamic variant keeps the tag it always had
_TAGS = {"fp32": "onnx", "int8": "int8s", "int8-dynamic": "int8", "int8-fused": "int8f"}
# quantized per call (dynamic): a vector depends on its batch neighbours, one text per call
_PER_CALL_SCALES = frozenset({"int8-dynamic", "int8-fused"})
# ONNX Runtime fusions a variant runs without (its vectors are measured that way): the
# fused variant keeps residual Add + LayerNormalization, whose kernels ran ~4x faster
# than the SkipLayerNormalization they would be fused into (docs/benchmarks.md)
_DISABLED_FUSIONS = {"int8-fused": ["SkipLayerNormFusion"]}
# The most one component of a text's vector may move between the text embedded alone
# and inside any batch (other texts, other lengths, other order) with the fp32 and static
# int8 variants: the GEMMs' float summation order changes with the batch shape (measured
# up to ~1.2e-7); the per-batch dynamic quantization moves it by up to ~4e-2. Vector
# comparisons (embedding cache, chaos runs) use this bound
# (tests/unit/embedding/test_batch_independence.py).
BATCH_INDEPENDENCE_ATOL = 1e-5
# texts of about one length per model call: a call holds at most this many word
# pieces, padding included (64 texts of 64 pieces, 16 of 256)
BATCH_TOKENS = 4096
# the graph builder's generation: a directory of its own, so files of another builder
# (the torch exports before it) are never taken for its output
BUILDER = "g1"


def default_onnx_dir() -> Path:
    """``$XDG_CACHE_HOME/ragline/onnx`` (the image sets XDG_CACHE_HOME=/cache), else
    ``~/.cache/ragline/onnx``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragline" / "onnx"


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


def _atomic_write(src: Path, dest: Path) -> None:
    """Move ``src`` (same directory tree) into place, readable by an image's service user."""
    os.chmod(src, 0o644)
    os.replace(src, dest)


def _quantize_static(src: Path, dest: Path, base_revision: str) -> None:
    import onnx

    from ragline.embedding.quantize import calibration_path, load_ranges, quantize_static

    model = quantize_static(onnx.load(str(src)), load_ranges(calibration_path(base_revision)))
    onnx.checker.check_model(model)
    dest.write_bytes(model.SerializeToString(deterministic=True))


def fused_linear_ops(path: Path) -> list[str]:
    """The weight names of the fused graph's linear ops (the packed Q/K/V of each
    ``Attention``, every ``MatMul`` by a weight), in graph order: how an op is named for
    ``quantize_fused`` (node names are counters of the builder, weight names the model's)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    return [
        n.input[1]
        for n in model.graph.node
        if n.op_type in ("Attention", "MatMul") and len(n.input) > 1 and n.input[1] in inits
    ]


def quantize_fused(src: Path, dest: Path, keep_fp32: Sequence[str] = ()) -> None:
    """``_quantize_dynamic`` of the fused graph, the linear ops whose weight is named in
    ``keep_fp32`` left in fp32, and always the outlier channels' own MatMuls (weights
    ``*.outlier_rows``, ``build_bert_graph(outliers=...)``): the point of the split."""
    import onnx

    want = set(keep_fp32)
    model = onnx.load(str(src), load_external_data=False)
    nodes = [n.name for n in model.graph.node if len(n.input) > 1 and n.input[1] in want]
    if len(nodes) != len(want):
        raise ConfigError(f"{src}: no linear op for some of {sorted(want)}")
    nodes += [
        n.name
        for n in model.graph.node
        if n.op_type == "MatMul" and n.input[1].endswith(OUTLIER_ROWS)
    ]
    _quantize_dynamic(src, dest, nodes)


def _quantize_dynamic(src: Path, dest: Path, exclude: Sequence[str] = ()) -> None:
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # the quantizer logs a pre-processing hint at WARNING on the root logger every run
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        quantize_dynamic(
            str(src),
            str(dest),
            weight_type=QuantType.QInt8,
            per_channel=True,  # per-tensor int8 measured cosine 0.90 against torch; this 0.99
            reduce_range=True,  # 7-bit weights: no u8s8 saturation on CPUs without VNNI
            nodes_to_exclude=list(exclude),
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
    finally:
        root.setLevel(level)


@dataclass(frozen=True)
class OnnxArtifact:
    """A built ONNX file and the SHA-256 its build recorded (checked on every load)."""

    path: Path
    sha256: str


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _record(path: Path) -> None:
    """Write ``<file>.sha256`` (atomically): the checksum the file is checked against."""
    side = _sidecar(path)
    tmp = side.with_name(f".{side.name}.tmp")
    tmp.write_text(f"{file_sha256(path)}  {path.name}\n")
    _atomic_write(tmp, side)


def verify_artifact(path: Path) -> OnnxArtifact:
    """The file's SHA-256 against the one recorded when it was built; a tampered,
    truncated or unrecorded file is a :class:`ConfigError` naming both."""
    side = _sidecar(path)
    try:
        want = side.read_text().split()[0]
    except (OSError, IndexError) as exc:
        raise ConfigError(
            f"{path}: no recorded checksum ({side}); delete {path.parent} to rebuild"
        ) from exc
    got = file_sha256(path) if path.is_file() else "(missing)"
    if got != want:
        raise ConfigError(
            f"{path}: sha256 {got}, expected {want} (recorded at build in {side}): the "
            f"file is corrupt, truncated or was replaced; delete {path.parent} to rebuild"
        )
    return OnnxArtifact(path=path, sha256=want)


def export_onnx(
    model_dir: Path, out_dir: Path, revision: str, *, int8: bool = False, variant: str = ""
) -> Path:
    """The built file for ``revision`` (created if missing, checked either way)."""
    return onnx_artifact(model_dir, out_dir, revision, int8=int8, variant=variant).path


def _variant(int8: bool, variant: str) -> str:
    name = variant or ("int8" if int8 else "fp32")
    if name not in ONNX_FILES:
        raise ConfigError(f"unknown onnx variant {name!r}: one of {sorted(ONNX_FILES)}")
    return name


def onnx_artifact(
    model_dir: Path, out_dir: Path, revision: str, *, int8: bool = False, variant: str = ""
) -> OnnxArtifact:
    """The ONNX graph of ``model_dir`` (``variant``: fp32, int8 = static or int8-dynamic,
    quantized from fp32; ``int8=True`` is the static one) under
    ``<out_dir>/<revision>-<builder>/``, built from ``model.safetensors`` without torch
    when not recorded yet (seconds; a file without a record, e.g. an interrupted build,
    is rebuilt), its SHA-256 recorded next to it and checked on every call."""
    _check_pooling(model_dir)
    name = _variant(int8, variant)
    target_dir = out_dir / f"{revision}-{BUILDER}"
    wanted = target_dir / ONNX_FILES[name]
    if _sidecar(wanted).is_file():  # recorded: built and complete
        return verify_artifact(wanted)
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the onnx export directory {target_dir}: {exc}") from exc
    # services starting together (embedder, query) build once: the others wait, then check
    with file_lock(out_dir / f".{target_dir.name}.lock"):
        if not _sidecar(wanted).is_file():
            _build(model_dir, target_dir, wanted, name, revision)
    return verify_artifact(wanted)


def _build(model_dir: Path, target_dir: Path, wanted: Path, variant: str, revision: str) -> None:
    fp32 = target_dir / ONNX_FILES["fp32"]
    with tempfile.TemporaryDirectory(dir=target_dir, prefix=".export-") as tmp_s:
        tmp = Path(tmp_s)
        if not _sidecar(fp32).is_file():
            build_bert_graph(model_dir, tmp / "fp32.onnx")
            _atomic_write(tmp / "fp32.onnx", fp32)
            _record(fp32)  # last: a recorded file is a complete one
        if variant != "fp32":
            verify_artifact(fp32)  # never quantize a damaged fp32 file
            if variant == "int8":
                _quantize_static(fp32, tmp / "int8.onnx", revision)
            elif variant == "int8-fused":  # its own fp32 graph: contrib Attention
                from ragline.embedding.quantize import load_outliers, outliers_path

                # the FFN inputs' outlier channels (stored with the package) in fp32
                outliers = load_outliers(outliers_path(revision))
                build_bert_graph(model_dir, tmp / "fused.onnx", fused=True, outliers=outliers)
                quantize_fused(tmp / "fused.onnx", tmp / "int8.onnx")
            else:
                _quantize_dynamic(fp32, tmp / "int8.onnx")
            _atomic_write(tmp / "int8.onnx", wanted)
            _record(wanted)


def artifact_revision(base: str, variant: str, sha256: str) -> str:
    """The revision chunks and caches record: the weights' revision, the variant and the
    artifact's own checksum (a rebuilt file with other bytes is another embedding space,
    never a silent change of vectors)."""
    return f"{base}+{_TAGS[variant]}.{sha256[:16]}"


def configured_revision(
    location: str | None, backend: str, onnx_dir: Path | None = None
) -> tuple[Path | None, str]:
    """(model directory, revision) a backend will record for ``location`` (None: the
    default model), without starting a session (an ONNX artifact is built if missing)."""
    path = Path(location or default_model_path())
    if not path.is_dir():
        return None, "unversioned"
    base = model_revision(path)
    if backend == "torch":
        return path, base
    variant = variant_of(backend)
    art = onnx_artifact(path, onnx_dir or default_onnx_dir(), base, variant=variant)
    return path, artifact_revision(base, variant, art.sha256)


class OnnxEmbedder(EmbedderIdentity):
    """ONNX Runtime on CPU; construct it off the event loop (builds on first use)."""

    def __init__(
        self,
        model: str | None = None,
        *,
        int8: bool = False,
        variant: str = "",
        onnx_dir: Path | None = None,
        name: str | None = None,
        batch_size: int = 64,
        threads: int | None = None,
        rows_alone: bool | None = None,
        parallel: int = 1,
    ) -> None:
        """``rows_alone``: one text per ONNX call (default: the dynamic variant only).
        ``parallel``: texts run at once, each still alone in its own ONNX call, on the
        calling thread and ``parallel - 1`` helpers (``threads`` then defaults to 1)."""
        location = Path(model or default_model_path())
        if not location.is_dir():
            raise ConfigError(
                f"the onnx backend needs a local model directory, not {str(location)!r}"
            )
        base = model_revision(location)
        variant = _variant(int8, variant)
        self.variant = variant
        self.backend = BACKENDS[variant]
        # built if missing; its SHA-256 checked against the build's record before use
        art = onnx_artifact(location, onnx_dir or default_onnx_dir(), base, variant=variant)
        self._revision = artifact_revision(base, variant, art.sha256)
        self.sha256 = art.sha256
        self._name = name or (DEFAULT_MODEL_NAME if model is None else location.name)
        self._batch_size = batch_size
        # Dynamic int8 quantization scales each activation tensor by its own range, and
        # a batch is one tensor: a row's vector would depend on its batch neighbours
        # (and their padding), measured cosine down to 0.978 between the same text alone
        # and batched, so that variant runs one text per call. The static int8 and fp32
        # graphs have no cross-row term: batched (tests/unit/embedding/
        # test_batch_independence.py).
        self._rows_alone = variant in _PER_CALL_SCALES if rows_alone is None else rows_alone
        self._max_len = _max_seq_length(location)
        path = art.path
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
        if parallel < 1:
            raise ConfigError(f"parallel must be >= 1, not {parallel}")
        # several texts at once: each call on one core (small GEMMs split badly over two)
        self._parallel = parallel if self._rows_alone else 1
        if threads is None:
            # one text at a time: the CPUs this process may use (its affinity, its
            # container's CPU limit). ONNX Runtime's own default counts the host's cores:
            # a service pinned to one core ran two spinning threads there, 2x the CPU per
            # chunk (docs/benchmarks.md, issue 35), and a pod limited to one CPU on a large
            # node would run one thread per node core under the quota
            threads = 1 if self._parallel > 1 else usable_cpus()
        so.intra_op_num_threads = threads
        self.intra_op_threads = threads
        try:
            self._session = ort.InferenceSession(
                str(path),
                so,
                providers=["CPUExecutionProvider"],
                disabled_optimizers=_DISABLED_FUSIONS.get(variant, []),
            )
        except Exception as exc:  # a corrupt or truncated cached file
            raise ConfigError(f"cannot load {path}: {exc}; delete it to rebuild") from exc
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
        rows = [list(r[: self._max_len]) for r in ids]
        calls = length_buckets(
            [len(r) for r in rows], 1 if self._rows_alone else self._batch_size, BATCH_TOKENS
        )
        if self._parallel > 1 and len(calls) > 1:
            run_concurrently(
                lambda call: out.__setitem__(call, self._run([rows[i] for i in call])),
                calls[::-1],  # longest first: the last ones to finish are short
                self._parallel,
            )
            return out
        for call in calls:
            out[call] = self._run([rows[i] for i in call])
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


def run_concurrently(work: Callable[[T], object], items: Sequence[T], workers: int) -> None:
    """``work`` on every item, ``workers`` at a time: the calling thread and ``workers - 1``
    threads started for this call (they inherit its CPU priority: a bulk lane's call
    stays bulk, runtime/priority.py) take the next item in order; the first error is
    raised once all have stopped."""
    lock = threading.Lock()
    taken = 0
    errors: list[BaseException] = []

    def drain() -> None:
        nonlocal taken
        while True:
            with lock:
                if errors or taken == len(items):
                    return
                item = items[taken]
                taken += 1
            try:
                work(item)
            except BaseException as exc:  # re-raised in the caller
                with lock:
                    errors.append(exc)
                return

    helpers = [
        threading.Thread(target=drain, name="onnx-parallel", daemon=True)
        for _ in range(min(workers, len(items)) - 1)
    ]
    for t in helpers:
        t.start()
    drain()
    for t in helpers:
        t.join()
    if errors:
        raise errors[0]


def length_buckets(lengths: Sequence[int], max_rows: int, max_tokens: int) -> list[list[int]]:
    """Indices of ``lengths`` in model calls of texts of about one length: sorted by
    length, a call closes at ``max_rows`` texts or when its padded size (rows x longest)
    would pass ``max_tokens`` (padding stays within neighbours of similar length)."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    calls: list[list[int]] = []
    current: list[int] = []
    for i in order:
        width = max(1, lengths[i])  # sorted: the longest so far
        if current and (len(current) >= max_rows or (len(current) + 1) * width > max_tokens):
            calls.append(current)
            current = []
        current.append(i)
    if current:
        calls.append(current)
    return calls


def batch_dependence(embedder: OnnxEmbedder, texts: Sequence[str], *, seed: int = 0) -> float:
    """The largest |difference| of any vector component between each text embedded alone
    and inside batches of the others: in order, reversed, shuffled and in pairs (its
    neighbours change in every pass). ``<= BATCH_INDEPENDENCE_ATOL``: batch-independent."""
    alone = np.concatenate([embedder.encode([t]) for t in texts])
    n = len(texts)
    shuffled = list(np.random.default_rng(seed).permutation(n))
    orders = [list(range(n)), list(range(n))[::-1], [int(i) for i in shuffled]]
    worst = 0.0
    for order in orders:
        got = embedder.encode([texts[i] for i in order])
        worst = max(worst, float(np.abs(got - alone[order]).max()))
    for start in range(0, n - 1, 2):  # pairs: a short text padded to its longer neighbour
        pair = [shuffled[start], shuffled[start + 1]]
        got = embedder.encode([texts[i] for i in pair])
        worst = max(worst, float(np.abs(got - alone[pair]).max()))
    return worst


def variant_of(backend: str) -> str:
    """The ONNX variant of a backend name (``onnx``: fp32)."""
    for variant, name in BACKENDS.items():
        if name == backend:
            return variant
    raise ConfigError(f"{backend!r} is not an onnx backend: one of {sorted(BACKENDS.values())}")


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
    """Pre-build every variant for the configured model into DIR (image builds)."""
    from ragline.embedding.settings import EmbedderSettings

    args = list(sys.argv[1:] if argv is None else argv)
    cfg = EmbedderSettings()
    out = Path(args[0]) if args else (cfg.onnx_dir or default_onnx_dir())
    model_dir = Path(cfg.model or default_model_path())
    revision = model_revision(model_dir)
    for variant in ONNX_FILES:
        print(export_onnx(model_dir, out, revision, variant=variant))
    return 0


if __name__ == "__main__":
    sys.exit(main())
