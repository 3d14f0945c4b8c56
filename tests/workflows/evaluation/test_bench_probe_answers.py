"""`run.py bench reader --answers-kb`: the KB's own answerable probes answered by its pipeline, and each
cited factual sentence of those answers put to a claim checker as the inspector puts it."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from citescope.agents.claim_reader import ClaimReader
from citescope.workflows.cli import app
from citescope.workflows.evaluation.bench.probe_answers import run_probe_answer_bench
from citescope.workflows.evaluation.bench.reader import format_reader_report
from tests.support.claim_model import constant_claim_model


def test_the_probes_answers_quote_their_sources_so_the_checker_reads_none_of_them(demo_kb, tmp_path):
    """The extractive answer quotes what it cites (framed with its page's title or a user's voice), and
    a quote is not put to the checker (inspector.claims_as_read): a checker that rejects everything
    rejects none of these answers' sentences."""
    always = ClaimReader(constant_claim_model(tmp_path / "always", "contradicted"), tmp_path / "cache").warm_up()
    rejecting = run_probe_answer_bench(demo_kb, always, max_probes=16)
    assert 0 < rejecting["answered"] <= rejecting["probes"] <= 16
    assert rejecting["sentences_checked"] >= rejecting["answered"] * 0.5  # most answers cite what they state
    assert rejecting["sentences_read"] == 0
    assert rejecting["probe_answers_rejected"] == 0.0 and rejecting["rejected_examples"] == []
    never = ClaimReader(constant_claim_model(tmp_path / "never", "supported"), tmp_path / "cache").warm_up()
    passing = run_probe_answer_bench(demo_kb, never, max_probes=16)
    assert passing["sentences_checked"] == rejecting["sentences_checked"]  # the same answers, checker apart
    lenient = run_probe_answer_bench(demo_kb, always, reject_above=1.0, max_probes=16)
    assert lenient["reject_above"] == 1.0


def test_the_report_gives_the_share_of_probe_answers_rejected():
    probe_answers = {
        "probe_answers_rejected": 0.25,
        "sentences_checked": 8,
        "sentences_read": 2,
        "rejected_opening_with_yes_or_no": 0,
        "probes": 10,
        "answered": 8,
        "reject_above": 0.5,
        "rejected_examples": [],
    }
    report = format_reader_report(_bench_result(probe_answers))
    assert "answers to the KB's own probes: the checker rejects 0.250 of" in report


def _bench_result(probe_answers: dict) -> dict:
    """A perturbation bench result with nothing in it but the probe answers' part."""
    empty = {"perturbations_rejected": None, "paraphrases_rejected": None}
    return {
        **empty,
        "counts": {"perturbations": 0, "paraphrases": 0},
        "verbatim_rejected": None,
        "verbatim_checked": 0,
        "trained_families": empty,
        "held_out_families": {**empty, "families": []},
        "reader_alone": None,
        "by_source": {},
        "by_family": {},
        "probe_answers": probe_answers,
    }


def test_the_command_asks_for_a_checker_and_an_ingested_kb(tmp_path):
    shown = CliRunner().invoke(app, ["bench", "reader", "--no-mrc", "--answers-kb", str(tmp_path)])
    assert shown.exit_code == 2 and "give its folder with --claims-model" in shown.output
    model = constant_claim_model(tmp_path / "model", "supported")
    args = ["bench", "reader", "--no-mrc", "--claims-model", str(model), "--answers-kb", str(tmp_path)]
    shown = CliRunner().invoke(app, args)
    assert shown.exit_code == 2 and "is not an ingested KB" in shown.output


def test_the_command_with_a_checker_reports_the_inversion_corpus_read_with_it(tmp_path):
    model = constant_claim_model(tmp_path / "model", "supported")
    args = ["bench", "reader", "--json", "--no-mrc", "--limit", "1", "--claims-model", str(model)]
    shown = CliRunner().invoke(app, args)
    assert shown.exit_code == 0, shown.output
    inversions = json.loads(shown.output)["inversions"]
    assert inversions["cases"] == 60 and inversions["inversions_passed"] == 0
