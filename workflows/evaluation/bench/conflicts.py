"""Benchmark: how often detect_conflicts flags questions whose evidence really conflicts, and
how often it flags the rest (false flags), on rgb_zh, domainrag and the demo KB questions.

Evidence per question is built without embeddings, so the whole run takes seconds: the
question's candidate docs (or gold docs when it has none) are chunked as ingestion would, the
chunks are ranked by BM25 over the question (body + 0.5 x title, as KnowledgeBase.search_keyword
does) on those chunks only, and the top 8 become EvidenceHits.

DomainRAG's counterfactual passages (`dragcf-*`) are missing from the shared corpus. The original
set builds each one as its gold passage with the answer replaced by the fake answer, so the bench
rebuilds them that way from the question's `answers` / `fake_answers` and says how many it
rebuilt; a question whose answer text does not occur in its gold passage cannot be rebuilt and
is reported separately.

Run: `.venv/bin/python -m citescope.workflows.evaluation.bench.conflicts [DATASETS_DIR] [--top-k N]` (prints JSON).
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from citescope.agents.conflicts import Conflict, canonical_text, detect_conflicts
from citescope.knowledge.bm25 import BM25Index
from citescope.knowledge.chunking import chunk_document
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.loaders import build_document, load_path
from citescope.knowledge.schema import Chunk, Document
from citescope.knowledge.text import tokenize
from citescope.tools.base import EvidenceHit, LegScore

DATASETS = ("rgb_zh", "domainrag")
TOP_K = 8
TITLE_WEIGHT = 0.5
DEMO_DIR = Path(__file__).resolve().parents[3] / "knowledge" / "demo"


def run_conflict_bench(
    datasets_dir: Path,
    demo_dir: Path | None = DEMO_DIR,
    limit: int | None = None,
    datasets: tuple[str, ...] = DATASETS,
    top_k: int = TOP_K,
) -> dict:
    """Flag rates per dataset and question type; `limit` keeps the first N questions of each type;
    `top_k`: chunks per question's evidence (the pipeline's conflict scan reads 12).

    {dataset: {"by_qtype": {qtype: {n, expect_conflict, flagged, rate, fake_in_conflict,
    flagged_qids}}, "seconds", "rows": [per question: qid, qtype, flagged, conflicts]}}."""
    datasets_dir = Path(datasets_dir)
    report: dict = {}
    for name in datasets:
        folder = datasets_dir / name
        if (folder / "questions.jsonl").exists():
            report[name] = _bench_dataset(folder, limit, top_k)
    if demo_dir is not None and (Path(demo_dir) / "questions.jsonl").exists():
        report["demo"] = _bench_demo(Path(demo_dir), limit, top_k)
    return report


# ----------------------------------------------------------------------------- evidence
def evidence_for(
    question: str, documents: Iterable[Document], lexicon: Lexicon | None = None, top_k: int = TOP_K
) -> list[EvidenceHit]:
    """The top_k chunks of `documents` by BM25 over the question, as EvidenceHits."""
    chunks: list[Chunk] = [chunk for doc in documents for chunk in chunk_document(doc)]
    if not chunks:
        return []
    body_tokens = [tokenize(f"{c.section}\n{c.text}", lexicon) for c in chunks]
    body = BM25Index.build(body_tokens)
    title = BM25Index.build([tokenize(c.title, lexicon) for c in chunks])
    tokens = tokenize(question, lexicon)
    scores = body.get_scores(tokens) + TITLE_WEIGHT * title.get_scores(tokens)
    # On a handful of chunks a word found in most of them gets a negative Okapi idf, so a chunk
    # that matches the question can score below zero: rank every chunk sharing a query word.
    query = set(tokens)
    matching = [i for i, chunk_tokens in enumerate(body_tokens) if query.intersection(chunk_tokens)]
    order = sorted(matching, key=lambda i: -scores[i])[:top_k]
    return [
        EvidenceHit.from_chunk(chunks[i], float(scores[i]), {"bm25": LegScore(score=float(scores[i]), rank=rank)})
        for rank, i in enumerate(order, start=1)
    ]


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _document(record: dict, origin: str) -> Document:
    # DomainRAG dates its passages with `date`; the loader reads `updated_at`.
    dated = {"updated_at": record["date"]} if record.get("date") else {}
    return build_document(record, origin, **dated)


def _rebuilt_counterfactual(question: dict, gold: dict, doc_id: str) -> dict | None:
    """The gold passage with the answer replaced by the fake answer (DomainRAG's recipe).

    Answers come in several forms (15个省份, 15): the longest form found is replaced, shorter
    forms inside it are not, and a number only as a whole number (15 is not the 15 in 2015).
    An answer with no fake counterpart (a list the fake answer shortens) is removed."""
    answers, fakes = question.get("answers", []), question.get("fake_answers", [])
    missing = [a for a in answers if a not in fakes and a.strip()]
    added = [f for f in fakes if f not in answers]
    pairs = sorted(((a, added[i] if i < len(added) else "") for i, a in enumerate(missing)), key=lambda p: -len(p[0]))
    text: str = gold["text"]
    replaced: list[str] = []
    for answer, fake in pairs:
        if any(answer in longer for longer in replaced):
            continue
        # Passages are word-segmented with spaces, answers are not: match across spaces.
        pattern = r"\s*".join(re.escape(char) for char in answer if not char.isspace())
        pattern = (r"(?<!\d)" if answer[0].isdigit() else "") + pattern + (r"(?!\d)" if answer[-1].isdigit() else "")
        if not fake:  # drop the item with one list separator, so the list still reads as a list
            pattern = rf"{pattern}\s*[、，,；;]|[、，,；;]\s*{pattern}|{pattern}"
        text, count = re.subn(pattern, fake, text, count=0 if fake else 1)
        if count:
            replaced.append(answer)
    if text == gold["text"]:
        return None
    return {**gold, "doc_id": doc_id, "text": text}


# ----------------------------------------------------------------------------- datasets
def _bench_dataset(folder: Path, limit: int | None, top_k: int = TOP_K) -> dict:
    questions = _limit_per_type(_read_jsonl(folder / "questions.jsonl"), limit)
    wanted = {d for q in questions for d in (q.get("candidate_doc_ids") or q["gold_doc_ids"])}
    wanted |= {d for q in questions for d in q["gold_doc_ids"]}
    corpus: dict[str, dict] = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["doc_id"] in wanted:
                corpus[record["doc_id"]] = record

    rows, rebuilt, not_rebuilt = [], 0, []
    started = time.perf_counter()
    for question in questions:
        records = []
        for doc_id in question.get("candidate_doc_ids") or question["gold_doc_ids"]:
            record = corpus.get(doc_id)
            if record is None and question.get("gold_doc_ids"):
                record = _rebuilt_counterfactual(question, corpus[question["gold_doc_ids"][0]], doc_id)
                if record is None:
                    not_rebuilt.append(question["qid"])
                    continue
                rebuilt += 1
            if record is not None:
                records.append(record)
        documents = [_document(r, f"{folder.name}:{r['doc_id']}") for r in records]
        evidence = evidence_for(question["question"], documents, top_k=top_k)
        rows.append(_row(question, detect_conflicts(question["question"], evidence)))
    elapsed = time.perf_counter() - started
    report = _summarise(rows, elapsed)
    report["counterfactual_docs_rebuilt"] = rebuilt
    report["counterfactual_docs_not_rebuildable"] = sorted(set(not_rebuilt))
    return report


def _bench_demo(demo_dir: Path, limit: int | None, top_k: int = TOP_K) -> dict:
    documents, _, lexicon = load_path(demo_dir)
    by_id = {doc.doc_id: doc for doc in documents}
    questions = _limit_per_type(_read_jsonl(demo_dir / "questions.jsonl"), limit)
    rows = []
    started = time.perf_counter()
    for question in questions:
        if question["qtype"] == "conflicting":
            question = {**question, "qtype": "conflicting_evidence"}
        docs = [by_id[d] for d in question["gold_doc_ids"] if d in by_id]
        evidence = evidence_for(question["question"], docs, lexicon, top_k=top_k)
        rows.append(_row(question, detect_conflicts(question["question"], evidence, lexicon)))
    return _summarise(rows, time.perf_counter() - started)


def _limit_per_type(questions: list[dict], limit: int | None) -> list[dict]:
    if limit is None:
        return questions
    seen: dict[str, int] = defaultdict(int)
    kept = []
    for question in questions:
        if seen[question["qtype"]] < limit:
            seen[question["qtype"]] += 1
            kept.append(question)
    return kept


def _row(question: dict, conflicts: list[Conflict]) -> dict:
    fakes = [canonical_text(f) for f in question.get("fake_answers", [])]
    values = [canonical_text(v.value) for c in conflicts for v in c.values]
    return {
        "qid": question["qid"],
        "qtype": question["qtype"],
        "expect_conflict": bool(question.get("expect_conflict")),
        "flagged": bool(conflicts),
        "fake_in_conflict": any(f and (f in v or v in f) for f in fakes for v in values if v),
        "conflicts": [c.model_dump() for c in conflicts],
    }


def _summarise(rows: list[dict], elapsed: float) -> dict:
    by_type: dict[str, dict] = {}
    for qtype in sorted({r["qtype"] for r in rows}):
        typed = [r for r in rows if r["qtype"] == qtype]
        flagged = [r for r in typed if r["flagged"]]
        by_type[qtype] = {
            "n": len(typed),
            "expect_conflict": typed[0]["expect_conflict"],
            "flagged": len(flagged),
            "rate": round(len(flagged) / len(typed), 3),
            "fake_in_conflict": sum(r["fake_in_conflict"] for r in flagged),
            "flagged_qids": [r["qid"] for r in flagged],
        }
    return {"by_qtype": by_type, "seconds": round(elapsed, 2), "rows": rows}


def main(argv: list[str]) -> None:
    """[DATASETS_DIR] [--top-k N]"""
    args = list(argv[1:])
    top_k = TOP_K
    if "--top-k" in args:
        at = args.index("--top-k")
        top_k = int(args[at + 1])
        del args[at : at + 2]
    datasets_dir = Path(args[0]) if args else Path(__file__).resolve().parents[4] / "shared" / "datasets"
    report = run_conflict_bench(datasets_dir, top_k=top_k)
    for part in report.values():
        part.pop("rows", None)
        for stats in part["by_qtype"].values():
            stats.pop("flagged_qids") if stats["expect_conflict"] else None
    print(json.dumps(report, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main(sys.argv)
