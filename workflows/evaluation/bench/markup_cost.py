"""What safe text costs at ingest: loading corpora with and without markup stripping, and the
prompt-injection screen over the loaded documents (docs/reliability.md, "Safe text out").

`python -m citescope.workflows.evaluation.bench.markup_cost knowledge/demo ../shared/datasets/*/corpus.jsonl`
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Protocol

from citescope.knowledge import load_csv, load_markdown, load_records, load_text, loaders
from citescope.knowledge.injection import screen_documents
from citescope.knowledge.markup import normalize_text
from citescope.knowledge.normalize import normalize


class _Normalize(Protocol):
    def __call__(self, text: str) -> str: ...


def _use_normalize(step: _Normalize) -> None:
    """Every format's module reads its fields through its own `normalize` name."""
    load_records.normalize = step
    load_csv.normalize = step
    load_markdown.normalize = step
    load_text.normalize = step


def run(paths: list[Path], rounds: int = 3) -> dict:
    best: dict[str, float] = {}
    docs: list = []
    try:
        for _ in range(rounds):  # alternating, so a busy machine slows both alike
            for name, step in (("plain", normalize), ("stripping markup", normalize_text)):
                _use_normalize(step)
                started = time.perf_counter()
                docs = [doc for path in paths for doc in loaders.load_path(path)[0]]
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - started)
    finally:
        _use_normalize(normalize_text)
    started = time.perf_counter()
    _, flagged = screen_documents(docs)
    return {
        "documents": len(docs),
        "load_s": {k: round(v, 2) for k, v in best.items()},
        "screen_s": round(time.perf_counter() - started, 2),
        "flagged": len(flagged),
    }


if __name__ == "__main__":
    result = run([Path(p) for p in sys.argv[1:]])
    print(
        f"{result['documents']} documents; load, best of 3: plain {result['load_s']['plain']} s, "
        f"stripping markup {result['load_s']['stripping markup']} s; injection screen {result['screen_s']} s, "
        f"{result['flagged']} flagged"
    )
