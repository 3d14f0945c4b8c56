"""`run.py demo`, the README's first command: it ingests the built-in demo KB into the given
folder and answers each sample question as the sample says it should be answered. Then the
messages of options that fail validation, and `chat` fed from a pipe."""

from __future__ import annotations

import json

from rich.cells import cell_len
from typer.testing import CliRunner

from citescope.workflows.cli import CHAT_HELP, DEMO_QUESTIONS, app
from tests.support.hostile import copy_kb


def test_demo_ingests_and_answers_every_sample_question(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--kb", str(tmp_path / "kb")])
    assert result.exit_code == 0, result.output
    out = result.output.replace("\n", "")
    assert "156 documents" in out and all(question in out for question in DEMO_QUESTIONS)
    starts = [out.index(q) + len(q) for q in DEMO_QUESTIONS]
    ends = [out.index(q) for q in DEMO_QUESTIONS[1:]] + [len(out)]
    conflict, price, returns, size, sizes, unknown = (out[a:b] for a, b in zip(starts, ends, strict=False))
    assert "头层牛皮" in conflict and "人造革" in conflict  # both sides of the disagreement
    assert "颜色有深空灰、月光银" in price and "299.00元" in price  # every variant, from the table
    assert "15天" in returns and "7天" in returns
    assert "建议选 L 码" in size  # the size the skill worked out
    assert "M 码：" in sizes and "L 码：" in sizes and "缺货：冰川蓝 L" in sizes
    assert unknown.split("─", 1)[0].strip() == "(refused)" and "抱歉，知识库中暂未找到可靠信息" in unknown
    assert "(refused)" not in "".join((conflict, price, returns, size, sizes))


# -- options pydantic validates: one line naming the option, never pydantic's report --------------
def _one_error_line(result) -> str:
    line = result.stderr.strip()
    assert result.exit_code == 2 and "\n" not in line and line.startswith("error: "), result.stderr
    assert not any(internal in line for internal in ("validation error", "Value error", "input_value", "pydantic"))
    return line


def test_a_bad_as_of_is_named_by_its_option(tmp_path):
    shown = CliRunner().invoke(app, ["ask", "退货", "--kb", str(tmp_path / "kb"), "--as-of", "2024-13"])
    assert _one_error_line(shown).startswith("error: --as-of: '2024-13' is not a real date")


def test_bad_eval_options_and_service_settings_are_named_too(tmp_path):
    shown = CliRunner().invoke(app, ["eval", "--dataset", str(tmp_path), "--mode", "bogus", "--concurrency", "0"])
    line = _one_error_line(shown)
    assert "--mode: input should be 'offline' or 'llm', got 'bogus'" in line and "--concurrency:" in line
    served = CliRunner(env={"CITESCOPE_MAX_BODY_BYTES": "10"}).invoke(app, ["serve", "--kb", str(tmp_path / "kb")])
    assert _one_error_line(served).startswith("error: CITESCOPE_MAX_BODY_BYTES: ") and "got '10'" in served.stderr


def test_serve_refuses_a_key_list_without_keys_and_names_a_bad_tenants_file(tmp_path):
    blank = CliRunner(env={"CITESCOPE_API_KEYS": " , "}).invoke(app, ["serve", "--kb", str(tmp_path / "kb")])
    assert _one_error_line(blank).startswith("error: CITESCOPE_API_KEYS is set but names no key")
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text("tenants:\n  shop-a: {keys: [k1], rpm: 3}\n", encoding="utf-8")
    bad = CliRunner(env={"CITESCOPE_TENANTS_FILE": str(tenants)}).invoke(app, ["serve", "--kb", str(tmp_path / "kb")])
    assert _one_error_line(bad) == f"error: CITESCOPE_TENANTS_FILE {tenants}: tenants.shop-a.rpm: not a known field"


# -- chat -----------------------------------------------------------------------------------------
def test_piped_chat_answers_whole_lines_and_help_lists_the_commands(demo_kb, tmp_path_factory):
    """stdout is not a terminal here (as with a here-doc): at 80 columns the answer must not be
    broken between a fact and its 【citation】, and /help is a command, not an unknown one."""
    kb = str(copy_kb(demo_kb, tmp_path_factory, "cli-chat"))
    runner = CliRunner(env={"COLUMNS": "80"})
    question = "星择 XZ-3000 充电宝多少钱？有货吗？"
    asked = runner.invoke(app, ["ask", "--kb", kb, "--json", question])
    assert asked.exit_code == 0, asked.output
    answer = json.loads(asked.stdout)["answer"].strip().splitlines()[0]
    assert cell_len(answer) > 80 and "【" in answer  # long enough to have been wrapped

    chatted = runner.invoke(app, ["chat", "--kb", kb], input=f"/help\n{question}\n")
    assert chatted.exit_code == 0, chatted.output
    lines = chatted.stdout.splitlines()
    assert "未知命令" not in chatted.stdout
    assert sum(CHAT_HELP in line for line in lines) == 2  # the greeting's, then /help's, each one line
    assert any(line.endswith(f"客服 {answer}") for line in lines), chatted.stdout
