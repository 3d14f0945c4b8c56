"""Text pairs for contrastive training, read from ../shared/training (its README's rules bind here).

Two kinds of source: paraphrase pairs (`paraphrase_pairs.jsonl`, label-1 rows: two questions that
mean the same) and reading comprehension (`mrc_train.jsonl`: a question with the sentence of its
passage that holds the answer). The default uses only the sources whose licences allow a shop's
commercial use (CMRC 2018, PAWS-X); the research-only ones need `research=True` and are never the
default. Splits: paraphrase rows carry their own `split`; mrc_train has none, so an article goes to
`valid` when a hash of its title falls in the first VALID_PERCENT (all its passages and questions
on one side), as the README asks ("hold out part of mrc_train.jsonl yourself"). The articles the
claim-check benchmark holds out (docs/reader.md) are dropped first.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from citescope.workflows.evaluation.reader_holdout import is_reader_bench_title

VALID_PERCENT = 5  # of mrc_train articles (titles), held out as that source's valid rows


@dataclass(frozen=True)
class PairSource:
    name: str
    kind: Literal["paraphrase", "mrc"]
    source_field: str  # the rows' `source` value in the file
    licence: str
    commercial: bool  # may the default (shipped) weights train on it


# Licences as ../shared/training/README.md states them.
SOURCES: dict[str, PairSource] = {
    s.name: s
    for s in (
        PairSource("pawsx_zh", "paraphrase", "pawsx_zh", "PAWS-X: free for any purpose, credit Google LLC", True),
        PairSource("cmrc2018", "mrc", "cmrc2018_train", "CC BY-SA 4.0 (CMRC 2018, HFL/iFLYTEK)", True),
        PairSource("afqmc", "paraphrase", "afqmc", "no licence stated; contest data, research use only", False),
        PairSource("atec", "paraphrase", "atec", "no licence stated; contest data, research use only", False),
        PairSource("atec_ccks", "paraphrase", "atec_ccks", "no licence stated; contest data, research use only", False),
        PairSource("bq", "paraphrase", "bq", "research use only (HIT licence agreement)", False),
        PairSource("lcqmc", "paraphrase", "lcqmc", "research use only (HIT licence agreement)", False),
        PairSource("oppo_xiaobu", "paraphrase", "oppo_xiaobu", "no licence stated; research use only", False),
        PairSource("squad2_zh", "mrc", "squad2_zh", "no licence stated (academic use)", False),
        PairSource("dureader_demo", "mrc", "dureader_demo", "Apache-2.0 as stated; web text, research use", False),
    )
}
COMMERCIAL_DEFAULT = tuple(name for name, source in SOURCES.items() if source.commercial)


@dataclass(frozen=True)
class TextPair:
    anchor: str  # always encoded as a query
    positive: str
    positive_is_query: bool  # a paraphrase is a query too; an answer sentence is a passage
    source: str


@dataclass(frozen=True)
class LabelledText:
    """A cross-encoder's example (workflows/training/cross_encoder_training.py): defined here, without
    torch, so the data makers and their tests need none."""

    text: str  # the two texts as the task lays them out (what the runtime reads)
    label: int  # index into the task's labels


def choose_sources(names: list[str], research: bool) -> list[PairSource]:
    """The sources by name, or a ValueError naming what is wrong (an unknown name, a research-only
    source without research=True)."""
    unknown = [name for name in names if name not in SOURCES]
    if unknown:
        raise ValueError(f"unknown source(s) {', '.join(unknown)}; known: {', '.join(SOURCES)}")
    if not names:
        raise ValueError("no source named")
    chosen = [SOURCES[name] for name in dict.fromkeys(names)]
    restricted = [s.name for s in chosen if not s.commercial]
    if restricted and not research:
        raise ValueError(f"{', '.join(restricted)}: research use only; add --research to train a research build")
    return chosen


def split_of_title(title: str) -> str:
    """Whole articles to one side, so no article's passages straddle train and valid."""
    digest = hashlib.sha1(title.encode("utf-8")).digest()
    return "valid" if int.from_bytes(digest[:4], "big") % 100 < VALID_PERCENT else "train"


