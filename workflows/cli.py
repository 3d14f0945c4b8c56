"""The `run.py` commands. Each command is a thin shell over a typed entry point elsewhere."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from citescope.knowledge.kb import KBError, KnowledgeBase
from citescope.knowledge.settings import Settings, get_settings

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="citescope: cited answers from a shop's knowledge base",
)
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks (reports go to docs/benchmarks.md)")
app.add_typer(bench_app, name="bench")


class _Stdout(Console):
    """stdout: on a terminal text wraps to its width; into a pipe or a file a line of text is never
    wrapped (rich would break it at 80 columns, splitting a fact from its 【citation】). Tables and
    rules are laid out to the width either way."""

    def print(self, *objects: object, soft_wrap: bool | None = None, **options: object) -> None:
        if soft_wrap is None and not self.is_terminal and all(isinstance(o, (str, Text)) for o in objects):
            soft_wrap = True
        super().print(*objects, soft_wrap=soft_wrap, **options)


console = _Stdout()
err = Console(stderr=True, soft_wrap=True)  # an error stays one line, however long

REPO = Path(__file__).resolve().parents[1]
DEMO_DIR = REPO / "knowledge" / "demo"
DEFAULT_KB = Path(".kb/demo")
DATASETS = REPO.parent / "shared" / "datasets"

KbOption = typer.Option(DEFAULT_KB, "--kb", help="knowledge base folder")
MAX_SEARCH_K = 100  # `search` prints a table row per hit and leg; more is not a table anyone reads
ModelT = TypeVar("ModelT")


def main() -> None:
    """run.py's entry: the app, with a KB another process holds as a one-line error, whichever
    command opened it (the store opens lazily, deep inside a command)."""
    from citescope.knowledge.vector_store import StoreLockedError

    try:
        app()
    except StoreLockedError as exc:
        _error_line(exc)
        raise SystemExit(2) from None  # outside the app, typer.Exit would be a traceback


def fail(message: object) -> NoReturn:
    """One line on stderr, `error: <message>` (the message as text, never as markup), and exit 2."""
    _error_line(message)
    raise typer.Exit(2)


def _error_line(message: object) -> None:
    err.print(f"[red]error:[/red] {escape(str(message))}", highlight=False)


def valid_or_exit(model: type[ModelT], names: dict[str, str], **values: object) -> ModelT:
    """model(**values), or one line naming the option, its value and the problem (never pydantic's
    report: type codes, input_value=…, URLs) and exit 2. names: field -> the option (`--as-of`)."""
    from pydantic import ValidationError

    from citescope.workflows.validation import describe_validation_error

    try:
        return model(**values)
    except ValidationError as exc:
        fail(describe_validation_error(exc, names))


def open_kb(kb_dir: Path, create: bool = False) -> KnowledgeBase:
    from pydantic import ValidationError

    from citescope.workflows.validation import describe_validation_error

    try:
        settings = get_settings(kb_dir=kb_dir)
    except ValidationError as exc:  # a CITESCOPE_* variable: name it, not pydantic's report
        fail(describe_validation_error(exc, {name: f"CITESCOPE_{name.upper()}" for name in Settings.model_fields}))
    try:
        return KnowledgeBase(kb_dir, settings, create=create)
    except KBError as exc:
        fail(exc)


@app.command()
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
    reindex: bool = typer.Option(False, help="drop the KB and build it again (e.g. after changing embedder)"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    doc_type: str = typer.Option(
        None,
        "--doc-type",
        help="the type of documents whose records name none "
        "(product, review, policy, faq, post, doc), e.g. faq for an FAQ export",
    ),
) -> None:
    """Ingest documents into a KB; unchanged documents are skipped, changed ones replaced."""
    from citescope.knowledge.ingest import Ingestor
    from citescope.knowledge.prune_guard import PruneRefused
    from citescope.knowledge.schema import check_doc_type

    try:
        doc_type = check_doc_type(doc_type) if doc_type else None
    except ValueError as exc:
        fail(f"--doc-type: {exc}")
    if max_prune_share is not None and not 0 <= max_prune_share <= 1:
        fail(f"--max-prune-share: must be a share between 0 and 1 (got {max_prune_share:g})")
    if max_file_mb is not None and not 0 < max_file_mb < float("inf"):
        fail(f"--max-file-mb: must be a positive number of megabytes (got {max_file_mb:g})")
    if dry_run and reindex:
        fail("--dry-run: cannot be combined with --reindex (which drops the KB)")

    if reindex and kb.exists():
        from citescope.knowledge.kb import remove_kb

        remove_kb(kb, get_settings().milvus_token)
    base = open_kb(kb, create=not dry_run)
    if max_file_mb is not None:
        base.settings = base.settings.model_copy(update={"max_file_mb": max_file_mb})
    stages = None
    if os.environ.get("CITESCOPE_INGEST_STAGES"):  # crash tests watch these lines
        stages = lambda stage: print(f"stage {stage}", file=sys.stderr, flush=True)  # noqa: E731
    ingestor = Ingestor(base, show_progress=not as_json, on_stage=stages, doc_type=doc_type)
    try:
        summary = ingestor.run(
            list(paths), prune=prune, dry_run=dry_run, max_prune_share=max_prune_share, allow_large_prune=yes
        )
    except PruneRefused as exc:
        fail(exc)
    finally:
        base.close()
    if as_json:
        print(json.dumps(summary.as_dict(), ensure_ascii=False))
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


@app.command()
def delete(doc_ids: list[str], kb: Path = KbOption) -> None:
    """Remove documents by id from every index."""
    from citescope.knowledge.ingest import Ingestor

    base = open_kb(kb)
    removed = Ingestor(base, show_progress=False).delete(list(doc_ids))
    base.close()
    console.print(f"removed {removed} of {len(doc_ids)}")
    if removed < len(doc_ids):
        raise typer.Exit(1)


@app.command()
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


@app.command()
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
    base.close()


@app.command()
def ask(
    question: str = typer.Argument(..., help="the customer's question"),
    kb: Path = KbOption,
    as_json: bool = typer.Option(False, "--json", help="print the whole QAResult as JSON"),
    planner: str = typer.Option(
        None,
        "--planner",
        help="planner model: offline | dashscope:qwen-plus | openai:gpt-4o-mini | compatible:<model>@<base_url>",
    ),
    answerer: str = typer.Option(None, "--answerer", help="answerer model (same forms as --planner)"),
    session: str = typer.Option(
        None,
        "--session",
        help="continue (or start) this conversation: follow-ups, "
        "clarifying questions and the carried product use its history",
    ),
    as_of: str = typer.Option(
        None,
        "--as-of",
        help="the time the question is about (YYYY, YYYY-MM or YYYY-MM-DD): documents dated near it rank first",
    ),
) -> None:
    """Answer one question from a KB: the cited answer and its numbered sources."""

    from citescope.knowledge.filters import SearchFilters
    from citescope.workflows.pipeline import QuestionError, validate_question
    from citescope.workflows.pipeline_config import PipelineConfig, PipelineConfigError

    try:
        config = PipelineConfig.load(kb, planner=planner, answerer=answerer)
        question = validate_question(question, config.max_question_chars)
    except (PipelineConfigError, QuestionError) as exc:
        fail(exc)
    filters = valid_or_exit(SearchFilters, {"as_of": "--as-of"}, as_of=as_of)
    filters = None if filters.is_empty() else filters
    if session is not None:
        from citescope.workflows.sessions import check_session_id

        try:
            session = check_session_id(session)
        except ValueError as exc:
            fail(exc)
    # Always through the Assistant, as /v1/ask does: a name several products fit ("AJ1多少钱？") or a
    # question about a product it never names ("这双鞋雨天防滑吗？") is asked back, session or not.
    assistant = open_assistant(kb, config)
    try:
        result = assistant.ask_sync(question, session, filters)
    finally:
        assistant.close()
    print(result.model_dump_json(indent=2) if as_json else result.render_text())
    if session is not None and not as_json:
        err.print(f"[dim]session {escape(session)} · trace {result.trace_id}[/dim]", highlight=False)


def open_assistant(kb_dir: Path, config, policy: str = "bandit"):
    """A warmed Assistant on an existing KB, or a clean exit with the reason."""

    from citescope.workflows.assistant import Assistant

    try:
        assistant = Assistant(kb_dir, config=config, policy=policy)
    except (KBError, ValueError) as exc:  # no KB there, an unknown policy
        fail(exc)
    try:
        return assistant.warm_up()
    except Exception as exc:  # a model spec whose API key is not set, a Milvus Lite file another process holds
        assistant.close()
        fail(f"cannot open the assistant on {kb_dir}: {exc}")


CHAT_HELP = (
    "/new 新会话 · /feedback up|down [意见] 评价上一条回答 · /trace 查看上一条回答的决策过程 · "
    "/help 列出命令 · /quit 退出"
)


@app.command()
def chat(
    kb: Path = KbOption,
    session: str = typer.Option(None, "--session", help="resume this conversation (default: a new one)"),
    policy: str = typer.Option("bandit", "--policy", help="strategy policy: bandit (learns from feedback) | rules"),
    planner: str = typer.Option(None, "--planner", help="planner model (as for ask)"),
    answerer: str = typer.Option(None, "--answerer", help="answerer model (as for ask)"),
) -> None:
    """Talk to the shop assistant: follow-ups, clarifying questions, 👍/👎 and decision traces."""
    from rich.prompt import Prompt

    from citescope.workflows.pipeline import QuestionError
    from citescope.workflows.pipeline_config import PipelineConfig, PipelineConfigError
    from citescope.workflows.rewards import parse_rating
    from citescope.workflows.sessions import check_session_id, new_session_id
    from citescope.workflows.traces import render_trace

    try:
        config = PipelineConfig.load(kb, planner=planner, answerer=answerer)
        session = check_session_id(session) if session is not None else new_session_id()
    except (PipelineConfigError, ValueError) as exc:
        fail(exc)
    assistant = open_assistant(kb, config, policy)
    state = assistant.session(session)
    if state is not None:
        carried = f"，当前商品：{state.entity.name}" if state.entity else ""
        console.print(f"[dim]继续会话 {escape(session)}（已有 {len(state.turns)} 轮{escape(carried)}）[/dim]")
    console.print(f"[dim]{CHAT_HELP}[/dim]")
    last_trace = state.turns[-1].trace_id if state is not None and state.turns else None
    try:
        while True:
            try:
                line = Prompt.ask("[bold cyan]你[/bold cyan]", console=console).strip()
            except (EOFError, KeyboardInterrupt):
                break
            if not line:
                continue
            if line.startswith("/"):
                command, _, rest = line[1:].partition(" ")
                if command in ("quit", "exit", "q"):
                    break
                if command in ("help", "h", "?"):
                    console.print(CHAT_HELP)
                elif command == "new":
                    session, last_trace = new_session_id(), None
                    console.print(f"[dim]新会话 {session}[/dim]")
                elif command in ("feedback", "trace") and last_trace is None:
                    console.print("[yellow]还没有回答可以评价或查看[/yellow]")
                elif command == "feedback":
                    rating, _, comment = rest.strip().partition(" ")
                    try:
                        assistant.feedback(last_trace, parse_rating(rating), comment.strip() or None)
                    except ValueError as exc:
                        console.print(f"[yellow]{escape(str(exc))}[/yellow]")
                    else:
                        console.print(f"[dim]已记录 {'👍' if parse_rating(rating) > 0 else '👎'}，策略已更新[/dim]")
                elif command == "trace":
                    console.print(render_trace(assistant.trace(last_trace)))
                else:
                    console.print(f"[yellow]未知命令 /{escape(command)}[/yellow]  {CHAT_HELP}")
                continue
            try:
                result = assistant.ask_sync(line, session)
            except QuestionError as exc:
                console.print(f"[yellow]{escape(str(exc))}[/yellow]")
                continue
            last_trace = result.trace_id
            console.print("[bold green]客服[/bold green] " + escape(result.render_text()))
            cached = " · cached" if result.timings_ms.get("cached") else ""
            console.print(f"[dim]trace {result.trace_id}{cached}[/dim]")
    finally:
        assistant.close()
    console.print(
        f"[dim]session {escape(session)} — resume: python run.py chat --kb {escape(str(kb))} "
        f"--session {escape(session)}[/dim]"
    )


@app.command()
def trace(
    trace_id: str = typer.Argument(..., help="the trace id of an answer (shown with every answer)"),
    kb: Path = KbOption,
    as_json: bool = typer.Option(False, "--json", help="print the stored trace as JSON"),
) -> None:
    """Show why an answer is what it is: analysis, policy scores, tool calls, evidence, checks, costs."""
    from citescope.workflows.experience import FILE_NAME as EXPERIENCE_FILE
    from citescope.workflows.experience import ExperienceStore
    from citescope.workflows.traces import FILE_NAME, TraceStore, attach_outcome, render_trace

    if not (kb / FILE_NAME).exists():
        fail(f"no traces at {kb / FILE_NAME} (answer questions with this KB first)")
    from citescope.knowledge.text import is_storable_text

    store = TraceStore(kb / FILE_NAME)
    try:
        found = store.get(trace_id) if is_storable_text(trace_id) else None
    finally:
        store.close()
    if found is None:
        fail(f"no trace {trace_id!r} in {kb / FILE_NAME}")
    if (kb / EXPERIENCE_FILE).exists():
        experience = ExperienceStore(kb / EXPERIENCE_FILE)
        try:
            found = attach_outcome(found, experience)
        finally:
            experience.close()
    if as_json:
        print(json.dumps(found, ensure_ascii=False, indent=2))
    else:
        console.print(render_trace(found))


@bench_app.command("bm25")
def bench_bm25(as_json: bool = typer.Option(False, "--json"), queries: int = 200) -> None:
    """BM25 latency at 10k and 100k chunks, ours vs rank-bm25, same run."""
    from citescope.workflows.evaluation.bench.bm25 import format_bm25_report, run_bm25_bench

    result = run_bm25_bench(DATASETS, n_queries=queries)
    print(json.dumps(result, ensure_ascii=False, indent=2) if as_json else format_bm25_report(result))


@bench_app.command("ingest")
def bench_ingest(
    as_json: bool = typer.Option(False, "--json"), limit: int = typer.Option(400, help="documents")
) -> None:
    """Ingest throughput (chunks/s with embeddings) on baoxianzhidao."""
    from citescope.workflows.evaluation.bench.ingest import format_ingest_report, run_ingest_bench

    result = run_ingest_bench(DATASETS / "baoxianzhidao", limit=limit)
    print(json.dumps(result, ensure_ascii=False, indent=2) if as_json else format_ingest_report(result))


@bench_app.command("crash")
def bench_crash(
    trials: int = typer.Option(30, help="SIGKILLs at random moments (ingest, ingest --prune, delete)"),
    seed: int = typer.Option(0),
    window: str = typer.Option(
        "run",
        help="run: kill moments uniform over the whole run (mostly start-up); writes: uniform over the write phase",
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Crash safety: every document old or new in catalog, BM25 and Milvus after a kill; reruns converge."""
    import tempfile

    from citescope.workflows.evaluation.bench.crash import format_crash_report, run_crash_trials

    with tempfile.TemporaryDirectory(prefix="citescope-crash-") as tmp:
        result = run_crash_trials(trials, seed, Path(tmp), window=window)
    print(json.dumps(result, ensure_ascii=False, indent=2) if as_json else format_crash_report(result))
    if result["violations"]:
        raise typer.Exit(1)


