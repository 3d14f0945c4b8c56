"""The `run.py` commands. Each command is a thin shell over a typed entry point elsewhere."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from knowledge.kb import KBError, KnowledgeBase
from knowledge.settings import get_settings

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, help="citescope: cited answers from a shop's knowledge base")
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks (reports go to docs/benchmarks.md)")
app.add_typer(bench_app, name="bench")
console = Console()
err = Console(stderr=True)

REPO = Path(__file__).resolve().parents[1]
DEMO_DIR = REPO / "knowledge" / "demo"
DEFAULT_KB = Path(".kb/demo")
DATASETS = REPO.parent / "shared" / "datasets"

KbOption = typer.Option(DEFAULT_KB, "--kb", help="knowledge base folder")


def open_kb(kb_dir: Path, create: bool = False) -> KnowledgeBase:
    try:
        return KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir), create=create)
    except KBError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc


@app.command()
def ingest(
    paths: list[Path] = typer.Argument(..., help="files or folders (JSONL, CSV, Markdown, text, PDF)"),
    kb: Path = KbOption,
    prune: bool = typer.Option(False, help="remove documents that are no longer in PATHS"),
    reindex: bool = typer.Option(False, help="drop the KB and build it again (e.g. after changing embedder)"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
) -> None:
    """Ingest documents into a KB; unchanged documents are skipped, changed ones replaced."""
    from knowledge.ingest import Ingestor

    if reindex and kb.exists():
        import shutil

        shutil.rmtree(kb)
    base = open_kb(kb, create=True)
    stages = None
    if os.environ.get("CITESCOPE_INGEST_STAGES"):  # crash tests watch these lines
        stages = lambda stage: print(f"stage {stage}", file=sys.stderr, flush=True)  # noqa: E731
    summary = Ingestor(base, show_progress=not as_json, on_stage=stages).run(list(paths), prune=prune)
    base.close()
    if as_json:
        print(json.dumps(summary.as_dict(), ensure_ascii=False))
    else:
        for issue in summary.issues:
            err.print(f"[yellow]skipped[/yellow] {issue}")
        console.print(
            f"documents {summary.documents}  chunks written {summary.chunks}  added {summary.added}  "
            f"replaced {summary.replaced}  skipped (unchanged) {summary.skipped}  removed {summary.removed}  "
            f"embedded {summary.embedded}  issues {len(summary.issues)}  {summary.seconds}s"
        )
    if summary.issues:
        raise typer.Exit(1)


@app.command()
def delete(doc_ids: list[str], kb: Path = KbOption) -> None:
    """Remove documents by id from every index."""
    from knowledge.ingest import Ingestor

    base = open_kb(kb)
    removed = Ingestor(base, show_progress=False).delete(list(doc_ids))
    base.close()
    console.print(f"removed {removed} of {len(doc_ids)}")
    if removed < len(doc_ids):
        raise typer.Exit(1)


@app.command()
def search(query: str, kb: Path = KbOption, k: int = 5) -> None:
    """Show retrieved evidence for a query (keyword and dense legs)."""
    base = open_kb(kb).warm_up()
    show_evidence(base, query, k)


def show_evidence(base: KnowledgeBase, query: str, k: int) -> None:
    table = Table(title=query, show_lines=False)
    for col in ("leg", "score", "chunk", "text"):
        table.add_column(col)
    for leg, hits in (("bm25", base.search_keyword(query, k)), ("dense", base.search_dense(query, k))):
        for hit in hits:
            chunk = base.get(hit.chunk_id)
            table.add_row(leg, f"{hit.score:.3f}", f"【{hit.chunk_id}】", chunk.text[:80].replace("\n", " "))
    console.print(table)


@app.command()
def demo(kb: Path = KbOption) -> None:
    """Ingest the built-in demo KB and answer a few sample questions."""
    from knowledge.ingest import Ingestor

    base = open_kb(kb, create=True)
    summary = Ingestor(base).run([DEMO_DIR])
    console.print(f"[bold]demo KB[/bold] {kb}: {summary.documents} documents, {len(base)} chunks "
                  f"({summary.added} added, {summary.skipped} unchanged, {summary.embedded} embedded, {summary.seconds}s)")
    for question in ("AJ1 的鞋面是什么材质？", "XZ-3000 充电宝多少钱？", "现在退货政策是几天？"):
        show_evidence(base, question, 3)
    base.close()


@app.command()
def ask(
    question: str = typer.Argument(..., help="the customer's question"),
    kb: Path = KbOption,
    as_json: bool = typer.Option(False, "--json", help="print the whole QAResult as JSON"),
    planner: str = typer.Option(None, "--planner", help="planner model: offline | dashscope:qwen-plus | "
                                "openai:gpt-4o-mini | compatible:<model>@<base_url>"),
    answerer: str = typer.Option(None, "--answerer", help="answerer model (same forms as --planner)"),
) -> None:
    """Answer one question from a KB: the cited answer and its numbered sources."""
    from rich.markup import escape

    from workflows.pipeline import QAPipeline, QuestionError, validate_question
    from workflows.pipeline_config import PipelineConfig, PipelineConfigError

    try:
        config = PipelineConfig.load(kb, planner=planner, answerer=answerer)
        question = validate_question(question, config.max_question_chars)
    except (PipelineConfigError, QuestionError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc
    base = open_kb(kb)
    try:
        pipeline = QAPipeline(base, config).warm_up()
    except (RuntimeError, ValueError) as exc:  # e.g. a model spec whose API key is not set
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        base.close()
        raise typer.Exit(2) from exc
    result = pipeline.run(question)
    base.close()
    print(result.model_dump_json(indent=2) if as_json else result.render_text())


@bench_app.command("bm25")
def bench_bm25(as_json: bool = typer.Option(False, "--json"), queries: int = 200) -> None:
    """BM25 latency at 10k and 100k chunks, ours vs rank-bm25, same run."""
    from workflows.bench.bm25 import format_bm25_report, run_bm25_bench

    result = run_bm25_bench(DATASETS, n_queries=queries)
    print(json.dumps(result, ensure_ascii=False, indent=2) if as_json else format_bm25_report(result))


@bench_app.command("ingest")
def bench_ingest(as_json: bool = typer.Option(False, "--json"), limit: int = typer.Option(400, help="documents")) -> None:
    """Ingest throughput (chunks/s with embeddings) on baoxianzhidao."""
    from workflows.bench.ingest import format_ingest_report, run_ingest_bench

    result = run_ingest_bench(DATASETS / "baoxianzhidao", limit=limit)
    print(json.dumps(result, ensure_ascii=False, indent=2) if as_json else format_ingest_report(result))


@bench_app.command("simulate")
def bench_simulate(
    rounds: int = typer.Option(3000, help="rounds of the simulated question stream"),
    seed: int = typer.Option(0, help="first seed"),
    repeats: int = typer.Option(5, help="seeds to average over"),
    plot: Path = typer.Option(REPO / "docs" / "strategy_learning.png", help="where the learning curves go"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Strategy learning on real retrieval outcomes: rules vs bandit vs per-intent oracle vs random."""
    from workflows.bench.simulate_policy import format_policy_report, run_policy_simulation

    result = run_policy_simulation(DATASETS, rounds=rounds, seed=seed, repeats=repeats, plot_path=plot)
    if as_json:
        print(json.dumps({k: v for k, v in result.items() if k != "curves"}, ensure_ascii=False, indent=2))
    else:
        print(format_policy_report(result))


