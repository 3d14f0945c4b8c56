"""The commands that fill and read a knowledge base: ingest, delete, search and the demo."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from citescope.knowledge.kb import KnowledgeBase, drop_index
from citescope.knowledge.prune_guard import PruneRefused
from citescope.knowledge.schema import check_doc_type
from citescope.knowledge.settings import get_settings
from citescope.knowledge.shop_profile import ShopProfileError
from citescope.workflows.cli.common import DEMO_DIR, KbOption, console, err, fail, open_kb, pipeline_config_or_exit

MAX_SEARCH_K = 100  # `search` prints a table row per hit and leg; more is not a table anyone reads


def ingest(
    paths: list[Path] = typer.Argument(..., help="files or folders (JSONL, CSV, Markdown, text, PDF)"),
    kb: Path = KbOption,
    prune: bool = typer.Option(
        False,
        help="remove documents that are no longer in PATHS (refused when a path "
        "yields no documents or too large a share would go; see --max-prune-share)",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="show what would be added, changed and removed; write nothing"
    ),
    max_prune_share: float = typer.Option(
        None,
        "--max-prune-share",
        help="the largest share of the KB's documents --prune may remove "
        "without --yes (default 0.2, or CITESCOPE_MAX_PRUNE_SHARE)",
    ),
    yes: bool = typer.Option(False, "--yes", help="let --prune remove more than --max-prune-share"),
    max_file_mb: float = typer.Option(
        None, "--max-file-mb", help="skip files larger than this many MB (default 10, or CITESCOPE_MAX_FILE_MB)"
    ),
    reindex: bool = typer.Option(
        False,
        help="drop the KB's index and build it again (e.g. after changing embedder); its config, sessions, "
        "traces and ratings stay",
    ),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    doc_type: str = typer.Option(
        None,
        "--doc-type",
        help="the type of documents whose records name none "
        "(product, review, policy, faq, post, doc), e.g. faq for an FAQ export",
    ),
    self_calibrate: bool | None = typer.Option(
        None,
        "--self-calibrate/--no-self-calibrate",
        help="then choose the KB's refusal threshold from its documents (calibrate --self); default: a KB "
        "on the default threshold, and a self-calibrated one once a fifth of its documents changed",
        show_default=False,
    ),
) -> None:
    """Ingest documents into a KB; unchanged documents are skipped, changed ones replaced."""
    from citescope.knowledge.ingest import Ingestor

    try:
        checked_type = check_doc_type(doc_type) if doc_type else None
    except ValueError as exc:
        fail(f"--doc-type: {exc}")
    if max_prune_share is not None and not 0 <= max_prune_share <= 1:
        fail(f"--max-prune-share: must be a share between 0 and 1 (got {max_prune_share:g})")
    if max_file_mb is not None and not 0 < max_file_mb < float("inf"):
        fail(f"--max-file-mb: must be a positive number of megabytes (got {max_file_mb:g})")
    if dry_run and reindex:
        fail("--dry-run: cannot be combined with --reindex (which drops the index)")

    if reindex and kb.exists():
        drop_index(kb, get_settings().milvus_token)
    base = open_kb(kb, create=not dry_run)
    if max_file_mb is not None:
        base.settings = base.settings.model_copy(update={"max_file_mb": max_file_mb})
    stages = None
    if os.environ.get("CITESCOPE_INGEST_STAGES"):  # crash tests watch these lines
        stages = lambda stage: print(f"stage {stage}", file=sys.stderr, flush=True)  # noqa: E731
    ingestor = Ingestor(base, show_progress=not as_json, on_stage=stages, doc_type=checked_type)
    try:
        summary = ingestor.run(
            list(paths), prune=prune, dry_run=dry_run, max_prune_share=max_prune_share, allow_large_prune=yes
        )
    except (PruneRefused, ShopProfileError) as exc:  # a shop.yaml that does not read names its file and field
        fail(exc)
    finally:
        base.close()
    calibrated = None
    if self_calibrate is None and not dry_run:  # a new KB chooses its threshold; a calibrated one after a large ingest
        from citescope.workflows.self_calibration import calibration_due

        due = calibration_due(kb, summary.added + summary.replaced + summary.removed)
        if due:
            err.print(f"self-calibrating: {escape(due)}", highlight=False)
        self_calibrate = due is not None
    if self_calibrate and not dry_run:  # the KB as ingested chooses its refusal threshold (calibrate --self)
        from citescope.workflows.cli.evaluating import self_calibrate_kb

        calibrated = self_calibrate_kb(kb, strict=False)
    if as_json:
        shown = summary.as_dict() | ({"self_calibration": calibrated} if calibrated else {})
        print(json.dumps(shown, ensure_ascii=False))
    else:
        for issue in summary.issues:
            err.print(f"[yellow]skipped[/yellow] {escape(str(issue))}", highlight=False)
        if summary.flagged:
            err.print(
                f"[yellow]{len(summary.flagged)} records flagged as possible prompt injection[/yellow]:",
                highlight=False,
            )
            for flagged in summary.flagged:
                err.print(f"  {escape(str(flagged))}", highlight=False)
        if dry_run:
            print_ingest_plan(summary)
        else:
            console.print(
                f"documents {summary.documents}  chunks written {summary.chunks}  added {summary.added}  "
                f"replaced {summary.replaced}  skipped (unchanged) {summary.skipped}  removed {summary.removed}  "
                f"embedded {summary.embedded}  issues {len(summary.issues)}  flagged {len(summary.flagged)}  "
                f"{summary.seconds}s"
            )
        if calibrated:
            from citescope.workflows.self_calibration import format_self_calibration

            console.print(format_self_calibration(calibrated), highlight=False)
    if summary.refused:
        fail(f"--prune: without --dry-run this prune would be refused: {summary.refused}")
    if summary.issues:
        raise typer.Exit(1)


def print_ingest_plan(summary) -> None:
    for action, doc_ids in summary.plan.items():
        for doc_id in doc_ids:
            console.print(f"{action:<6} {escape(doc_id)}", highlight=False)
    console.print(
        f"dry run, nothing written: would add {summary.added}, change {summary.replaced}, remove {summary.removed}; "
        f"unchanged {summary.skipped}; chunks {summary.chunks} ({summary.embedded} to embed); "
        f"issues {len(summary.issues)}"
    )


def delete(doc_ids: list[str], kb: Path = KbOption) -> None:
    """Remove documents by id from every index."""
    from citescope.knowledge.ingest import Ingestor

    base = open_kb(kb)
    removed = Ingestor(base, show_progress=False).delete(list(doc_ids))
    base.close()
    console.print(f"removed {removed} of {len(doc_ids)}")
    if removed < len(doc_ids):
        raise typer.Exit(1)


def search(query: str, kb: Path = KbOption, k: int = typer.Option(5, "--k", help="hits per leg (1-100)")) -> None:
    """Show retrieved evidence for a query (keyword and dense legs)."""
    from citescope.workflows.pipeline import QuestionError, validate_question

    if not 1 <= k <= MAX_SEARCH_K:
        fail(f"--k: must be between 1 and {MAX_SEARCH_K} (got {k})")
    try:
        query = validate_question(query, pipeline_config_or_exit(kb, None, None).max_question_chars)
    except QuestionError as exc:
        fail(exc)
    base = open_kb(kb).warm_up()
    show_evidence(base, query, k)


def show_evidence(base: KnowledgeBase, query: str, k: int) -> None:
    table = Table(title=escape(query), show_lines=False)  # text, not markup
    for col in ("leg", "score", "chunk", "text"):
        table.add_column(col)
    for leg, hits in (("bm25", base.search_keyword(query, k)), ("dense", base.search_dense(query, k))):
        for hit in hits:
            chunk = base.get(hit.chunk_id)
            if chunk is None:  # an index naming a chunk the KB's tables lack: no text to show
                continue
            table.add_row(
                leg, f"{hit.score:.3f}", escape(f"【{hit.chunk_id}】"), escape(chunk.text[:80].replace("\n", " "))
            )
    console.print(table)


DEMO_QUESTIONS = (
    "AJ1 Retro 的鞋面是真皮吗？",  # a review contradicts the product page: disclosed
    "星择 XZ-3000 充电宝多少钱？有货吗？",  # numbers from the SKU table (its overview of every variant), not prose
    "现在买的东西几天之内可以无理由退换？",  # an old and a new policy version disagree
    "身高175厘米、体重70公斤，山野峰刃冲锋衣穿什么码？",  # the size size_recommend works out from the table
    "山野峰刃冲锋衣M码和L码差多少？现在有货吗？",  # each size's size-table row, then the stock
    "云栈优选的客服电话是多少？",  # not in the KB: refused, not guessed
)


def demo(kb: Path = KbOption) -> None:
    """Ingest the built-in demo KB and answer a few sample questions with citations."""
    from citescope.knowledge.ingest import Ingestor
    from citescope.workflows.pipeline import QAPipeline
    from citescope.workflows.pipeline_config import PipelineConfig

    base = open_kb(kb, create=True)
    summary = Ingestor(base).run([DEMO_DIR])
    console.print(
        f"[bold]demo KB[/bold] {kb}: {summary.documents} documents, {len(base)} chunks "
        f"({summary.added} added, {summary.skipped} unchanged, {summary.embedded} embedded, {summary.seconds}s)"
    )
    pipeline = QAPipeline(base, PipelineConfig.load(kb)).warm_up()
    for question in DEMO_QUESTIONS:
        result = pipeline.run(question)
        flags = [f for f, on in (("refused", result.refused), ("conflict disclosed", bool(result.conflicts))) if on]
        console.rule(f"[bold]{question}[/bold]" + (f"  ({', '.join(flags)})" if flags else ""))
        print(result.render_text())
    pipeline.close()  # the model clients' connections and run()'s event loop
    base.close()
