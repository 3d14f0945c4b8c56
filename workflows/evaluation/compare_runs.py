"""Are two eval runs the same behaviour? Per question, every recorded field but the timings and the model usage.

A refactoring commit is checked this way (docs/quality.md, "Behaviour checks"): run the same
`run.py eval ... --run-dir DIR` slice from a worktree of the commit and one of its parent, then

    python -m citescope.workflows.evaluation.compare_runs OLD_DIR NEW_DIR

It prints each question whose answer, citations, refusal, evidence, tool calls... differ, and exits
1 when any does (or when a question is in one run only).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Wall-clock measurements differ between any two runs, and what a run spent (model tokens) is no
# part of what it answered; everything else must not differ.
IGNORED_FIELDS = frozenset({"latency_ms", "timings_ms", "usage"})


def read_results(run_dir: Path) -> dict[str, dict]:
    """Every results.jsonl under run_dir, keyed by its split folder and row id."""
    rows: dict[str, dict] = {}
    for path in sorted(run_dir.rglob("results.jsonl")):
        split = path.parent.relative_to(run_dir).as_posix()
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise SystemExit(f"{path}:{number}: not JSON ({error.msg})") from None
                rows[f"{split}/{row['id']}"] = row
    return rows


def differences(old: dict[str, dict], new: dict[str, dict]) -> list[str]:
    """One line per question that is missing on a side or differs in a compared field."""
    lines = [f"{key}: only in the old run" for key in sorted(old.keys() - new.keys())]
    lines += [f"{key}: only in the new run" for key in sorted(new.keys() - old.keys())]
    for key in sorted(old.keys() & new.keys()):
        for field in sorted((old[key].keys() | new[key].keys()) - IGNORED_FIELDS):
            if old[key].get(field) != new[key].get(field):
                lines.append(f"{key}: {field}: {old[key].get(field)!r} -> {new[key].get(field)!r}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    old, new = (read_results(Path(arg)) for arg in args)
    if not old:
        print(f"{args[0]}: no results.jsonl", file=sys.stderr)
        return 2
    found = differences(old, new)
    for line in found:
        print(line)
    print(f"{len(old)} old, {len(new)} new questions; {len(found)} differences", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