@app.command()
def feedback(
    trace_id: str = typer.Argument(..., help="the trace id of the answer (shown with every answer)"),
    rating: str = typer.Argument(..., help="up (👍) or down (👎)"),
    comment: str = typer.Option("", "--comment", help="what was wrong or right"),
    kb: Path = KbOption,
) -> None:
    """Record 👍/👎 on an answer; the strategy policy re-learns that round at once."""
    from workflows.experience import FILE_NAME, ExperienceLearner, ExperienceStore
    from workflows.rewards import parse_rating

    try:
        value = parse_rating(rating)
    except ValueError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    if not (kb / FILE_NAME).exists():
        err.print(f"[red]error:[/red] no experience store at {kb / FILE_NAME} (answer questions with this KB first)")
        raise typer.Exit(2)
    store = ExperienceStore.for_kb(kb)
    try:
        before = store.get(trace_id)
        if before is None:
            err.print(f"[red]error:[/red] no answer with trace id {trace_id!r} in {store.path}")
            raise typer.Exit(2)
        after = ExperienceLearner(store).feedback(trace_id, value, comment)
    finally:
        store.close()
    old = "none" if before.reward is None else f"{before.reward:.2f}"
    console.print(f"{'👍' if value > 0 else '👎'} recorded for {trace_id}: arm {after.arm}, "
                  f"reward {old} -> {after.reward:.2f}")


@bench_app.command("retrieval")
def bench_retrieval(
    as_json: bool = typer.Option(False, "--json"),
    limit: int | None = typer.Option(None, help="questions per set (stratified by qtype)"),
    sets: str = typer.Option("a,b,c", help="a: cmrc2018 in a mixed KB, b: baoxianzhidao paraphrases, c: domainrag"),
    legs: str = typer.Option("bm25,dense,hybrid,hybrid+rerank,rank_bm25,agentscope", help="legs to run"),
    max_docs: int | None = typer.Option(None, help="only the first N documents of each corpus (dev slices)"),
    scale: str = typer.Option("10000,100000", help="KB sizes (chunks) for the latency table; '' to skip"),
    ablation: bool = typer.Option(True, help="ablation table and cross-validated reranker fit"),
    history: bool = typer.Option(False, help="prepend earlier turns to conversational questions"),
    seed: int = 0,
) -> None:
    """Retrieval quality (Recall@k, MRR) and latency: our skills vs rank-bm25 and AgentScope's KB."""
    from workflows.bench.retrieval import SETS, format_retrieval_report, run_retrieval_bench

    chosen = [spec for spec in SETS if spec.key in {s.strip() for s in sets.split(",")}]
    result = run_retrieval_bench(
        DATASETS, limit=limit, legs=[leg.strip() for leg in legs.split(",") if leg.strip()], seed=seed, sets=chosen,
        max_docs=max_docs, ablation=ablation, history=history,
        scale_sizes=[int(size) for size in scale.split(",") if size.strip()],
    )
    print(json.dumps(result, ensure_ascii=False, indent=2) if as_json else format_retrieval_report(result))


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    sys.exit(app())
