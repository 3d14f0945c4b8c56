"""What one long question costs, and what it does to everyone else's answers.

A shopper's ~1,900-character message (workflows/evaluation/bench/long_question_zh.txt: an order of a demo
product told over several paragraphs, the question at the end; written for this benchmark, in no
question set) is measured two ways:

1. CPU: process CPU time (time.process_time, every thread of the process) of one pipeline call,
   in process, over a copy of the KB, for the long message (each repeat a variant with another
   number of days in its last sentence, so no embedding is reused) and for a sample of the demo
   questions, with the Assistant's default strategy policy (the bandit) and configuration.
2. Interference over real HTTP: `run.py serve` on loopback, the same normal questions asked one at
   a time, first on an idle server, then on a second, fresh server (so no answer comes from the
   result cache) while `long_in_flight` clients keep long messages in flight. Reported: the normal
   questions' latency in both phases, and how the long ones fared (answered, refused at the
   deadline, turned away with 503).

The script imports only what older checkouts also have, so the before-fix CPU figure is this file
run against them: `PYTHONPATH=<old checkout> python workflows/evaluation/bench/cost.py --kb DIR --cpu-only`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import secrets
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from citescope.workflows.assistant import Assistant
from citescope.workflows.evaluation.bench.load import _ask, _Server
from citescope.workflows.metrics import latency_summary

REPO = Path(__file__).resolve().parents[3]
LONG_QUESTION_PATH = Path(__file__).with_name("long_question_zh.txt")
DEMO_QUESTIONS = REPO / "knowledge" / "demo" / "questions.jsonl"
STATE_FILES = ("sessions.sqlite*", "experience.sqlite*", "traces.sqlite*")


def long_question(days: int) -> str:
    return LONG_QUESTION_PATH.read_text(encoding="utf-8").strip().replace("{days}", str(days))


def normal_questions(n: int, path: Path = DEMO_QUESTIONS) -> list[str]:
    """The first n distinct questions of a question file."""
    questions = [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return list(dict.fromkeys(questions))[:n]


def _copy_kb(kb_dir: Path | str, into: Path) -> Path:
    """The KB without its sessions, experience and traces: each run starts clean, the user's KB untouched."""
    copy = into / "kb"
    shutil.copytree(kb_dir, copy, ignore=shutil.ignore_patterns(*STATE_FILES))
    return copy


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


# ------------------------------------------------------------------------------------------- CPU
def measure_cpu(kb_dir: Path | str, repeats: int = 3, n_normal: int = 20) -> dict:
    """CPU seconds of one pipeline call: the long message (each repeat another variant) and
    n_normal demo questions, on a warmed Assistant over a copy of the KB."""
    with tempfile.TemporaryDirectory(prefix="citescope-cost-") as tmp:
        assistant = Assistant(_copy_kb(kb_dir, Path(tmp))).warm_up()
        try:
            pipeline = assistant.pipeline
            pipeline.run(long_question(1))  # first use of each stage (jieba dictionaries, caches) is not measured
            load_before = _load_average()

            def cost(question: str) -> dict:
                cpu, wall = time.process_time(), time.perf_counter()
                result = pipeline.run(question)
                return {
                    "cpu_s": time.process_time() - cpu,
                    "wall_s": time.perf_counter() - wall,
                    "stages_ms": result.timings_ms,
                    "refusal_reason": result.refusal_reason,
                    "chars": len(question),
                }

            long_runs = [cost(long_question(days)) for days in range(8, 8 + repeats)]
            normal_runs = [cost(q) for q in normal_questions(n_normal)]
        finally:
            assistant.close()
    cpu = [run["cpu_s"] for run in long_runs]
    normal_cpu = [run["cpu_s"] for run in normal_runs]
    return {
        "long": {
            "chars": long_runs[0]["chars"],
            "repeats": repeats,
            "cpu_s_median": round(statistics.median(cpu), 3),
            "cpu_s_max": round(max(cpu), 3),
            "wall_s_median": round(statistics.median(r["wall_s"] for r in long_runs), 3),
            "stages_ms_last": long_runs[-1]["stages_ms"],
            "refusal_reason": long_runs[-1]["refusal_reason"],
        },
        "normal": {
            "n": len(normal_runs),
            "cpu_s_mean": round(statistics.mean(normal_cpu), 3),
            "cpu_s_max": round(max(normal_cpu), 3),
        },
        "load_average": {"before": load_before, "after": _load_average()},
    }


