"""Claim-checking examples for the reader (#46): (claim, evidence, label) made from training passages.

The passages are CMRC 2018's (CC BY-SA 4.0, the one commercial reading-comprehension source),
minus the articles the claim benchmark holds out (`is_reader_bench_title`); articles go to valid
by the pair trainer's title hash (pair_data.split_of_title). Claims come from the benchmark's
own generator (workflows/evaluation/perturbations.py) restricted to TRAINING_FAMILIES, so the two
held-out families (entity swap, date change) are never seen in training and the benchmark
measures whether the checker generalises to them. Per passage, besides the generated items: one
of its own sentences verbatim (supported) and sentences of other passages (not enough info).
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from citescope.agents.claim_reader import LABELS
from citescope.workflows.evaluation.perturbations import TRAINING_FAMILIES, Passage, factual_sentences, generate
from citescope.workflows.evaluation.reader_holdout import is_reader_bench_title
from citescope.workflows.training.pair_data import SOURCES, read_rows, split_of_title

SOURCE = SOURCES["cmrc2018"]
LABEL_INDEX = {label: index for index, label in enumerate(LABELS)}
UNRELATED_PER_PASSAGE = 2


@dataclass(frozen=True)
class ClaimExample:
    claim: str
    evidence: str  # the whole passage; the model reads claim_reader.evidence_window of it
    label: int  # index into claim_reader.LABELS
    family: str  # the generator family, "verbatim" or "unrelated"


def read_passages(data_dir: Path) -> tuple[dict[str, list[Passage]], dict[str, int]]:
    """{"train": [...], "valid": [...]} distinct CMRC passages, and counts (held_out: benchmark rows)."""
    split: dict[str, list[Passage]] = {"train": [], "valid": []}
    seen: set[str] = set()
    counts = Counter[str]()
    for row in read_rows(data_dir / "mrc_train.jsonl"):
        if row.get("source") != SOURCE.source_field:
            continue
        if is_reader_bench_title(row.get("title", "")):
            counts["held_out"] += 1
            continue
        if row["context"] in seen:
            continue
        seen.add(row["context"])
        part = split_of_title(row.get("title", ""))
        passage_id = "cmrc-" + hashlib.sha1(row["context"].encode("utf-8")).hexdigest()[:12]
        split[part].append(Passage(passage_id, row["context"], SOURCE.name))
        counts[part] += 1
    return split, dict(counts)


def claim_examples(passages: list[Passage], seeds: list[int]) -> list[ClaimExample]:
    """Generated items for every seed (each seed picks other sentences), then per passage one
    verbatim sentence and UNRELATED_PER_PASSAGE sentences of other passages, in a seeded order."""
    text = {p.passage_id: p.text for p in passages}
    examples = [
        ClaimExample(item.claim, text[item.evidence_id], LABEL_INDEX[item.label], item.family)
        for seed in seeds
        for item in generate(passages, seed=seed, families=TRAINING_FAMILIES).items
    ]
    rng = random.Random(f"claims:{seeds}")
    sentences = [(p.passage_id, s) for p in passages for s in factual_sentences(p.text)]
    for passage in passages:
        own = factual_sentences(passage.text)
        if own:
            examples.append(ClaimExample(rng.choice(own), passage.text, LABEL_INDEX["supported"], "verbatim"))
        for _ in range(UNRELATED_PER_PASSAGE):
            other_id, sentence = rng.choice(sentences)
            if other_id != passage.passage_id:
                label = LABEL_INDEX["not_enough_info"]
                examples.append(ClaimExample(sentence, passage.text, label, "unrelated"))
    rng.shuffle(examples)
    return examples
