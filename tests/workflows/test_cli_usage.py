"""Model usage and cost where an operator reads it: `run.py ask --json`, `run.py trace`, and the
`run.py batch` summary, for an answerer model on the scripted OpenAI-compatible server (real
HTTP, streamed, a usage chunk per reply) configured and priced through the KB's config.yaml."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from citescope.workflows.cli import app
from citescope.workflows.evaluation.scripted_server import ReplayServer
from citescope.workflows.pipeline_config import update_kb_config
from tests.support.hostile import copy_kb
from tests.workflows.test_pipeline_llm import valid_price_answer

PER_REPLY = {"input_tokens": 1500, "output_tokens": 40, "cached_tokens": 512}
PRICE = {"currency": "USD", "input_per_1k": 0.15, "output_per_1k": 0.6, "cached_input_per_1k": 0.075}
REPLY_COST = ((1500 - 512) * 0.15 + 512 * 0.075 + 40 * 0.6) / 1000


def test_ask_json_trace_and_batch_summary_carry_the_exact_usage(demo_kb, tmp_path_factory, tmp_path):
    kb = copy_kb(demo_kb, tmp_path_factory, "cli-usage")
    runner = CliRunner(env={"COLUMNS": "200"})
    with ReplayServer(default_step=lambda body: {**valid_price_answer(body), "usage": PER_REPLY}) as server:
        update_kb_config(
            kb, {"answerer": f"compatible:test@{server.base_url}", "max_retries": 0, "prices": {"test": PRICE}}
        )
        asked = runner.invoke(app, ["ask", "--kb", str(kb), "--json", "XZ-3000 充电宝多少钱？"])
        assert asked.exit_code == 0, asked.output
        result = json.loads(asked.stdout)

        questions = tmp_path / "questions.jsonl"
        rows = [
            {"id": "a", "question": "星择 XZ-3000 充电宝价格是多少？"},
            {"id": "b", "question": "XZ-3000 多少钱一个？"},
        ]
        questions.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        batch = runner.invoke(
            app,
            ["batch", str(questions), "-o", str(tmp_path / "out.jsonl"), "--kb", str(kb), "--json", "--no-progress"],
        )
        assert batch.exit_code == 0, batch.output
        requests = len(server.chat_requests())

    assert result["answer_source"] == "llm" and not result["degraded"], result["degradation_reasons"]
    one_reply = {
        "requests": 1,
        "input_tokens": 1500,
        "output_tokens": 40,
        "cached_tokens": 512,
        "cost": pytest.approx(REPLY_COST),
        "currency": "USD",
    }
    assert {k: v for k, v in result["usage"].items() if k != "by_model"} == one_reply
    assert result["usage"]["by_model"] == {"test": one_reply}

    shown = runner.invoke(app, ["trace", result["trace_id"], "--kb", str(kb), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["usage"] == result["usage"]
    readable = runner.invoke(app, ["trace", result["trace_id"], "--kb", str(kb)])
    line = f"1 model requests, 1500 input tokens (512 cached), 40 output tokens, cost {REPLY_COST:.4f} USD"
    assert line in readable.stdout

    summary = json.loads(batch.stdout)
    answered = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert requests == 1 + sum(line["usage"]["requests"] for line in answered) == 3  # no cache hit between them
    assert (summary["usage"]["requests"], summary["usage"]["input_tokens"]) == (2, 3000)
    assert (summary["usage"]["output_tokens"], summary["usage"]["cached_tokens"]) == (80, 1024)
    assert summary["usage"]["cost"] == pytest.approx(2 * REPLY_COST) and summary["usage"]["currency"] == "USD"
