"""`run.py bench llm`: the LLM mode against the scripted servers (issue #42, docs/llm.md). Each
measurement lives in its own module, a function of (KB, questions) returning its own keys; this
gathers them into one report.

first_sentence_share (bench/llm_streaming.py): time to the first streamed answer sentence over
the whole answer time, with a scripted model writing 30 tokens/s (target ≤ 0.4).
stalled_provider_s, open_breaker_s (bench/llm_faults.py): what a hung provider costs a question,
before and after its circuit breaker opens (targets: deadline + 1 s; ≤ 1 s).
model_requests_per_question (bench/llm_requests.py): over every demo question, whatever
`n_questions` says (target ≤ 2.5).
inversions_passed (bench/llm_inversions.py): of the 60-case inversion corpus, how many the
inspector passes with its offline checks alone (target 0); paraphrases_passed beside it.
"""

from __future__ import annotations

from collections.abc import Callable

from citescope.knowledge.kb import KnowledgeBase
from citescope.workflows.evaluation.bench.llm_faults import DEMO_DIR, fault_metrics
from citescope.workflows.evaluation.bench.llm_inversions import run_llm_inversions
from citescope.workflows.evaluation.bench.llm_requests import run_llm_requests_bench
from citescope.workflows.evaluation.bench.llm_streaming import format_streaming_report, run_streaming_bench
from citescope.workflows.evaluation.datasets import dataset_kb, load_questions


def streaming_metrics(_kb: KnowledgeBase, questions: list[str]) -> dict:
    streaming = run_streaming_bench(n_questions=len(questions))
    return {"first_sentence_share": streaming["first_sentence_share"], "streaming": streaming}


def request_metrics(kb: KnowledgeBase, _questions: list[str]) -> dict:
    """model_requests_per_question over all the demo questions; its shares and baseline beside it."""
    report = run_llm_requests_bench(kb)
    return {"model_requests_per_question": report.pop("model_requests_per_question"), "model_requests": report}


def inversion_metrics(_kb: KnowledgeBase, _questions: list[str]) -> dict:
    """inversions_passed over the inversion corpus (the demo KB's documents, chunked as the bench reads them)."""
    inversions = run_llm_inversions()
    return {
        "inversions_passed": inversions["inversions_passed"],
        "paraphrases_passed": inversions["paraphrases_passed"],
        "inversions": inversions,
    }


TOPICS: list[Callable[[KnowledgeBase, list[str]], dict]] = [
    streaming_metrics,
    fault_metrics,
    request_metrics,
    inversion_metrics,
]


def run_llm_bench(n_questions: int = 5) -> dict:
    """Every topic's keys over the demo shop and its first `n_questions` answerable questions."""
    kb = dataset_kb([DEMO_DIR], "demo")
    asked = [q.question for q in load_questions(DEMO_DIR / "questions.jsonl") if q.answerable][:n_questions]
    report: dict = {}
    for topic in TOPICS:
        report.update(topic(kb, asked))
    return report


def format_llm_report(result: dict) -> str:
    shown = {key: value for key, value in result.items() if not isinstance(value, dict)}
    width = max(len(key) for key in shown)
    lines = [f"{key:<{width}}  {value}" for key, value in shown.items()]
    return format_streaming_report(result["streaming"]) + "\n\n" + "\n".join(lines)
