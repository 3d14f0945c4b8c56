"""`run.py demo`, the README's first command: it ingests the built-in demo KB into the given
folder and answers each sample question as the sample says it should be answered."""
from __future__ import annotations

from typer.testing import CliRunner

from workflows.cli import DEMO_QUESTIONS, app


def test_demo_ingests_and_answers_every_sample_question(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--kb", str(tmp_path / "kb")])
    assert result.exit_code == 0, result.output
    out = result.output.replace("\n", "")
    assert "156 documents" in out and all(question in out for question in DEMO_QUESTIONS)
    starts = [out.index(q) + len(q) for q in DEMO_QUESTIONS]
    ends = [out.index(q) for q in DEMO_QUESTIONS[1:]] + [len(out)]
    conflict, price, returns, size, sizes, unknown = (out[a:b] for a, b in zip(starts, ends))
    assert "头层牛皮" in conflict and "人造革" in conflict  # both sides of the disagreement
    assert "颜色有深空灰、月光银" in price and "299.00元" in price  # every variant, from the table
    assert "15天" in returns and "7天" in returns
    assert "建议选 L 码" in size  # the size the skill worked out
    assert "M 码：" in sizes and "L 码：" in sizes and "缺货：冰川蓝 L" in sizes
    assert unknown.split("─", 1)[0].strip() == "(refused)" and "抱歉，知识库中暂未找到可靠信息" in unknown
    assert "(refused)" not in "".join((conflict, price, returns, size, sizes))