_SENTENCE_END = re.compile(r"(?<=[。！？!?；;\n])")


def passage_sentences(context: str) -> list[str]:
    """The passage's sentences as answer_sentence cuts them, stripped, empty ones left out."""
    return [sentence.strip() for sentence in _SENTENCE_END.split(context) if sentence.strip()]


def answer_sentence(context: str, start: int) -> str:
    """The sentence of `context` that holds character `start` (sentences end at 。！？!?；; or a newline)."""
    offset = 0
    for sentence in _SENTENCE_END.split(context):
        if offset <= start < offset + len(sentence):
            return sentence.strip()
        offset += len(sentence)
    return ""


def data_file(data_dir: Path, name: str) -> Path:
    """`name` in data_dir, or its gzipped copy (`name.gz`, what `train carry` writes) when only that is there."""
    path = data_dir / name
    zipped = data_dir / f"{name}.gz"
    return zipped if not path.exists() and zipped.exists() else path


def read_rows(path: Path) -> Iterator[dict]:
    """The JSON lines of a training file (gzipped when its name ends in .gz), blank lines skipped."""
    path = data_file(path.parent, path.name)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def read_pairs(data_dir: Path, sources: list[PairSource]) -> tuple[dict[str, list[TextPair]], dict]:
    """{"train": [...], "valid": [...]} pairs of the sources, and per-source counts for the manifest.
    An mrc row whose title belongs to the claim-check benchmark (`is_reader_bench_title`,
    docs/reader.md) is dropped and counted as held out: that benchmark's passages are never trained on."""
    split: dict[str, list[TextPair]] = {"train": [], "valid": []}
    counts: dict[str, dict[str, int]] = {s.name: {"train": 0, "valid": 0, "held_out": 0} for s in sources}
    by_field = {s.source_field: s for s in sources}
    kinds = {s.kind for s in sources}
    if "paraphrase" in kinds:
        for row in read_rows(data_dir / "paraphrase_pairs.jsonl"):
            source = by_field.get(row["source"])
            if source is None or int(row["label"]) != 1:
                continue
            split[row["split"]].append(TextPair(row["a"], row["b"], True, source.name))
            counts[source.name][row["split"]] += 1
    if "mrc" in kinds:
        seen: set[tuple[str, str]] = set()
        for row in read_rows(data_dir / "mrc_train.jsonl"):
            source = by_field.get(row["source"])
            if source is None or not row.get("answers"):
                continue
            if is_reader_bench_title(row.get("title", "")):
                counts[source.name]["held_out"] += 1
                continue
            sentence = answer_sentence(row["context"], int(row["answers"][0]["start"]))
            if not sentence or (row["question"], sentence) in seen:
                continue
            seen.add((row["question"], sentence))
            part = split_of_title(row.get("title", ""))
            split[part].append(TextPair(row["question"], sentence, False, source.name))
            counts[source.name][part] += 1
    return split, counts


def manifest(data_dir: Path, sources: list[PairSource], counts: dict, seed: int, research: bool) -> dict:
    """What a run trained on, enough to rebuild its data: files with their sizes, sources with
    row counts and licences, the split rule, the seed, what was held out."""
    files = ["paraphrase_pairs.jsonl"] * any(s.kind == "paraphrase" for s in sources)
    files += ["mrc_train.jsonl"] * any(s.kind == "mrc" for s in sources)
    return {
        "data_dir": str(data_dir),
        "files": {path.name: path.stat().st_size for path in (data_file(data_dir, name) for name in files)},
        "build": "research (not for shipped weights)" if research else "commercial (default)",
        "sources": {
            s.name: {"kind": s.kind, "licence": s.licence, "commercial": s.commercial, **counts[s.name]}
            for s in sources
        },
        "pairs": "paraphrase: label-1 rows, their own split; mrc: (question, answer sentence of its passage), "
        f"articles (titles) hashed to valid at {VALID_PERCENT}%",
        "claim_check_holdout": "mrc rows whose title is in the reader benchmark's bucket "
        "(workflows/evaluation/reader_holdout.is_reader_bench_title) dropped: `held_out` per source",
        "seed": seed,
    }