# ------------------------------------------------------------------------------------------ HTTP
async def _normal_latencies(server, questions: list[str], long_in_flight: int) -> dict:
    """The questions one at a time, with long_in_flight clients asking long messages meanwhile."""
    stop = asyncio.Event()
    long_outcomes: list[dict] = []
    limits = httpx.Limits(max_connections=long_in_flight + 2)
    async with httpx.AsyncClient(base_url=server.url, headers=server.headers, timeout=120, limits=limits) as client:

        async def keep_long_in_flight(number: int) -> None:
            days = 100 * (number + 1)
            while not stop.is_set():  # stops once the normal questions are done: a bounded loop
                days += 1
                long_outcomes.append(await _ask(client, long_question(days), f"long-{number}"))

        loaders = [asyncio.create_task(keep_long_in_flight(n)) for n in range(long_in_flight)]
        if loaders:
            await asyncio.sleep(1.0)  # all of them sent and being computed
        normal = [await _ask(client, question, "normal") for question in questions]
        stop.set()
        await asyncio.gather(*loaders)
    ok = [o for o in normal if "error" not in o]
    answered_long = [o for o in long_outcomes if "error" not in o]
    return {
        "normal_latency_ms": latency_summary([o["ms"] for o in ok]),
        "normal_errors": [o["error"] for o in normal if "error" in o],
        "normal_cached": sum(o.get("cached", False) for o in ok),
        "normal_deadline_refusals": sum(o.get("refusal_reason") == "deadline" for o in ok),
        "long": {
            "sent": len(long_outcomes),
            "latency_ms": latency_summary([o["ms"] for o in answered_long]),
            "deadline_refusals": sum(o.get("refusal_reason") == "deadline" for o in answered_long),
            "errors": [o["error"] for o in long_outcomes if "error" in o],
        },
    }


def measure_interference(
    kb_dir: Path | str, n_normal: int = 30, long_in_flight: int = 4, env: dict[str, str] | None = None
) -> dict:
    """Normal questions' latency on an idle server and, on a fresh one, with long_in_flight long
    messages in flight. env: extra server environment (CITESCOPE_MAX_RUNNING_QUESTIONS=…)."""
    questions = normal_questions(n_normal)
    phases = {}
    with tempfile.TemporaryDirectory(prefix="citescope-cost-") as tmp:
        for phase, in_flight in (("unloaded", 0), ("loaded", long_in_flight)):
            kb_copy = _copy_kb(kb_dir, Path(tmp) / phase)
            with (
                open(Path(tmp) / f"{phase}.log", "w", encoding="utf-8") as log,
                _Server(kb_copy, secrets.token_urlsafe(16), log, env=env) as server,
            ):
                load_before = _load_average()
                phases[phase] = asyncio.run(_normal_latencies(server, questions, in_flight))
                phases[phase]["load_average"] = {"before": load_before, "after": _load_average()}
    ratio = phases["loaded"]["normal_latency_ms"]["p95"] / phases["unloaded"]["normal_latency_ms"]["p95"]
    return {
        "long_in_flight": long_in_flight,
        "normal_questions": len(questions),
        "server_env": env or {},
        **phases,
        "p95_ratio": round(ratio, 2),
    }


def run_cost_bench(
    kb_dir: Path | str,
    repeats: int = 3,
    n_normal: int = 30,
    long_in_flight: int = 4,
    cpu_only: bool = False,
    env: dict[str, str] | None = None,
) -> dict:
    result = {"cpu": measure_cpu(kb_dir, repeats=repeats)}
    if not cpu_only:
        result["http"] = measure_interference(kb_dir, n_normal=n_normal, long_in_flight=long_in_flight, env=env)
    result["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version()}
    return result


def format_cost_report(result: dict) -> str:
    cpu = result["cpu"]
    lines = [
        f"CPU of one pipeline call ({result['machine']['cpus']} CPUs; load average {cpu['load_average']['before']} "
        f"-> {cpu['load_average']['after']})",
        "",
        "| question | n | CPU s (median or mean) | CPU s max |",
        "|---|---:|---:|---:|",
        f"| long message, {cpu['long']['chars']} chars | {cpu['long']['repeats']} | {cpu['long']['cpu_s_median']} | "
        f"{cpu['long']['cpu_s_max']} |",
        f"| demo questions | {cpu['normal']['n']} | {cpu['normal']['cpu_s_mean']} | {cpu['normal']['cpu_s_max']} |",
        "",
        f"long message stages (ms, last repeat): {json.dumps(cpu['long']['stages_ms_last'])}",
    ]
    http = result.get("http")
    if http:

        def row(name: str, phase: dict) -> str:
            stats = phase["normal_latency_ms"]
            return (
                f"| {name} | {stats['n']} | {stats['p50']:.1f} | {stats['p95']:.1f} | {stats['max']:.1f} | "
                f"{phase['load_average']['before']} |"
            )

        loaded = http["loaded"]
        lines += [
            "",
            f"Normal questions over HTTP, one at a time, idle vs {http['long_in_flight']} long messages in flight "
            f"(fresh server each phase; server env {http['server_env'] or 'defaults'})",
            "",
            "| phase | n | p50 ms | p95 ms | max ms | load average |",
            "|---|---:|---:|---:|---:|---|",
            row("idle", http["unloaded"]),
            row(f"{http['long_in_flight']} long in flight", loaded),
            "",
            f"p95 ratio loaded / idle: {http['p95_ratio']}; normal errors {loaded['normal_errors'] or 0}, "
            f"deadline refusals {loaded['normal_deadline_refusals']}; long messages sent {loaded['long']['sent']}, "
            f"p50 {loaded['long']['latency_ms']['p50']:.0f} ms, refused at the deadline "
            f"{loaded['long']['deadline_refusals']}, errors {loaded['long']['errors'] or 0}",
        ]
    lines += ["", "```json", json.dumps(result, ensure_ascii=False), "```"]
    return "\n".join(lines)


if __name__ == "__main__":  # the before-fix figure: this file against an older checkout (module docstring)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpu-only", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = run_cost_bench(args.kb, repeats=args.repeats, cpu_only=args.cpu_only)
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else format_cost_report(report))