@bench_app.command("simulate")
def bench_simulate(
    rounds: int = typer.Option(3000, help="rounds of the simulated question stream"),
    seed: int = typer.Option(0, help="first seed"),
    repeats: int = typer.Option(5, help="seeds to average over"),
    plot: Path = typer.Option(REPO / "docs" / "strategy_learning.png", help="where the learning curves go"),
    sensitivity: bool = typer.Option(False, help="also sweep LinUCB's alpha and prior_weight"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Strategy learning on real retrieval outcomes: rules vs bandit vs per-intent oracle vs random."""
    from citescope.workflows.evaluation.bench.simulate_policy import format_policy_report, run_policy_simulation

    result = run_policy_simulation(
        DATASETS, rounds=rounds, seed=seed, repeats=repeats, plot_path=plot, with_sensitivity=sensitivity
    )
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
    from citescope.knowledge.text import is_storable_text
    from citescope.workflows.experience import FILE_NAME, ExperienceLearner, ExperienceStore
    from citescope.workflows.rewards import parse_rating

    try:
        value = parse_rating(rating)
        if not is_storable_text(comment):
            raise ValueError("the feedback comment must be text without unpaired surrogates")
    except ValueError as exc:
        fail(exc)
    if not (kb / FILE_NAME).exists():
        fail(f"no experience store at {kb / FILE_NAME} (answer questions with this KB first)")
    store = ExperienceStore.for_kb(kb)
    try:
        before = store.get(trace_id) if is_storable_text(trace_id) else None
        if before is None:
            fail(f"no answer with trace id {trace_id!r} in {store.path}")
        after = ExperienceLearner(store).feedback(trace_id, value, comment)
    finally:
        store.close()
    old = "none" if before.reward is None else f"{before.reward:.2f}"
    console.print(
        f"{'👍' if value > 0 else '👎'} recorded for {trace_id}: arm {after.arm}, reward {old} -> {after.reward:.2f}"
    )


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
    from citescope.workflows.evaluation.bench.retrieval import SETS, format_retrieval_report, run_retrieval_bench

    chosen = [spec for spec in SETS if spec.key in {s.strip() for s in sets.split(",")}]
    result = run_retrieval_bench(
        DATASETS,
        limit=limit,
        legs=[leg.strip() for leg in legs.split(",") if leg.strip()],
        seed=seed,
        sets=chosen,
        max_docs=max_docs,
        ablation=ablation,
        history=history,
        scale_sizes=[int(size) for size in scale.split(",") if size.strip()],
    )
    print(json.dumps(result, ensure_ascii=False, indent=2) if as_json else format_retrieval_report(result))


def pipeline_config_or_exit(kb: Path, planner: str | None, answerer: str | None):
    """The KB's PipelineConfig with the command's model choices, or the reason and exit code 2."""

    from citescope.workflows.pipeline_config import PipelineConfig, PipelineConfigError

    try:
        return PipelineConfig.load(kb, planner=planner, answerer=answerer)
    except PipelineConfigError as exc:
        fail(exc)


@app.command()
def serve(
    kb: Path = KbOption,
    host: str = typer.Option("127.0.0.1", help="interface to listen on (0.0.0.0: every interface)"),
    port: int = typer.Option(8000, help="TCP port"),
    policy: str = typer.Option("bandit", help="strategy policy: bandit | rules"),
    planner: str = typer.Option(None, "--planner", help="planner model (as in `ask`)"),
    answerer: str = typer.Option(None, "--answerer", help="answerer model (as in `ask`)"),
) -> None:
    """HTTP service: /v1/ask, /v1/chat/completions (OpenAI-compatible), /v1/feedback, /docs.

    API keys: CITESCOPE_API_KEYS=key1,key2:tenant (Bearer) and/or CITESCOPE_TENANTS_FILE (YAML);
    CITESCOPE_REQUESTS_PER_MINUTE per tenant; body limit: CITESCOPE_MAX_BODY_BYTES; questions computed
    at once / waiting: CITESCOPE_MAX_RUNNING_QUESTIONS / CITESCOPE_MAX_QUEUED_QUESTIONS; connection
    timeouts: CITESCOPE_HEADER_TIMEOUT_S, CITESCOPE_BODY_TIMEOUT_S, CITESCOPE_KEEP_ALIVE_TIMEOUT_S."""

    from citescope.workflows.assistant import Assistant
    from citescope.workflows.service import ServiceSettings, create_app
    from citescope.workflows.service import serve as run_service

    config = pipeline_config_or_exit(kb, planner, answerer)
    settings = valid_or_exit(
        ServiceSettings, {name: f"CITESCOPE_{name.upper()}" for name in ServiceSettings.model_fields}
    )
    try:
        tenants = settings.tenants()
    except ValueError as exc:
        fail(exc)
    if tenants.open and host not in ("127.0.0.1", "localhost", "::1"):
        err.print(
            f"[yellow]warning:[/yellow] no CITESCOPE_API_KEYS: anyone who reaches {host}:{port} can use the service"
        )
    try:  # not warmed here: the app warms it in the background while /healthz already answers
        assistant = Assistant(kb, config=config, policy=policy)
    except (KBError, ValueError) as exc:
        fail(exc)
    run_service(create_app(assistant, settings), host, port)


@app.command()
def batch(
    input_path: Path = typer.Argument(..., help="questions: JSONL or CSV with id (or qid), question, session_id?"),
    output: Path = typer.Option(..., "-o", "--output", help="answers, one JSON line per id (resumed if present)"),
    kb: Path = KbOption,
    concurrency: int = typer.Option(4, min=1, help="questions in flight (a session's turns stay in order)"),
    retry_errors: bool = typer.Option(False, help="ask again the ids whose output line is an error"),
    progress: bool = typer.Option(True, help="progress bar with ETA on stderr"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    policy: str = typer.Option("bandit", help="strategy policy: bandit | rules"),
    planner: str = typer.Option(None, "--planner", help="planner model (as in `ask`)"),
    answerer: str = typer.Option(None, "--answerer", help="answerer model (as in `ask`)"),
) -> None:
    """Answer a file of questions; rerun the same command after an interruption to finish it."""
    from citescope.workflows.batch import BatchRunner

    if not input_path.is_file():
        fail(f"no input file {input_path}")
    assistant = open_assistant(kb, pipeline_config_or_exit(kb, planner, answerer), policy)
    try:
        summary = BatchRunner(assistant, concurrency, show_progress=progress).run(input_path, output, retry_errors)
    except ValueError as exc:  # an input format it cannot read
        fail(exc)
    except KeyboardInterrupt:
        err.print(f"interrupted: the answers so far are in {escape(str(output))}; run the same command again to finish")
        raise typer.Exit(130) from None
    finally:
        assistant.close()
    print(summary.model_dump_json(indent=2) if as_json else summary.render())


STUDIO_GONE_EXIT = 3  # a Studio session ended because Studio went away and did not come back


@app.command()
def studio(
    kb: Path = KbOption,
    studio_url: str = typer.Option("http://127.0.0.1:3000", help="AgentScope Studio (start it with `as_studio`)"),
    project: str = typer.Option("citescope", help="Studio project the run is listed under"),
    name: str = typer.Option(None, help="run name (default: time + random suffix)"),
    question: str = typer.Option(
        None,
        "--question",
        help="ask this one question and exit; without it, type questions in the Studio page until `/exit`",
    ),
    reconnect_attempts: int = typer.Option(10, min=0, help="reconnects tried when Studio drops"),
    reconnect_window: float = typer.Option(60.0, min=0, help="seconds Studio may stay away before the session ends"),
    policy: str = typer.Option("bandit", help="strategy policy: bandit | rules"),
    planner: str = typer.Option(None, "--planner", help="planner model (as in `ask`)"),
    answerer: str = typer.Option(None, "--answerer", help="answerer model (as in `ask`)"),
) -> None:
    """A multi-turn session in AgentScope Studio: the planner's, answerer's and inspector's messages.
    Exit 0 when the user ends it (or the one question is answered), 2 when Studio cannot be reached
    at the start, 3 when Studio went away and stayed away longer than the reconnect window."""
    import asyncio

    from citescope.workflows.pipeline import QuestionError
    from citescope.workflows.studio import StudioSession
    from citescope.workflows.studio_link import ReconnectPolicy

    assistant = open_assistant(kb, pipeline_config_or_exit(kb, planner, answerer), policy)
    reconnect = ReconnectPolicy(attempts=reconnect_attempts, window_s=reconnect_window)
    session = StudioSession(
        assistant,
        studio_url,
        project=project,
        name=name,
        reconnect=reconnect,
        on_event=lambda text: err.print(escape(text), highlight=False),
    )
    try:
        try:
            session.connect()
        except Exception as exc:  # httpx's and socket.io's connection errors, an HTTP error status
            fail(
                f"cannot reach AgentScope Studio at {studio_url} ({exc}); "
                "start it with `as_studio` (npm install -g @agentscope/studio)"
            )
        console.print(f"Studio run: {session.run_url}", highlight=False, soft_wrap=True)
        if question is not None:
            try:  # the user's, answerer's and inspector's messages also print here, as in Studio
                asyncio.run(session.ask(question))
            except QuestionError as exc:
                fail(exc)
        else:
            console.print(
                f"connected to {escape(studio_url)} (project {escape(project)}): type questions in "
                "Studio, `/exit` to finish",
                highlight=False,
            )
            try:
                turns = asyncio.run(session.chat())
            except KeyboardInterrupt:
                turns = len(session.results)
            if session.studio_gone is not None:  # the link has said why, as it happened
                err.print("ending the session", highlight=False)
            console.print(f"session {session.session_id}: {turns} answers")
    finally:
        session.close()
        assistant.close()
    stats = session.link.stats if session.link is not None else None
    if stats is not None and stats.undelivered:
        err.print(
            f"{stats.undelivered} messages could not be delivered to Studio (they are in the console output above)",
            highlight=False,
        )
    if stats is not None and stats.rejected:
        err.print(f"Studio refused {stats.rejected} messages (HTTP 4xx; see Studio's log)", highlight=False)
    if session.link is not None and session.link.gone:  # waiting for input, answering, or delivering at the end
        raise typer.Exit(STUDIO_GONE_EXIT)


@bench_app.command("load")
def bench_load(
    kb: Path = KbOption,
    requests: int = typer.Option(200, help="measured /v1/ask requests"),
    concurrency: int = typer.Option(20, help="requests in flight"),
    questions: Path = typer.Option(DEMO_DIR / "questions.jsonl", help="questions (JSONL with `question`)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """HTTP load on `serve` in a subprocess (a copy of the KB): throughput, latency, resources before/after."""
    from citescope.workflows.evaluation.bench.load import format_load_report, run_load_bench

    result = run_load_bench(kb, n_requests=requests, concurrency=concurrency, questions_path=questions)
    print(json.dumps(result, ensure_ascii=False, indent=2) if as_json else format_load_report(result))


@bench_app.command("cost")
def bench_cost(
    kb: Path = KbOption,
    repeats: int = typer.Option(3, help="pipeline calls of the long message measured (each a variant)"),
    normal: int = typer.Option(30, help="normal questions asked over HTTP in each phase"),
    long_in_flight: int = typer.Option(4, help="long messages kept in flight during the loaded phase"),
    cpu_only: bool = typer.Option(False, "--cpu-only", help="only the in-process CPU measurement"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """A ~1,900-character message: its CPU per pipeline call, and normal questions' latency over
    HTTP while several are in flight (workflows/evaluation/bench/cost.py)."""
    from citescope.workflows.evaluation.bench.cost import format_cost_report, run_cost_bench

    result = run_cost_bench(kb, repeats=repeats, n_normal=normal, long_in_flight=long_in_flight, cpu_only=cpu_only)
    print(json.dumps(result, ensure_ascii=False, indent=2) if as_json else format_cost_report(result))


def _names(values: list[str] | None) -> list[str]:
    """Repeated options and comma-separated values alike: --strategy a --strategy b,c."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


EVAL_OPTIONS = {
    "dataset_dir": "--dataset",
    "questions_file": "--questions",
    "limit": "--limit",
    "per_qtype": "--per-qtype",
    "mode": "--mode",
    "planner": "--planner",
    "answerer": "--answerer",
    "strategies": "--strategy",
    "concurrency": "--concurrency",
    "seed": "--seed",
    "run_dir": "--run-dir",
    "max_embed": "--max-embed",
    "root": "--root",
}


@app.command("eval")
def eval_command(
    dataset: Path = typer.Option(..., "--dataset", help="a dataset folder: ../shared/datasets/NAME or knowledge/demo"),
    questions: str = typer.Option(
        None, "--questions", help="one question file of the set (default: every questions*.jsonl)"
    ),
    limit: int = typer.Option(None, "--limit", help="questions per file, stratified by qtype (seeded)"),
    per_qtype: int = typer.Option(None, "--per-qtype", help="or: this many questions of each qtype"),
    mode: str = typer.Option("offline", "--mode", help="offline | llm"),
    planner: str = typer.Option(None, "--planner", help="llm mode: planner model spec (e.g. dashscope:qwen-plus)"),
    answerer: str = typer.Option(None, "--answerer", help="llm mode: answerer model spec"),
    strategy: list[str] = typer.Option(
        None,
        "--strategy",
        help="policy and/or arm names of agents/arms.yaml, "
        "compared side by side (repeat or comma-separate; default: policy)",
    ),
    baseline: bool = typer.Option(True, help="AgentScope SimpleKnowledge retrieval row"),
    as_json: bool = typer.Option(False, "--json", help="print the scores as JSON"),
    concurrency: int = typer.Option(1, "--concurrency", help="questions in flight (latency is measured under it)"),
    resume: bool = typer.Option(False, "--resume", help="continue the run: skip questions already in its results"),
    seed: int = typer.Option(0, "--seed"),
    run_dir: Path = typer.Option(
        None,
        "--run-dir",
        help="where results.jsonl and summary.json go (default: ~/.cache/citescope/eval/runs/<dataset>-<split>-<hash>)",
    ),
    max_embed: int = typer.Option(2000, "--max-embed", help="refuse KBs that would embed more texts than this"),
    root: Path = typer.Option(None, "--root", help="eval KBs and runs (default: ~/.cache/citescope/eval)"),
) -> None:
    """Run a dataset's questions through the real pipeline: retrieval, answers, citations, refusal,
    conflicts, tool calls and latency, by question type and strategy."""
    from citescope.workflows.evaluation.evaluate import EvalError, EvalRequest, format_eval_report, run_eval

    request = valid_or_exit(
        EvalRequest,
        EVAL_OPTIONS,
        dataset_dir=dataset,
        questions_file=questions,
        limit=limit,
        per_qtype=per_qtype,
        mode=mode,
        planner=planner,
        answerer=answerer,
        strategies=_names(strategy) or ["policy"],
        baseline=baseline,
        concurrency=concurrency,
        resume=resume,
        seed=seed,
        run_dir=run_dir,
        max_embed=max_embed,
        progress=not as_json,
        **({"root": root} if root else {}),
    )
    try:
        result = run_eval(request)
    except (EvalError, ValueError) as exc:
        fail(exc)
    print(json.dumps(result, ensure_ascii=False, indent=1) if as_json else format_eval_report(result))


@app.command("calibrate")
def calibrate_command(
    dataset: list[Path] = typer.Option(
        None,
        "--dataset",
        help="dev sets (repeat; default: cmrc2018_dev, baoxianzhidao, rgb_zh, domainrag and the demo, those embedded)",
    ),
    per_set: int = typer.Option(300, "--per-set", help="questions per set for the reranker fit and the threshold"),
    fit_reranker: bool = typer.Option(True, help="refit tools/rerank_weights.json (written only if it wins held out)"),
    threshold: bool = typer.Option(True, help="calibrate the refusal threshold"),
    write_default: bool = typer.Option(False, help="also write the pooled threshold to workflows/pipeline.yaml"),
    dry_run: bool = typer.Option(False, "--dry-run", help="report only: write no weights, configs or plot"),
    plot: Path = typer.Option(REPO / "docs" / "calibration_refusal.png", help="precision/recall curve PNG"),
    as_json: bool = typer.Option(False, "--json"),
    seed: int = typer.Option(0, "--seed"),
    max_embed: int = typer.Option(2000, "--max-embed", help="refuse KBs that would embed more texts than this"),
) -> None:
    """Fit the offline reranker on dev data and choose the refusal threshold (≤ 5% false refusals)."""
    from citescope.workflows.evaluation.calibrate import CalibrationRequest, format_calibration_report, run_calibration

    request = CalibrationRequest(
        datasets=list(dataset or []),
        per_set=per_set,
        fit_reranker=fit_reranker,
        threshold=threshold,
        write_default=write_default,
        dry_run=dry_run,
        plot=plot,
        seed=seed,
        max_embed=max_embed,
        progress=not as_json,
    )
    result = run_calibration(request)
    print(json.dumps(result, ensure_ascii=False, indent=1) if as_json else format_calibration_report(result))


if __name__ == "__main__":
    sys.exit(app())
