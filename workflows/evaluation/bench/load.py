"""HTTP load on the service, the way a customer-service bot would call it.

`run.py serve` runs in a subprocess on loopback over a copy of the KB (without its sessions,
experience and traces, so the run starts clean and the user's KB is untouched), with an API key.
One warm-up request per worker, then N /v1/ask requests with C in flight (httpx async; each
worker keeps its own session id, like C concurrent conversations); meanwhile /healthz is probed
every 100 ms, which shows whether answering stalls the server's event loop. Reported:
throughput, latency (all, computed, served from the result cache), errors, health latency, and
the server process's open files, threads, memory and stored sessions before vs after.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

from citescope.workflows.metrics import latency_summary

REPO = Path(__file__).resolve().parents[3]
STATE_FILES = ("sessions.sqlite*", "experience.sqlite*", "traces.sqlite*")
HEALTH_PROBE_S = 0.1


def run_load_bench(
    kb_dir: Path | str,
    n_requests: int = 200,
    concurrency: int = 20,
    questions_path: Path | str = REPO / "knowledge" / "demo" / "questions.jsonl",
) -> dict:
    questions = [
        json.loads(line)["question"]
        for line in Path(questions_path).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    with tempfile.TemporaryDirectory(prefix="citescope-load-") as tmp:
        kb_copy = Path(tmp) / "kb"
        shutil.copytree(kb_dir, kb_copy, ignore=shutil.ignore_patterns(*STATE_FILES))
        key = secrets.token_urlsafe(16)
        secret = secrets.token_hex(8)  # what a customer might type: it must never reach a log
        with open(Path(tmp) / "server.log", "w+", encoding="utf-8") as log, _Server(kb_copy, key, log) as server:
            result = asyncio.run(_drive(server, questions, n_requests, concurrency, kb_copy))
            result["auth"] = _auth_checks(server, secret)
            server.stop()
            log.seek(0)
            text = log.read()
            result["access_log_lines"] = sum(1 for line in text.splitlines() if '"path": "/v1/ask"' in line)
            result["log_leaks"] = {"api_key": text.count(key), "customer_secret": text.count(secret)}
    result["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version()}
    return result


class _Server:
    def __init__(self, kb_dir: Path, key: str, log, env: dict[str, str] | None = None) -> None:
        with socket.socket() as probe:  # a free loopback port
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.headers = {"Authorization": f"Bearer {key}"}
        env = {**os.environ, **(env or {}), "CITESCOPE_API_KEYS": key}
        self.process = subprocess.Popen(
            [sys.executable, str(REPO / "run.py"), "serve", "--kb", str(kb_dir), "--port", str(self.port)],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=log,
        )

    def __enter__(self) -> _Server:
        try:
            self._wait_ready(deadline=time.monotonic() + 300)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, deadline: float) -> None:
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the service exited with {self.process.returncode} before it was ready")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the service was not ready within 300 s")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # uvicorn's graceful shutdown
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __exit__(self, *exc) -> None:
        self.stop()


async def _ask(client: httpx.AsyncClient, question: str, session_id: str) -> dict:
    started = time.perf_counter()
    try:
        response = await client.post("/v1/ask", json={"question": question, "session_id": session_id})
    except httpx.HTTPError as exc:
        return {"error": type(exc).__name__, "ms": (time.perf_counter() - started) * 1000}
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        return {"error": str(response.status_code), "ms": elapsed}
    body = response.json()
    return {
        "ms": elapsed,
        "cached": "cached" in body["timings_ms"],
        "refused": body["refused"],
        "refusal_reason": body["refusal_reason"],
    }


async def _drive(server: _Server, questions: list[str], n_requests: int, concurrency: int, kb_dir: Path) -> dict:
    def client() -> httpx.AsyncClient:  # closed before each resource reading: no client connection is counted
        limits = httpx.Limits(max_connections=concurrency + 2, max_keepalive_connections=concurrency + 2)
        return httpx.AsyncClient(base_url=server.url, headers=server.headers, timeout=300, limits=limits)

    async with client() as warm:  # one request per worker: its session exists from here on
        await asyncio.gather(*(_ask(warm, questions[i % len(questions)], f"load-{i}") for i in range(concurrency)))
    await asyncio.sleep(1.0)
    before = _resources(server.process.pid, kb_dir)

    next_index = iter(range(n_requests))
    outcomes: list[dict] = []
    health: list[float] = []
    stop = asyncio.Event()
    async with client() as load:

        async def worker(number: int) -> None:
            for index in next_index:
                outcomes.append(await _ask(load, questions[index % len(questions)], f"load-{number}"))

        async def probe_health() -> None:
            while not stop.is_set():
                started = time.perf_counter()
                await load.get("/healthz")
                health.append((time.perf_counter() - started) * 1000)
                await asyncio.sleep(HEALTH_PROBE_S)

        prober = asyncio.create_task(probe_health())
        started = time.perf_counter()
        await asyncio.gather(*(worker(number) for number in range(concurrency)))
        seconds = time.perf_counter() - started
        stop.set()
        await prober
    await asyncio.sleep(1.0)
    after = _resources(server.process.pid, kb_dir)

    ok = [o for o in outcomes if "error" not in o]
    return {
        "requests": n_requests,
        "concurrency": concurrency,
        "distinct_questions": len(questions),
        "seconds": round(seconds, 2),
        "throughput_rps": round(len(ok) / seconds, 2),
        "latency_ms": latency_summary([o["ms"] for o in ok]),
        "computed_latency_ms": latency_summary([o["ms"] for o in ok if not o["cached"]]),
        "cached_latency_ms": latency_summary([o["ms"] for o in ok if o["cached"]]),
        "cached_share": round(sum(o["cached"] for o in ok) / max(len(ok), 1), 3),
        "refused_share": round(sum(o["refused"] for o in ok) / max(len(ok), 1), 3),
        "errors": dict(Counter(o["error"] for o in outcomes if "error" in o)),
        "health_during_load_ms": {**latency_summary(health), "probes": len(health)},
        "server": {"before": before, "after": after},
    }


def _auth_checks(server: _Server, secret: str) -> dict:
    """Status codes of /v1/ask without a key, with a wrong key, and with the key for a question
    that carries a customer's secret (an order password), which must then be in no log line."""
    question = {"question": f"我的订单支付密码是 {secret}，AJ1 多少钱？"}
    url = f"{server.url}/v1/ask"
    return {
        "no_key": httpx.post(url, json=question, timeout=60).status_code,
        "wrong_key": httpx.post(url, json=question, headers={"Authorization": "Bearer wrong"}, timeout=60).status_code,
        "right_key": httpx.post(url, json=question, headers=server.headers, timeout=300).status_code,
    }


