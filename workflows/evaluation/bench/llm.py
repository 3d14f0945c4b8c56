"""`run.py bench llm`: the LLM mode against the scripted servers (issue #42, docs/llm.md). Each
measurement lives in its own module; this gathers their keys into one report.

first_sentence_share (bench/llm_streaming.py): time to the first streamed answer sentence over
the whole answer time, with a scripted model writing 30 tokens/s (target ≤ 0.4).
"""

from __future__ import annotations

from citescope.workflows.evaluation.bench.llm_streaming import format_streaming_report, run_streaming_bench


def run_llm_bench(n_questions: int = 5) -> dict:
    streaming = run_streaming_bench(n_questions=n_questions)
    return {"first_sentence_share": streaming["first_sentence_share"], "streaming": streaming}


def format_llm_report(result: dict) -> str:
    return format_streaming_report(result["streaming"])
