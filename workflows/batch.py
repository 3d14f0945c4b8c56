"""Batch Q&A: a file of questions in, one JSON line per answer out, resumable after any crash.

Input: JSONL or CSV rows with `id` (or the datasets' `qid`), `question`, and optionally
`session_id` (or the datasets' `session`) and `as_of` (the time it asks about: YYYY[-MM[-DD]]).
Turns of one session run in input order (a follow-up needs its earlier turns); everything else
runs `concurrency` at a time. Output: one line per input id — the QAResult fields plus `id`,
`latency_ms` and `error` (null, or why this item failed; an item's failure is never fatal). Each
line is written by one append and fsync'd, so a crash leaves whole lines and at most one torn last
line, which the next run drops and redoes; ids already in the output are skipped, so rerunning the
same command finishes the job without duplicating a line. Customers' personal data in the
questions and answers is redacted in the output (workflows.personal_data).
"""

from __future__ import annotations

import asyncio
import collections
import csv
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from citescope.agents.usage import UsageReport
from citescope.knowledge.filters import SearchFilters
from citescope.workflows.metrics import latency_summary
from citescope.workflows.personal_data import redact_personal_in
from citescope.workflows.progress import RecordProgress
from citescope.workflows.validation import describe_validation_error

ID_FIELDS = ("id", "qid")
SESSION_FIELDS = ("session_id", "session")


class BatchItem(BaseModel):
    id: str
    question: str = ""
    session_id: str | None = None
    as_of: str | None = None  # the time the question is about (SearchFilters.as_of)
    problem: str | None = None  # why the row cannot be asked (written as the item's error)


class BatchSummary(BaseModel):
    output: str
    items: int  # distinct ids in the input
    skipped: int  # already in the output when this run started
    written: int  # lines this run wrote
    answered: int  # over the whole output: answers that are not refusals
    refused: int
    conflicts: int  # answers that disclose conflicting sources
    errors: int
    p50_ms: float | None
    p95_ms: float | None
    seconds: float
    duplicate_ids: list[str] = []  # input ids seen more than once (only the first is asked)
    usage: UsageReport = Field(default_factory=UsageReport)  # model requests, tokens, cost: the whole output

    def render(self) -> str:
        latency = "n/a" if self.p50_ms is None else f"p50 {self.p50_ms:.0f} ms, p95 {self.p95_ms:.0f} ms"
        lines = [
            f"{self.output}: {self.items} items ({self.skipped} already done, {self.written} written now, "
            f"{self.seconds:.1f}s)",
            f"answered {self.answered}  refused {self.refused}  conflicts {self.conflicts}  "
            f"errors {self.errors}  latency {latency}",
            f"usage: {self.usage.render()}",
        ]
        if self.duplicate_ids:
            lines.append(f"duplicate ids asked once: {', '.join(self.duplicate_ids[:10])}")
        return "\n".join(lines)