def _resources(pid: int, kb_dir: Path) -> dict:
    """The server's open file descriptors, threads and resident memory (Linux /proc), and the
    sessions and turns it has stored."""
    out: dict = {}
    try:
        out["open_fds"] = len(os.listdir(f"/proc/{pid}/fd"))
        status = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
        )
        out["threads"] = int(status["Threads"].strip())
        out["rss_mib"] = round(int(status["VmRSS"].split()[0]) / 1024, 1)
    except OSError:  # not Linux: no /proc
        pass
    path = kb_dir / "sessions.sqlite"
    if path.exists():
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            out["sessions"] = db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
            out["turns"] = db.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
    return out


def format_load_report(result: dict) -> str:
    def row(name: str, stats: dict) -> str:
        if not stats.get("n"):
            return f"| {name} | 0 | - | - | - |"
        return f"| {name} | {stats['n']} | {stats['p50']:.1f} | {stats['p95']:.1f} | {stats['max']:.1f} |"

    before, after = result["server"]["before"], result["server"]["after"]
    keys = [k for k in ("open_fds", "threads", "rss_mib", "sessions", "turns") if k in before]
    return "\n".join(
        [
            f"HTTP load: {result['requests']} POST /v1/ask at {result['concurrency']} in flight "
            f"({result['distinct_questions']} distinct questions, one session per worker), "
            f"{result['machine']['cpus']} CPUs",
            "",
            f"throughput {result['throughput_rps']} req/s over {result['seconds']} s; errors {result['errors'] or 0}; "
            f"served from the result cache {result['cached_share']:.0%}; refused {result['refused_share']:.0%}; "
            f"access-log lines for /v1/ask {result.get('access_log_lines')}",
            f"API key enforced: no key -> {result['auth']['no_key']}, wrong key -> {result['auth']['wrong_key']}, "
            f"right key -> {result['auth']['right_key']}; "
            f"in the server log: the API key {result['log_leaks']['api_key']} "
            f"times, a customer's secret from a question {result['log_leaks']['customer_secret']} times",
            "",
            "| requests | n | p50 ms | p95 ms | max ms |",
            "|---|---:|---:|---:|---:|",
            row("all", result["latency_ms"]),
            row("computed", result["computed_latency_ms"]),
            row("from cache", result["cached_latency_ms"]),
            row("GET /healthz during the load", result["health_during_load_ms"]),
            "",
            "| server process | " + " | ".join(keys) + " |",
            "|---|" + "---:|" * len(keys),
            "| before | " + " | ".join(str(before[k]) for k in keys) + " |",
            "| after | " + " | ".join(str(after[k]) for k in keys) + " |",
            "",
            "```json",
            json.dumps(result, ensure_ascii=False),
            "```",
        ]
    )
