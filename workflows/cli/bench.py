"""`run.py bench ...`: the benchmarks (their reports go to docs/benchmarks.md)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Literal

import typer

from citescope.workflows.cli.common import DATASETS, DEMO_DIR, REPO, KbOption, fail

bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks (reports go to docs/benchmarks.md)")


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
    from citescope.workflows.evaluation.bench.crash import format_crash_report, run_crash_trials

    if window not in ("run", "writes"):
        fail(f"--window: must be run or writes (got {window})")
    kill_window: Literal["run", "writes"] = "writes" if window == "writes" else "run"
    with tempfile.TemporaryDirectory(prefix="citescope-crash-") as tmp:
        result = run_crash_trials(trials, seed, Path(tmp), window=kill_window)
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


@bench_app.command("retrieval")
def bench_retrieval(
    as_json: bool = typer.Option(False, "--json"),
    limit: int | None = typer.Option(None, help="questions per set (stratified by qtype)"),
    sets: str = typer.Option("a,b,c", help="a: cmrc2018 in a mixed KB, b: baoxianzhidao paraphrases, c: domainrag"),
    legs: str = typer.Option("bm25,dense,hybrid,hybrid+rerank,rank_bm25,agentscope", help="legs to run"),
    max_docs: int | None = typer.Option(None, help="only the first N documents of each corpus (dev slices)"),
    scale: str = typer.Option("10000,100000", help="KB sizes (chunks) for the latency table; '' to skip"),
    ablation: bool = typer.Option(True, help="the ablation table: each idea on its own"),
    history: bool = typer.Option(False, help="prepend earlier turns to conversational questions"),
    seed: int = 0,
    embed: bool = typer.Option(
        False, "--embed", help="embed a set's chunks the cache lacks (another CITESCOPE_EMBEDDER: ~3 chunks/s here)"
    ),
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
        allow_embedding=embed,
    )
    print(json.dumps(result, ensure_ascii=False, indent=2) if as_json else format_retrieval_report(result))


@bench_app.command("llm")
def bench_llm(
    questions: int = typer.Option(5, help="demo questions streamed, and asked of a hung provider"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The LLM mode against scripted providers (issue #42, docs/llm.md): first_sentence_share,
    stalled_provider_s, open_breaker_s, model_requests_per_question."""
    from citescope.workflows.evaluation.bench.llm import format_llm_report, run_llm_bench

    result = run_llm_bench(n_questions=questions)
    print(json.dumps(result, ensure_ascii=False, indent=2) if as_json else format_llm_report(result))


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


@bench_app.command("reader")
def bench_reader(
    as_json: bool = typer.Option(False, "--json"),
    kb: Path = typer.Option(DEMO_DIR, "--kb", help="folder of KB documents (as given to ingest)"),
    limit: int | None = typer.Option(
        None, help="passages (chunks) per source, drawn by the seed (default 1000; 0: all)"
    ),
    seed: int = typer.Option(0),
    mrc: bool = typer.Option(True, help="also the reader-benchmark passages of ../shared/training/mrc_train.jsonl"),
    claims_model: Path | None = typer.Option(
        None, "--claims-model", help="a trained claim checker's folder (run.py train claims): measured beside the rules"
    ),
    reject_above: float | None = typer.Option(
        None, "--reject-above", help="the claim checker's P(contradicted) that rejects (default: its card's)"
    ),
    answers_kb: Path | None = typer.Option(
        None,
        "--answers-kb",
        help="an ingested KB (.kb/demo): also the share of its answers to its own probes the checker rejects",
    ),
) -> None:
    """Claim checking by the current inspector: perturbed claims rejected, faithful paraphrases passed (#46)."""
    from citescope.agents.claim_reader import ClaimReader
    from citescope.knowledge.settings import get_settings
    from citescope.workflows.evaluation.bench.reader import DEFAULT_LIMIT, format_reader_report, run_reader_bench

    mrc_train = REPO.parent / "shared" / "training" / "mrc_train.jsonl"
    if not kb.is_dir():
        fail(f"--kb: no folder {kb}")
    if mrc and not mrc_train.exists():
        fail(f"no {mrc_train} (pass --no-mrc to run on the KB alone)")
    if claims_model is not None and not (claims_model / "card.json").is_file():
        fail(f"--claims-model: no card.json in {claims_model} (the model folder run.py train claims exports)")
    if answers_kb is not None and claims_model is None:
        fail("--answers-kb measures a claim checker: give its folder with --claims-model")
    if answers_kb is not None and not (answers_kb / "kb.json").is_file():
        fail(f"--answers-kb: {answers_kb} is not an ingested KB (no kb.json; run.py ingest makes one)")
    try:
        reader = None if claims_model is None else ClaimReader(claims_model, get_settings().cache_dir).warm_up()
        result = run_reader_bench(
            kb,
            mrc_train if mrc else None,
            limit=DEFAULT_LIMIT if limit is None else limit or None,
            seed=seed,
            claim_reader=reader,
            reject_above=reject_above,
        )
        if reader is not None and kb.resolve() == DEMO_DIR.resolve():  # the corpus cites the demo's chunks
            from citescope.workflows.evaluation.bench.llm_inversions import run_llm_inversions

            result["inversions"] = run_llm_inversions(kb, claim_reader=reader, reject_above=reject_above)
        if answers_kb is not None and reader is not None:
            from citescope.knowledge.kb import KnowledgeBase
            from citescope.workflows.evaluation.bench.probe_answers import run_probe_answer_bench

            kb_answering = KnowledgeBase(answers_kb)
            try:
                result["probe_answers"] = run_probe_answer_bench(kb_answering, reader, reject_above, seed=seed)
            finally:
                kb_answering.close()
    except ValueError as exc:  # a folder without documents, a delta made on another base file
        fail(exc)
    print(json.dumps(result, ensure_ascii=False, indent=2) if as_json else format_reader_report(result))
