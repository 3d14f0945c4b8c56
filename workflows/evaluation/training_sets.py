"""The sets `run.py calibrate` fits on, made from ../shared/training only (issue #46: nothing the product
ships is fitted on an evaluation question). Both may be used commercially:

- `cmrc2018_train`: the first CMRC_PASSAGES passages of CMRC 2018's training rows (CC BY-SA 4.0; Chinese
  Wikipedia with human questions), a fifth held out (mrc_kb.py). The self-probe design KB takes the last
  150 passages, so the two never share one.
- `pawsx_zh`: PAWS-X's training pairs (any use, credit Google): sentences found by their paraphrase among
  sentences sharing their words, a fifth held out (paraphrase_kb.py). The reranker's fit only.

Each is written once under `<eval root>/training-sets/` (a few seconds) and its KBs are built by the eval
harness like any dataset's. Evaluation sets (../shared/datasets, the question sets under knowledge/)
measure the product and are refused: `is_evaluation_set`.
"""

from __future__ import annotations

from pathlib import Path

from citescope.workflows.evaluation import mrc_kb, paraphrase_kb

REPO = Path(__file__).resolve().parents[2]
TRAINING = REPO.parent / "shared" / "training"
EVALUATION_DIRS = (REPO.parent / "shared" / "datasets", REPO / "knowledge")
CMRC_PASSAGES = 300  # ~1,100 questions, ~300 chunks to embed: a couple of minutes on two cores
SETS = ("cmrc2018_train", "pawsx_zh")
# The default refusal threshold is chosen on sets of questions only: PAWS-X's "questions" are statements,
# which the answer stage refuses a third of the time whatever the threshold (the training run of
# 2026-12-06, docs/models.md), so they say nothing of where a question's evidence is too weak.
THRESHOLD_SETS = ("cmrc2018_train",)


def is_evaluation_set(dataset: Path) -> bool:
    """A folder under ../shared/datasets or knowledge/: its questions measure, they are never fitted on."""
    resolved = Path(dataset).resolve()
    return any(resolved.is_relative_to(folder.resolve()) for folder in EVALUATION_DIRS)


def calibration_sets(root: Path, training: Path = TRAINING) -> list[Path]:
    """The sets' dataset folders under root/training-sets, written on first use."""
    out = []
    for name in SETS:
        folder = root / "training-sets" / name
        if not (folder / "questions_holdout.jsonl").exists():  # the last file either writer writes
            if name == "cmrc2018_train":
                mrc_kb.write_dataset(folder, training / "mrc_train.jsonl", name, passages=CMRC_PASSAGES)
            else:
                paraphrase_kb.write_dataset(folder, training / "paraphrase_pairs.jsonl", name)
        out.append(folder)
    return out
