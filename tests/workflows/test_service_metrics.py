"""The service's usage per answer, per session and per tenant, over real HTTP: uvicorn on
127.0.0.1 with a real Assistant whose answerer model is the scripted OpenAI-compatible server
(streamed, a usage chunk per reply); Prometheus text at /metrics and who may read it."""

from __future__ import annotations

import re

import httpx
import pytest

from citescope.workflows.assistant import Assistant
from citescope.workflows.evaluation.scripted_server import ReplayServer
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.result import QAResult
from citescope.workflows.service import BackgroundServer, ServiceSettings, create_app
from citescope.workflows.service_metrics import UsageCounters
from tests.support.hostile import copy_kb
from tests.workflows.test_pipeline_llm import PRICE_QUESTION, valid_price_answer

PER_REPLY = {"input_tokens": 1800, "output_tokens": 50, "cached_tokens": 1024}
PRICE = {"currency": "CNY", "input_per_1k": 0.8, "output_per_1k": 2.0, "cached_input_per_1k": 0.2}
REPLY_COST = ((1800 - 1024) * 0.8 + 1024 * 0.2 + 50 * 2.0) / 1000
SHOP_A, SHOP_B, METRICS_KEY = "key-shop-a-5d1e", "key-shop-b-c0a2", "metrics-key-77f0"


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def samples(text: str) -> dict[str, float]:
    """`name{labels} value` lines of a Prometheus text exposition, by name and labels."""
    return {m[1]: float(m[2]) for m in re.finditer(r"^(\w+\{[^}]*\}) (\S+)$", text, re.MULTILINE)}


@pytest.fixture(scope="module")
def service(demo_kb, tmp_path_factory):
    kb = copy_kb(demo_kb, tmp_path_factory, "service-usage")
    with ReplayServer(default_step=lambda body: {**valid_price_answer(body), "usage": PER_REPLY}) as model:
        config = PipelineConfig.load(
            kb, environ={}, answerer=f"compatible:test@{model.base_url}", max_retries=0, prices={"test": PRICE}
        )
        settings = ServiceSettings(api_keys=f"{SHOP_A}:shop-a,{SHOP_B}:shop-b", metrics_key=METRICS_KEY)
        app = create_app(Assistant(kb, config=config), settings)
        with BackgroundServer(app) as server:
            app.state.runner.ready.wait(60)
            with httpx.Client(base_url=server.url, timeout=30) as http:
                yield http, model


def test_answers_sessions_and_tenants_count_the_tokens_they_spent(service):
    http, model = service
    asked = [
        http.post("/v1/ask", json={"question": q, "session_id": "usage-s1"}, headers=bearer(SHOP_A)).json()
        for q in (PRICE_QUESTION, "星择 XZ-3000 充电宝价格是多少？")
    ]
    again = http.post("/v1/ask", json={"question": PRICE_QUESTION}, headers=bearer(SHOP_A)).json()
    chat = http.post(
        "/v1/chat/completions",
        json={"model": "citescope", "messages": [{"role": "user", "content": "XZ-3000 多少钱一个？"}]},
        headers=bearer(SHOP_B),
    ).json()

    assert all(a["answer_source"] == "llm" and not a["degraded"] for a in asked), asked
    for body in (*asked, chat["x_citescope"]):
        usage = body["usage"]
        assert (usage["requests"], usage["input_tokens"], usage["output_tokens"]) == (1, 1800, 50)
        assert usage["cached_tokens"] == 1024 and usage["cost"] == pytest.approx(REPLY_COST)
    assert again["usage"]["requests"] == 0 and again["usage"]["cost"] == 0.0  # the cache answered: no model call
    assert len(model.chat_requests()) == 3

    session = http.get("/v1/sessions/usage-s1", headers=bearer(SHOP_A)).json()
    assert (session["usage"]["requests"], session["usage"]["input_tokens"]) == (2, 3600)
    assert session["usage"]["cost"] == pytest.approx(2 * REPLY_COST) and len(session["turns"]) == 2

    own = http.get("/metrics", headers=bearer(SHOP_A))
    assert own.status_code == 200 and own.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "# TYPE citescope_model_input_tokens_total counter" in own.text
    shop_a = samples(own.text)
    assert shop_a['citescope_questions_total{tenant="shop-a"}'] == 3
    assert shop_a['citescope_model_requests_total{tenant="shop-a",model="test"}'] == 2
    assert shop_a['citescope_model_input_tokens_total{tenant="shop-a",model="test"}'] == 3600
    assert shop_a['citescope_model_cached_tokens_total{tenant="shop-a",model="test"}'] == 2048
    assert shop_a['citescope_model_output_tokens_total{tenant="shop-a",model="test"}'] == 100
    assert shop_a['citescope_model_cost_total{tenant="shop-a",model="test",currency="CNY"}'] == pytest.approx(
        2 * REPLY_COST
    )
    assert "shop-b" not in own.text  # another tenant's usage is its own business

    every = samples(http.get("/metrics", headers=bearer(METRICS_KEY)).text)
    assert every['citescope_model_requests_total{tenant="shop-b",model="test"}'] == 1
    assert every['citescope_questions_total{tenant="shop-a"}'] == 3
    assert http.get("/metrics").status_code == 401
    assert http.get("/metrics", headers=bearer("not-a-key")).status_code == 401


def test_an_unpriced_model_has_token_counters_and_no_cost_line():
    counters = UsageCounters()
    result = QAResult.model_validate(
        {
            "question": "q",
            "answer": "a",
            "usage": {
                "requests": 1,
                "input_tokens": 7,
                "by_model": {'local"model': {"requests": 1, "input_tokens": 7}},
            },
        }
    )
    counters.record("default", result)
    text = counters.prometheus()
    assert 'citescope_model_input_tokens_total{tenant="default",model="local\\"model"} 7' in text
    assert "citescope_model_cost_total{" not in text  # unknown cost: no line, not 0
