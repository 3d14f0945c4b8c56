"""Crash trials: SIGKILL `run.py ingest` / `ingest --prune` / `delete` at random moments.

After every kill each document must be in exactly its old or its new version in the catalog,
BM25 and Milvus, with nothing duplicated; rerunning the same command must converge to the new
version. Kill moments are uniform over the duration of an unkilled run of the same command, so
they land wherever the time goes: interpreter start-up and imports, opening the KB, embedding,
Milvus writes, the SQLite switch, stale-row cleanup, the BM25 snapshot.
tests/knowledge/test_crash_safety.py uses the same helpers to kill right after chosen stages.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from citescope.knowledge.chunking import chunk_document
from citescope.knowledge.ingest import Ingestor
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.loaders import load_path
from citescope.knowledge.settings import get_settings

REPO = Path(__file__).resolve().parents[3]
# `stage NAME` lines on stderr after each durable write; two documents per atomic switch, so
# an update of ten documents is fifteen separate writes to land between.
STAGE_ENV = {"CITESCOPE_INGEST_STAGES": "1", "CITESCOPE_INGEST_BATCH_DOCS": "2"}
N_DOCS = 12  # in v1; v2 changes every doc whose index is not a multiple of 3 and adds two
PRUNED = ("d3", "d4", "d8")  # left out of the pruned v2 file: one changed, two unchanged in v2
DELETED = ("d0", "d1", "d5", "d9")
KINDS = ("ingest", "prune", "delete", "ingest", "ingest")  # trial i runs KINDS[i % 5]

_PRODUCTS = (
    ("星择 XZ-3000 充电宝", "数码配件", "容量20000mAh，支持22.5W快充"),
    ("云朵 AF-5 空气炸锅", "厨房电器", "5升大容量，带可视窗口"),
    ("北岸 M2 冲锋衣", "户外服装", "三层压胶面料，防水指数10000mm"),
    ("青禾 有机燕麦片 1kg", "食品", "澳洲进口燕麦，无添加蔗糖"),
    ("极光 K8 机械键盘", "电脑外设", "热插拔轴体，蓝牙、2.4G、有线三模连接"),
    ("暖居 双人电热毯", "家居", "六档温控，过热自动断电"),
    ("跃动 R1 跑步鞋", "运动鞋", "氮气中底，单只鞋重230克"),
    ("清泉 RO-600 净水器", "厨房电器", "600加仑大通量，RO滤芯寿命24个月"),
    ("小满 儿童保温杯 400ml", "母婴", "316不锈钢内胆，保温12小时"),
    ("听澜 H3 降噪耳机", "数码", "主动降噪深度40dB，续航30小时"),
    ("森屿 1.2米实木书桌", "家具", "北美白橡木，桌面承重80公斤"),
    ("售后服务政策", "", ""),  # the policy: long enough for several chunks
    ("星择 XZ-5000 充电宝", "数码配件", "容量30000mAh，支持65W笔记本快充"),
    ("云朵 AF-7 空气炸锅", "厨房电器", "7升双篮，可同时烹饪两道菜"),
)
_POLICY = (
    "一、退换货：自签收之日起7天内，商品未使用且包装完好的，可申请无理由退货；15天内出现质量问题的，可换货。"
    "定制商品、已拆封的食品和贴身衣物不支持无理由退货。退货运费由买家承担，质量问题的运费由商家承担。\n\n"
    "二、保修：数码和家电类商品按商品页写明的保修期提供免费维修，人为损坏、进水和私自拆机不在保修范围内。"
    "保修期内同一故障维修两次仍未修好的，可换新机。送修时请附上订单号和故障描述，我们收到后3个工作日内检测。\n\n"
    "三、发货与配送：工作日16点前付款的订单当天发货，其余次日发货；偏远地区（新疆、西藏、青海）另加运费10元。"
    "大件家具需预约送货上门，安装服务免费，楼层费按当地标准由配送方收取。\n\n"
    "四、价格保护：下单后7天内同一商品降价的，可申请退还差价，每个订单限一次，秒杀和直播专享价除外。"
)


def corpus(version: int, drop: tuple[str, ...] = ()) -> list[dict]:
    """Shop documents: v1 has N_DOCS, v2 changes two thirds of them (the policy too) and adds two."""
    rows = []
    for i in range(N_DOCS + (2 if version == 2 else 0)):
        doc_id = f"d{i}"
        if doc_id in drop:
            continue
        changed = version == 2 and i % 3 != 0
        name, category, feature = _PRODUCTS[i]
        if name == "售后服务政策":
            text = _POLICY + (
                "\n\n五、以旧换新：2024年6月起，数码类商品支持以旧换新，旧机最高抵扣50元。" if changed else ""
            )
            rows.append({"doc_id": doc_id, "title": name, "text": text, "doc_type": "policy"})
            continue
        months = 12 + i if changed else 6 + i
        text = f"{name}，{feature}。保修期{months}个月。" + (
            "2024年6月起支持以旧换新，旧机最高抵扣50元。" if changed else "质量问题签收后7天内可退换。"
        )
        rows.append({"doc_id": doc_id, "title": name, "text": text, "doc_type": "product", "category": category})
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


def versions_by_doc(path: Path) -> dict[str, tuple[str, ...]]:
    """doc_id -> the texts of its chunks, as ingesting `path` would write them."""
    docs, issues, _ = load_path(path)
    if issues:
        raise ValueError(f"{path}: {issues}")
    return {d.doc_id: tuple(c.text for c in chunk_document(d)) for d in docs}


@dataclass
class CliRun:
    killed: bool  # died by our SIGKILL before finishing
    returncode: int
    stages: list[str]  # the `stage` lines it wrote before it ended
    seconds: float
    stderr_tail: str = ""
    stage_seconds: list[float] = field(default_factory=list)  # when each stage line arrived, from start


def run_cli(
    args: list[str], kill_after_seconds: float | None = None, kill_after_stage: int | None = None, jitter: float = 0.0
) -> CliRun:
    """Run `run.py ARGS` with stage lines on; SIGKILL it after a delay or right after its n-th stage.

    Without either it runs to the end (how the bench measures an unkilled run).
    """
    proc = subprocess.Popen(
        [sys.executable, "run.py", *args],
        cwd=REPO,
        env={**os.environ, **STAGE_ENV},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr = proc.stderr
    assert stderr is not None  # stderr=PIPE
    started = time.perf_counter()
    stages: list[str] = []
    stage_seconds: list[float] = []
    other: list[str] = []
    reached = threading.Event()

    def read_stderr() -> None:  # drains the pipe even after the kill: lines written before death count
        for line in stderr:
            if line.startswith("stage "):
                stages.append(line.split()[1])
                stage_seconds.append(time.perf_counter() - started)
                if len(stages) == kill_after_stage:
                    reached.set()
            else:
                other.append(line)
        reached.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    if kill_after_stage is not None:
        reached.wait(timeout=300)
        time.sleep(jitter)
    else:
        try:
            proc.wait(timeout=kill_after_seconds)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=300)
    seconds = time.perf_counter() - started
    reader.join(timeout=30)
    return CliRun(
        proc.returncode == -signal.SIGKILL, proc.returncode, stages, seconds, "".join(other[-20:]), stage_seconds
    )


@dataclass
class Consistency:
    states: dict[str, str] = field(default_factory=dict)  # doc_id -> old | new | absent | unchanged
    violations: list[str] = field(default_factory=list)
    orphan_rows: int = 0  # Milvus rows no catalog chunk references: invisible, removed by the next ingest
    # Primary keys Milvus holds more than once: milvus-lite 3.2.2 replays a flushed WAL again when a
    # process dies between a flush's manifest commit and its WAL deletion. Visible harm (a chunk
    # twice in dense search) is a violation of its own; the copies must be gone after a rerun.
    rows_stored_twice: int = 0
    live_rows_stored_twice: int = 0

    def converged(self) -> bool:
        return (
            not self.violations
            and not self.rows_stored_twice
            and all(s in ("new", "unchanged") for s in self.states.values())
        )


def check_consistent(kb_dir: Path, old: dict, new: dict) -> Consistency:
    """Is every document of `old` ∪ `new` in exactly its old or its new version, in every index?

    `absent` is a document with no chunks: the old state of an added one or the new state of a
    deleted one. It is labelled `new` once the run's target state is reached, so convergence
    means every document is `new` or `unchanged`.
    """
    result = Consistency()
    kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir)).warm_up()
    try:
        for doc_id in sorted(set(old) | set(new)):
            texts = tuple(c.text for c in kb.chunks_of(doc_id))
            before, after = old.get(doc_id, ()), new.get(doc_id, ())
            if before == after:
                state = "unchanged" if texts == after else None
            elif texts == after:
                state = "new"
            elif texts == before:
                state = "absent" if not texts else "old"
            else:
                state = None
            if state is None:
                result.violations.append(f"{doc_id} is neither old nor new: {texts}")
            else:
                result.states[doc_id] = state
        chunks = kb.all_chunks()
        chunk_ids = [c.chunk_id for c in chunks]
        live_rows = kb.catalog.all_row_ids()
        assert kb.vectors is not None  # warmed up above
        copies = kb.vectors.row_copies()  # row_id -> rows Milvus holds under it (a primary key: 1)
        vector_rows = set(copies)
        result.orphan_rows = len(vector_rows - live_rows)
        repeated = {row for row, n in copies.items() if n > 1}
        result.rows_stored_twice, result.live_rows_stored_twice = len(repeated), len(repeated & live_rows)
        if not live_rows <= vector_rows:
            result.violations.append(f"{len(live_rows - vector_rows)} live chunks lost their vectors")
        if not len(chunk_ids) == len(set(chunk_ids)) == len(live_rows):
            result.violations.append(
                f"duplicate chunks: {len(chunk_ids)} chunks, {len(set(chunk_ids))} ids, {len(live_rows)} row ids"
            )
        dense = [h.chunk_id for h in kb.search_dense("保修期多久", k=len(chunk_ids))]
        if len(dense) != len(set(dense)) or set(dense) != set(chunk_ids):
            result.violations.append(
                f"dense search returned {len(dense)} hits, {len(set(dense))} distinct, for {len(chunk_ids)} chunks"
            )
        live = set(chunk_ids)
        for chunk in chunks:  # BM25 indexes exactly the catalog's chunks: each finds itself, nothing else
            found = [h.chunk_id for h in kb.search_keyword(chunk.text, k=len(chunk_ids))]
            if chunk.chunk_id not in found or len(found) != len(set(found)) or not set(found) <= live:
                result.violations.append(f"BM25 out of step with the catalog at {chunk.chunk_id}")
                break
    finally:
        kb.close()
    return result


def ingest_in_process(kb_dir: Path, paths: list[Path], prune: bool = False, create: bool = False) -> None:
    kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir), create=create)
    try:
        # the pruned file drops 3 of 12 documents (25%), over the default 20% guard: on purpose
        summary = Ingestor(kb, show_progress=False).run(paths, prune=prune, allow_large_prune=True)
    finally:
        kb.close()
    if summary.issues:
        raise RuntimeError(f"ingest of {paths} reported issues: {summary.issues}")


def _copy_kb(base: Path, workdir: Path, name: str) -> Path:
    """A copy of the base KB under a path never used before in this process: Milvus Lite keeps one
    in-process server per path until exit, and would serve a reused path from its stale memory."""
    kb_dir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=workdir)) / "kb"
    shutil.copytree(base, kb_dir)
    return kb_dir


def _discard_kb(kb_dir: Path) -> None:
    """Stop the in-process Milvus Lite server of a finished copy (pymilvus never does) and delete it."""
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(str(kb_dir / "milvus.db"))
    shutil.rmtree(kb_dir.parent)


def _rerun(kind: str, kb_dir: Path, files: dict[str, Path]) -> None:
    """The interrupted command again, in process."""
    if kind == "delete":
        kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir))
        try:
            Ingestor(kb, show_progress=False).delete(list(DELETED))
        finally:
            kb.close()
    else:
        ingest_in_process(kb_dir, [files[kind]], prune=kind == "prune")


def _cli_args(kind: str, kb_dir: Path, files: dict[str, Path]) -> list[str]:
    if kind == "delete":
        return ["delete", *DELETED, "--kb", str(kb_dir)]
    return [
        "ingest",
        str(files[kind]),
        "--kb",
        str(kb_dir),
        "--json",
        "--no-self-calibrate",  # the bench kills the store's writes: the probes' run after them would dilute its kills
        *(["--prune", "--yes"] if kind == "prune" else []),
    ]


def run_crash_trials(
    trials: int, seed: int, workdir: Path, measure_runs: int = 2, window: Literal["run", "writes"] = "run"
) -> dict:
    """`trials` SIGKILLs at uniformly random moments; counts of kills, phases, states, violations.

    window "run": the moment is uniform from process start to the end of the fastest of
    `measure_runs` unkilled runs of the command (most of it is start-up: imports, opening the KB).
    "writes": uniform over that run's write phase only — from one stage's length before its first
    `stage` line to its end — where documents change (`delete` reports no stages: whole run).
    """
    if window not in ("run", "writes"):
        raise ValueError(f"window must be 'run' or 'writes', not {window!r}")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    v1 = write_jsonl(workdir / "v1.jsonl", corpus(1))
    files = {
        "ingest": write_jsonl(workdir / "v2.jsonl", corpus(2)),
        "prune": write_jsonl(workdir / "v2-pruned.jsonl", corpus(2, drop=PRUNED)),
    }
    old = versions_by_doc(v1)
    targets = {
        "ingest": versions_by_doc(files["ingest"]),
        "prune": versions_by_doc(files["prune"]),
        "delete": {d: t for d, t in old.items() if d not in DELETED},
    }
    base = Path(tempfile.mkdtemp(prefix="base-", dir=workdir)) / "kb"
    ingest_in_process(base, [v1], create=True)

    # How long each command takes unkilled: the fastest run, as the first also fills the embedding
    # cache for v2 and warms the OS file cache, which the killed runs then enjoy.
    durations: dict[str, float] = {}
    windows: dict[str, tuple[float, float]] = {}
    stage_totals: dict[str, int] = {}
    for kind in dict.fromkeys(KINDS):
        for _ in range(max(1, measure_runs)):
            kb_dir = _copy_kb(base, workdir, f"measure-{kind}")
            run = run_cli(_cli_args(kind, kb_dir, files))
            if run.returncode != 0:
                raise RuntimeError(f"unkilled {kind} run failed ({run.returncode}):\n{run.stderr_tail}")
            if not check_consistent(kb_dir, old, targets[kind]).converged():
                raise RuntimeError(f"unkilled {kind} run did not reach its target state")
            if run.seconds <= durations.get(kind, run.seconds):
                durations[kind] = run.seconds
                windows[kind] = _write_window(run) if window == "writes" else (0.0, run.seconds)
            stage_totals[kind] = len(run.stages)
            _discard_kb(kb_dir)

    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    for trial in range(trials):
        kind = KINDS[trial % len(KINDS)]
        kb_dir = _copy_kb(base, workdir, f"trial-{trial}")
        delay = rng.uniform(*windows[kind])
        run = run_cli(_cli_args(kind, kb_dir, files), kill_after_seconds=delay)
        after_kill = check_consistent(kb_dir, old, targets[kind])
        violations = [f"after kill: {v}" for v in after_kill.violations]
        if not run.killed and run.returncode != 0:
            violations.append(f"{kind} failed with exit code {run.returncode}:\n{run.stderr_tail}")
        _rerun(kind, kb_dir, files)
        after_rerun = check_consistent(kb_dir, old, targets[kind])
        violations += [f"after rerun: {v}" for v in after_rerun.violations]
        if after_rerun.rows_stored_twice:
            violations.append(f"after rerun: Milvus still holds {after_rerun.rows_stored_twice} rows twice")
        if kind != "delete" and after_rerun.orphan_rows:  # an ingest reconciles first; delete does not
            violations.append(f"after rerun: {after_rerun.orphan_rows} orphan vector rows survived")
        records.append(
            {
                "trial": trial,
                "kind": kind,
                "delay_s": round(delay, 3),
                "killed": run.killed,
                "phase": f"{kind}:{_phase(run, after_kill, stage_totals[kind])}",
                "stages_seen": len(run.stages),
                "states": dict(Counter(after_kill.states.values())),
                "orphans_after_kill": after_kill.orphan_rows,
                "orphans_after_rerun": after_rerun.orphan_rows,
                "rows_stored_twice_after_kill": after_kill.rows_stored_twice,
                "live_rows_stored_twice_after_kill": after_kill.live_rows_stored_twice,
                "rows_stored_twice_after_rerun": after_rerun.rows_stored_twice,
                "converged": after_rerun.converged(),
                "violations": violations,
            }
        )
        _discard_kb(kb_dir)
    _discard_kb(base)

    states: Counter = Counter()
    for record in records:
        states.update(record["states"])
    return {
        "trials": trials,
        "seed": seed,
        "window": window,
        "kill_windows_s": {k: [round(a, 2), round(b, 2)] for k, (a, b) in windows.items()},
        "killed": sum(r["killed"] for r in records),
        "by_kind": dict(Counter(r["kind"] for r in records)),
        "by_phase": dict(sorted(Counter(r["phase"] for r in records if r["killed"]).items())),
        "states": {s: states[s] for s in ("old", "new", "absent", "unchanged")},
        "violations": sum(len(r["violations"]) for r in records),
        "rerun_converged": sum(r["converged"] for r in records),
        # only `delete` may leave them: it does not reconcile; invisible, the next ingest removes them
        "orphan_rows_after_rerun": sum(r["orphans_after_rerun"] for r in records),
        "rows_stored_twice": {
            "trials": sum(r["rows_stored_twice_after_kill"] > 0 for r in records),
            "after_kill": sum(r["rows_stored_twice_after_kill"] for r in records),
            "live_after_kill": sum(r["live_rows_stored_twice_after_kill"] for r in records),
            "after_rerun": sum(r["rows_stored_twice_after_rerun"] for r in records),
        },
        "unkilled_seconds": {k: round(v, 2) for k, v in durations.items()},
        "records": records,
    }


def _write_window(run: CliRun) -> tuple[float, float]:
    """From about when the first batch starts writing (a stage's length before its line) to the end."""
    times = run.stage_seconds
    if not times:
        return 0.0, run.seconds
    stage = (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else 0.05
    return max(0.0, times[0] - stage), run.seconds


def _phase(run: CliRun, after_kill: Consistency, total_stages: int) -> str:
    """Where the kill landed: after the last durable write the process reported, if any."""
    if not run.killed:
        return "finished"
    if run.stages and len(run.stages) == total_stages:
        return "after-last-write"  # prune, BM25 snapshot, closing
    if run.stages:
        return f"after-{run.stages[-1]}"
    if "new" in after_kill.states.values():  # `delete` reports no stages: its one transaction committed
        return "after-catalog-switched"
    return "before-first-write"  # start-up, imports, KB open, loading, embedding


def format_crash_report(result: dict) -> str:
    lines = [
        f"SIGKILL at random moments ({result['window']} window): {result['trials']} trials (seed {result['seed']}; "
        f"{', '.join(f'{k} {n}' for k, n in result['by_kind'].items())}), "
        f"{result['killed']} killed before finishing",
        "",
        "| phase of the kill (last durable write seen) | kills |",
        "|---|---|",
        *[f"| {phase} | {n} |" for phase, n in result["by_phase"].items()],
        "",
        "document states after the kills: " + ", ".join(f"{k} {v}" for k, v in result["states"].items()),
        f"violations: {result['violations']}   reruns converged: {result['rerun_converged']}/{result['trials']}   "
        f"orphan vector rows left after reruns: {result['orphan_rows_after_rerun']}",
        "Milvus rows stored twice under one primary key (milvus-lite WAL replay): "
        + ", ".join(f"{k} {v}" for k, v in result["rows_stored_twice"].items()),
        f"unkilled run seconds: {result['unkilled_seconds']}; kill windows (s): {result['kill_windows_s']}",
    ]
    for record in result["records"]:
        lines += [f"trial {record['trial']} ({record['kind']}): {v}" for v in record["violations"]]
    return "\n".join(lines)
