"""first_sentence_share: how early a streamed answer starts, for `run.py bench llm` (issue #42).

The service (workflows/service.py, in process on 127.0.0.1, over a copy of the demo KB) answers
with its answerer on the scripted OpenAI-compatible server (workflows/evaluation/scripted_server.py), which
writes every reply a token at a time at `tokens_per_s` (30: a fast hosted model). Its reply is
built from the evidence the answerer was shown: each of the first chunks quoted in a cited
sentence, so the inspector passes it, as a well-behaved model's would. Each question goes to
/v1/chat/completions with stream=true; measured from the moment the request is sent: the first
SSE chunk carrying answer text, and the end of the answer ([DONE]). The share is their ratio,
the median over the questions (target ≤ 0.4; 1.0 means nothing is shown before the end).
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from citescope.workflows.assistant import Assistant
from citescope.workflows.evaluation.datasets import dataset_kb, load_questions
from citescope.workflows.evaluation.scripted_server import ReplayServer, prompt_text
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.service import BackgroundServer, ServiceSettings, create_app

REPO = Path(__file__).resolve().parents[3]
DEMO_DIR = REPO / "knowledge" / "demo"
KEY = "bench-streaming"
_EVIDENCE_LINE = re.compile(r"^【([^】]+)】\([^)]*\) (.+)$", re.MULTILINE)
_FIRST_SENTENCE = re.compile(r"^[^。！？!?\n]{4,60}")


def scripted_answer(prompt: str, sentences: int = 4) -> str:
    """A reply quoting the first `sentences` evidence chunks of the prompt, each cited."""
    quoted = []
    for chunk_id, text in _EVIDENCE_LINE.findall(prompt)[:sentences]:
        body = re.sub(r"[【】\[\]［］〔〕()（）]", " ", text.split("｜", 1)[-1])
        found = _FIRST_SENTENCE.search(body.strip())
        if found:
            quoted.append(f"{found.group(0).strip()}【{chunk_id}】。")
    return "".join(quoted) or "抱歉，没有找到相关信息。"


def run_streaming_bench(n_questions: int = 5, tokens_per_s: float = 30.0) -> dict:
    """{"first_sentence_share": median share, ...} over the first n answerable demo questions."""

    questions = [q.question for q in load_questions(DEMO_DIR / "questions.jsonl") if q.answerable][:n_questions]

    def reply(body: dict) -> dict:
        return {"content": scripted_answer(prompt_text(body)), "tokens_per_s": tokens_per_s}

    kb = dataset_kb([DEMO_DIR], "demo")
    runs = []
    with (
        tempfile.TemporaryDirectory(prefix="citescope-streaming-") as tmp,
        ReplayServer(default_step=reply) as replay,
    ):
        kb_dir = Path(tmp) / "kb"
        shutil.copytree(kb.dir, kb_dir, ignore=shutil.ignore_patterns("*.lock"))
        kb.close()
        spec = f"compatible:bench@{replay.base_url}"
        config = PipelineConfig.load(kb_dir, environ={}, answerer=spec, max_retries=0)
        app = create_app(Assistant(kb_dir, config=config), ServiceSettings(api_keys=KEY))
        with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=120) as http:
            app.state.runner.ready.wait(300)
            for question in questions:
                runs.append(_timed(http, question))
    shares = [run["first_sentence_s"] / run["total_s"] for run in runs if run["first_sentence_s"] is not None]
    return {
        "first_sentence_share": round(statistics.median(shares), 3) if shares else 1.0,
        "tokens_per_s": tokens_per_s,
        "questions": len(runs),
        "runs": runs,
    }


def _timed(http: httpx.Client, question: str) -> dict:
    payload = {"stream": True, "messages": [{"role": "user", "content": question}]}
    sent = time.perf_counter()
    first, text, refused = None, "", None
    with http.stream("POST", "/v1/chat/completions", json=payload, headers={"Authorization": f"Bearer {KEY}"}) as r:
        for line in r.iter_lines():
            if not line.startswith("data: {"):
                continue
            event = json.loads(line[len("data: ") :])
            content = event["choices"][0]["delta"].get("content") if event.get("choices") else None
            if content and first is None:
                first = time.perf_counter() - sent
            text += content or ""
            if "x_citescope" in event:
                refused = event["x_citescope"]["refused"]
    total = time.perf_counter() - sent
    return {
        "question": question,
        "first_sentence_s": None if first is None else round(first, 3),
        "total_s": round(total, 3),
        "chars": len(text),
        "refused": refused,
    }


def format_streaming_report(result: dict) -> str:
    lines = [
        f"first_sentence_share (median): {result['first_sentence_share']}  "
        f"(scripted model at {result['tokens_per_s']:g} tokens/s, {result['questions']} questions)"
    ]
    for run in result["runs"]:
        lines.append(f"  {run['first_sentence_s']}s of {run['total_s']}s  {run['question']}")
    return "\n".join(lines)
