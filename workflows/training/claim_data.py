"""Claim-checking examples for the reader (#46): (claim, evidence, label) made from training passages.

The passages are CMRC 2018's (CC BY-SA 4.0, the one commercial reading-comprehension source),
minus the articles the claim benchmark holds out (`is_reader_bench_title`); articles go to valid
by the pair trainer's title hash (pair_data.split_of_title). Claims come from the benchmark's
own generator (workflows/evaluation/perturbations.py) restricted to TRAINING_FAMILIES, so the two
held-out families (entity swap, date change) are never seen in training and the benchmark
measures whether the checker generalises to them. Per passage, besides the generated items: one
of its own sentences verbatim (supported) and sentences of other passages (not enough info).

Two things keep the checker reading the evidence rather than the claim alone (measured on answers to
a KB's own probes, docs/models.md: a checker without them rejected verbatim quotes that hold 不 or
没, and quotes an answer had framed with its product's name or "有用户评价称："):
- minimal pairs: every contradiction's own sentence, unchanged, as a supported example beside it,
  so a word like 不 in a claim decides nothing unless the evidence says otherwise;
- answer framing: a share of the claims, of every label alike, opened the way answers open a quote
  (claim_reader.ANSWER_FRAMES: the passage's title, a source, a user's voice), which therefore says nothing
  about the label.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from citescope.agents.claim_reader import ANSWER_FRAMES, LABELS
from citescope.workflows.evaluation.perturbations import TRAINING_FAMILIES, Passage, factual_sentences, generate
from citescope.workflows.evaluation.reader_holdout import is_reader_bench_title
from citescope.workflows.training.pair_data import SOURCES, read_rows, split_of_title

SOURCE = SOURCES["cmrc2018"]
LABEL_INDEX = {label: index for index, label in enumerate(LABELS)}
UNRELATED_PER_PASSAGE = 2
FRAMED_SHARE = 0.3  # of every label's claims


@dataclass(frozen=True)
class ClaimExample:
    claim: str
    evidence: str  # the whole passage; the model reads claim_reader.evidence_window of it
    label: int  # index into claim_reader.LABELS
    family: str  # the generator family, "verbatim", "original" (a contradiction's own sentence) or "unrelated"


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
        split[part].append(Passage(passage_id, row["context"], SOURCE.name, row.get("title", "")))
        counts[part] += 1
    return split, dict(counts)


def claim_examples(passages: list[Passage], seeds: list[int]) -> list[ClaimExample]:
    """Generated items for every seed (each seed picks other sentences), each contradiction with its
    own sentence beside it (supported); then per passage one verbatim sentence and
    UNRELATED_PER_PASSAGE sentences of other passages; FRAMED_SHARE of them framed as an answer
    frames a quote; in a seeded order. No (claim, passage, label) twice."""
    by_id = {p.passage_id: p for p in passages}
    supported, contradicted = LABEL_INDEX["supported"], LABEL_INDEX["contradicted"]
    examples = []
    for seed in seeds:
        for item in generate(passages, seed=seed, families=TRAINING_FAMILIES).items:
            text = by_id[item.evidence_id].text
            examples.append(ClaimExample(item.claim, text, LABEL_INDEX[item.label], item.family))
            if LABEL_INDEX[item.label] == contradicted:
                examples.append(ClaimExample(item.sentence, text, supported, "original"))
    rng = random.Random(f"claims:{seeds}")
    sentences = [(p.passage_id, s) for p in passages for s in factual_sentences(p.text)]
    for passage in passages:
        own = factual_sentences(passage.text)
        if own:
            examples.append(ClaimExample(rng.choice(own), passage.text, supported, "verbatim"))
        for _ in range(UNRELATED_PER_PASSAGE):
            other_id, sentence = rng.choice(sentences)
            if other_id != passage.passage_id:
                label = LABEL_INDEX["not_enough_info"]
                examples.append(ClaimExample(sentence, passage.text, label, "unrelated"))
    titles = {p.text: p.title for p in passages}
    examples = [framed(e, titles[e.evidence], rng) if rng.random() < FRAMED_SHARE else e for e in examples]
    examples = list({(e.claim, e.evidence, e.label): e for e in examples}.values())
    rng.shuffle(examples)
    return examples


def framed(example: ClaimExample, title: str, rng: random.Random) -> ClaimExample:
    """The claim opened by one of ANSWER_FRAMES (one without the title when the passage has none)."""
    frames = [f for f in ANSWER_FRAMES if title or "{title}" not in f]
    frame = rng.choice(frames).format(title=title)
    return ClaimExample(frame + example.claim, example.evidence, example.label, example.family)