# -- input --------------------------------------------------------------------------------------
def read_items(path: Path | str) -> list[BatchItem]:
    """Every row in file order; a row that cannot be asked keeps its id (or line-N) and a problem."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with open(path, encoding="utf-8-sig", newline="") as handle:  # -sig: Excel writes a BOM
            return [_item(row, number) for number, row in enumerate(csv.DictReader(handle), start=2)]
    if suffix not in (".jsonl", ".json", ".ndjson"):
        raise ValueError(f"{path}: unsupported input (use .jsonl or .csv)")
    items = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                items.append(BatchItem(id=f"line-{number}", problem=f"line {number} is not JSON ({exc})"))
                continue
            items.append(_item(row if isinstance(row, dict) else {}, number))
    return items


def _item(row: dict, number: int) -> BatchItem:
    item_id = next((str(row[f]).strip() for f in ID_FIELDS if str(row.get(f) or "").strip()), f"line-{number}")
    session = next((str(row[f]).strip() for f in SESSION_FIELDS if str(row.get(f) or "").strip()), None)
    question = row.get("question")
    if question is not None and not isinstance(question, str):  # 123, a list: not a typo for "no question"
        got = f"{type(question).__name__} {question!r:.60}"
        return BatchItem(id=item_id, session_id=session, problem=f"line {number}: the question must be text, got {got}")
    if question is None or not question.strip():
        return BatchItem(id=item_id, session_id=session, problem=f"line {number}: no question")
    as_of = str(row.get("as_of") or "").strip() or None
    if as_of is not None:
        try:
            SearchFilters(as_of=as_of)
        except ValidationError as exc:
            return BatchItem(id=item_id, session_id=session, problem=f"line {number}: {describe_validation_error(exc)}")
    return BatchItem(id=item_id, question=question, session_id=session, as_of=as_of)


# -- output -------------------------------------------------------------------------------------
class AnswerLog:
    """The output JSONL: which ids it already holds, and durable one-line appends."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._fd: int | None = None

    def open(self, retry_errors: bool = False) -> set[str]:
        """Repair a torn last line, optionally drop error lines, and return the ids present."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        records = self._repair()
        if retry_errors and any(r.get("error") for r in records):
            records = [r for r in records if not r.get("error")]
            self._rewrite(records)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return {str(r["id"]) for r in records}

    def _repair(self) -> list[dict]:
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # a crash mid-append: keep the tail only if it is a whole record
            tail = _parse(data[end:])
            with open(self.path, "r+b") as handle:
                if tail is None:
                    handle.truncate(end)
                else:
                    handle.seek(0, os.SEEK_END)
                    handle.write(b"\n")
                handle.flush()
                os.fsync(handle.fileno())
            data = self.path.read_bytes()
        return [record for line in data.splitlines() if (record := _parse(line)) is not None]

    def _rewrite(self, records: list[dict]) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        with open(temporary, "wb") as handle:
            handle.writelines(_line(record) for record in records)
            handle.flush()
            os.fsync(handle.fileno())
        temporary.replace(self.path)

    def write(self, record: dict) -> None:
        assert self._fd is not None, "open() the results file first"
        data = memoryview(_line(record))
        while data:  # one append; loop only if the OS wrote part of it
            written = os.write(self._fd, data)
            data = data[written:]
        os.fsync(self._fd)

    def records(self) -> list[dict]:
        return [r for line in self.path.read_bytes().splitlines() if (r := _parse(line)) is not None]

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _line(record: dict) -> bytes:
    """One output line, personal data redacted (the ids stay as given: a rerun matches them)."""
    stored = {name: value if name in _KEPT_AS_GIVEN else redact_personal_in(value) for name, value in record.items()}
    return (json.dumps(stored, ensure_ascii=False) + "\n").encode("utf-8")


_KEPT_AS_GIVEN = ("id", "session_id")


def _parse(line: bytes) -> dict | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) and "id" in record else None


# -- the run ------------------------------------------------------------------------------------
class BatchRunner:
    def __init__(self, assistant: Any, concurrency: int = 4, show_progress: bool = True):
        """assistant: a workflows.assistant.Assistant (warmed here if it is not yet)."""
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.assistant = assistant
        self.concurrency = concurrency
        self.show_progress = show_progress

    def run(self, input_path: Path | str, output_path: Path | str, retry_errors: bool = False) -> BatchSummary:
        return asyncio.run(self.arun(input_path, output_path, retry_errors))

    async def arun(self, input_path: Path | str, output_path: Path | str, retry_errors: bool = False) -> BatchSummary:
        started = time.perf_counter()
        items, duplicates = _distinct(read_items(input_path))
        log = AnswerLog(output_path)
        done = log.open(retry_errors)
        todo = [item for item in items if item.id not in done]
        try:
            if todo:
                self.assistant.warm_up()
                with RecordProgress("batch", len(todo), self.show_progress, counted=("error", "refused")) as advance:
                    await self._answer_all(todo, log, advance)
        finally:
            log.close()
        return summarize(
            log.records(),
            output=str(output_path),
            items=len(items),
            skipped=len(items) - len(todo),
            written=len(todo),
            seconds=time.perf_counter() - started,
            duplicate_ids=duplicates,
        )

    async def _answer_all(self, todo: list[BatchItem], log: AnswerLog, advance: Callable[[dict], None]) -> None:
        lanes: dict[str, list[BatchItem]] = {}  # one lane per session (in order), one per lone item
        for item in todo:
            lanes.setdefault(f"s:{item.session_id}" if item.session_id else f"i:{item.id}", []).append(item)
        waiting = collections.deque(lanes.values())

        async def worker() -> None:
            this_task = asyncio.current_task()
            assert this_task is not None  # a coroutine run by gather is always a task
            while waiting:
                for item in waiting.popleft():
                    record = await self._answer(item)
                    if this_task.cancelling():
                        # Ctrl-C: AgentScope agents turn a cancellation into an "interrupted" reply,
                        # so this answer may be cut short. Drop it (the rerun asks again) and stop.
                        raise asyncio.CancelledError
                    log.write(record)
                    advance(record)

        await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(lanes)))))

    async def _answer(self, item: BatchItem) -> dict:
        base = {"id": item.id, "question": item.question, "session_id": item.session_id}
        if item.problem:
            return {**base, "error": item.problem, "latency_ms": None}
        started = time.perf_counter()
        try:
            result = await self.assistant.ask(
                item.question, session_id=item.session_id, filters={"as_of": item.as_of} if item.as_of else None
            )
        except Exception as exc:  # the item's error, never the batch's
            return {
                **base,
                "error": f"{type(exc).__name__}: {exc}",
                "latency_ms": round((time.perf_counter() - started) * 1000, 1),
            }
        return {
            "id": item.id,
            **result.model_dump(mode="json"),
            "latency_ms": round((time.perf_counter() - started) * 1000, 1),
            "error": None,
        }


def _distinct(items: list[BatchItem]) -> tuple[list[BatchItem], list[str]]:
    seen: set[str] = set()
    kept, duplicates = [], []
    for item in items:
        if item.id in seen:
            duplicates.append(item.id)
        else:
            seen.add(item.id)
            kept.append(item)
    return kept, duplicates


def summarize(records: list[dict], **fields: Any) -> BatchSummary:
    ok = [r for r in records if not r.get("error")]
    latencies = [r["latency_ms"] for r in ok if r.get("latency_ms") is not None]
    summary = latency_summary(latencies)
    p50, p95 = (round(summary["p50"], 1), round(summary["p95"], 1)) if latencies else (None, None)
    return BatchSummary(
        answered=sum(not r.get("refused") for r in ok),
        refused=sum(bool(r.get("refused")) for r in ok),
        conflicts=sum(bool(r.get("conflicts")) for r in ok),
        errors=len(records) - len(ok),
        p50_ms=p50,
        p95_ms=p95,
        usage=UsageReport.combine(UsageReport.read(r.get("usage")) for r in ok),
        **{**fields, "seconds": round(fields["seconds"], 2)},
    )
