"""Self-calibration: a KB chooses its own refusal threshold from probes made of its documents
(agents/self_probes.py), scored by the real pipeline (issue #44).

Each probe runs through QAPipeline as a question would; the score kept is the one the gate reads
(QAResult.best_score: the rank stage's best calibrated score). What a probe holds out of the KB is
taken out of the pool the rank stage scores (knowledge/filters.py has no exclusion by document):
retrieval still fills its pool from the whole KB, so a held-out question's pool can lack a chunk
that would have come in had the document really been absent — its score is, if anything, a little
low, so refusal recall on held-out probes is an upper bound. The gate is set to refuse everything
while probing (threshold 1.0), so no answer is generated: only the score is wanted.

The threshold is the lower of two cuts. The false-refusal cut: the highest whose false refusals on the
answerable probes keep the bound with 95% confidence (one-sided Clopper-Pearson: a KB whose true
false-refusal rate were the bound would refuse that few of n probes less than 5% of the time). The
threshold is written into `<kb>/config.yaml` with the figures.
Why not the plain 10% quantile: 80 answerable probes estimate it loosely (two seeds on one KB put it at
0.1451 and 0.1571), and a real question set scores a little differently from the probes; measured on a
KB of cmrc2018_train passages and their 633 real questions (training data, bench/self_probe_design.py),
the quantile refused 7.0-8.4% of the real questions, the confident cut 4.7-6.5% at 0.926-0.935 refusal
recall. The refusal-target cut: the lowest that refuses enough held-out probes to show a refusal recall
of REFUSAL_TARGET (#44's bar, 0.80) with the same confidence (71 of 80). Why two: a masked probe keeps its
sentence's words, so where real questions paraphrase their passage (translated text, customers) the
answerable probes score far above them and the false-refusal cut alone refuses half the real questions
(xquad_zh: probes p10 0.154, real questions 0.063; docs/models.md); held-out probes score as real questions
whose passage is gone do, on the training design KB (median 0.036 / 0.034 against 0.036, p90 0.094 / 0.106
against 0.104) as on xquad_zh (0.035 against 0.041, p90 0.070 against 0.090). So once the refusal target is
met, the threshold goes no higher; sibling probes are left out of that cut (a page named in full scores by
its name, docs/knowledge.md).

The hedging band [threshold, hedge_threshold) is chosen on the same probes, answered this time (the
gate set to answer everything): an extractive answer that opens with "根据现有资料" is a guess; in the
band such a guess is refused instead (agents/extractive/answerer.py). Its top is the highest that
refuses at most `hedge_loss_bound` of the answerable probes whose hedged answer was right (it cites
the probe's own document) while refusing the wrong hedged answers below it (an unanswerable probe's,
or one citing another document). Too few wrong hedged answers, or too few answerable probes answered
with the hedge to tell what the band costs: no band (hedge_threshold 0).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from citescope.agents.evidence import EvidencePool
from citescope.agents.extractive.answerer import hedged
from citescope.agents.self_probes import Probe, make_probes
from citescope.knowledge.kb import KnowledgeBase
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig, read_kb_config, update_kb_config
from citescope.workflows.stages.context import QuestionRun
from citescope.workflows.stages.rank import Rank, Ranking, RankInput

FALSE_REFUSAL_BOUND = 0.10
REFUSAL_TARGET = 0.80  # #44's bar: refuse at least this share of the questions the KB cannot answer
CONFIDENCE = 0.95  # the bound holds with this confidence on the probes (see the module's docstring)
MIN_ANSWERABLE = 20  # fewer answerable probes than this: a 10% bound is one or two questions, no estimate
MIN_UNANSWERABLE = 10
CONFIG_KEY = "self_calibration"  # the figures' block in <kb>/config.yaml (PipelineConfig ignores it)
# a self-calibrated KB chooses again after an ingest that added, changed or removed this share of the documents
# it was calibrated on: its score distribution may have moved (a new product line, another kind of text)
RECALIBRATE_SHARE = 0.2
HEDGE_LOSS_BOUND = 0.02  # the band may refuse this share of the answerable probes whose hedged answer was right
MIN_WRONG_HEDGES = 5  # fewer wrong hedged answers above the threshold than this: no evidence for a band
# fewer answerable probes answered with the hedge than this: the probes cannot tell what a band costs. Measured on
# the generated records KB (docs/knowledge.md): 2 of 80 answerable probes hedged, but 31 of 133 answerable real
# questions, all 31 right; the band the probes chose (0.1687) refused 19 right answers and no wrong one.
MIN_ANSWERABLE_HEDGES = 10


class SelfCalibrationError(ValueError):
    """The KB's probes cannot choose a threshold (too few of them); nothing is written."""


@dataclass(frozen=True)
class ThresholdChoice:
    threshold: float
    answerable: int
    unanswerable: int
    false_refusals: int
    false_refusal_rate: float
    refusal_recall: float
    limited_by: str = "false_refusals"  # which cut chose it: "false_refusals" or "refusal_target"
    false_refusal_cut: float | None = None
    refusal_target_cut: float | None = None  # None: no held-out scores, or too few to show the target


def choose_threshold(
    answerable: Sequence[float],
    unanswerable: Sequence[float],
    bound: float = FALSE_REFUSAL_BOUND,
    held_out: Sequence[float] = (),
    refusal_target: float = REFUSAL_TARGET,
) -> ThresholdChoice:
    """The lower of two cuts (a question is refused when its score is below the threshold): the highest
    whose refusals of the answerable scores keep `bound` with CONFIDENCE, and the lowest whose refusals of
    the `held_out` scores (questions whose document is out of the KB) show `refusal_target` with
    CONFIDENCE — no held-out scores, or too few, and only the first cut counts. SelfCalibrationError when
    there are too few probes."""
    check_enough_probes(len(answerable), len(unanswerable))
    if not 0 <= bound < 1:
        raise SelfCalibrationError(f"the false-refusal bound must be a share in [0, 1) (got {bound:g})")
    ordered = sorted(answerable)
    allowed = confident_refusals(len(ordered), bound)  # answerable probes the threshold may refuse
    # rounded down so the answerable probe at the cut stays answered once written with 4 decimals
    bound_cut = math.floor(ordered[allowed] * 10_000) / 10_000
    target_cut = None
    needed = confident_catches(len(held_out), refusal_target) if len(held_out) >= MIN_UNANSWERABLE else None
    if needed:
        # just above the needed-th lowest held-out score, so that probe is refused once written with 4 decimals
        target_cut = round(math.floor(sorted(held_out)[needed - 1] * 10_000) / 10_000 + 0.0001, 4)
    limited_by = "refusal_target" if target_cut is not None and target_cut < bound_cut else "false_refusals"
    threshold = target_cut if limited_by == "refusal_target" and target_cut is not None else bound_cut
    refused = sum(score < threshold for score in answerable)
    caught = sum(score < threshold for score in unanswerable)
    return ThresholdChoice(
        threshold=threshold,
        answerable=len(answerable),
        unanswerable=len(unanswerable),
        false_refusals=refused,
        false_refusal_rate=round(refused / len(answerable), 4),
        refusal_recall=round(caught / len(unanswerable), 4),
        limited_by=limited_by,
        false_refusal_cut=bound_cut,
        refusal_target_cut=target_cut,
    )


def check_enough_probes(answerable: int, unanswerable: int) -> None:
    """SelfCalibrationError when there are too few probes of a kind to choose a threshold."""
    if answerable < MIN_ANSWERABLE or unanswerable < MIN_UNANSWERABLE:
        raise SelfCalibrationError(
            f"too few probes to calibrate: {answerable} answerable (need {MIN_ANSWERABLE}), "
            f"{unanswerable} unanswerable (need {MIN_UNANSWERABLE})"
        )


def confident_refusals(n: int, bound: float, confidence: float = CONFIDENCE) -> int:
    """The most refusals of n answerable probes that still show a false-refusal rate under `bound` with
    `confidence`: the largest k with P(Binomial(n, bound) <= k) <= 1 - confidence (0 when none is)."""
    allowed, below = 0, 0.0
    for k in range(n):
        below += math.comb(n, k) * bound**k * (1 - bound) ** (n - k)
        if below > 1 - confidence + 1e-12:
            break
        allowed = k
    return allowed


def confident_catches(n: int, target: float, confidence: float = CONFIDENCE) -> int | None:
    """The fewest refusals of n unanswerable probes that show a refusal recall over `target` with
    `confidence`: the smallest k with P(Binomial(n, target) >= k) <= 1 - confidence (None when not even
    n of n would: too few probes)."""
    tail = 0.0  # P(Binomial(n, target) >= k), k going down from n
    for k in range(n, -1, -1):
        tail += math.comb(n, k) * target**k * (1 - target) ** (n - k)
        if tail > 1 - confidence + 1e-12:
            return k + 1 if k < n else None
    return 0


@dataclass(frozen=True)
class ProbeOutcome:
    score: float  # the gate's score (0.0 when nothing was found)
    answerable: bool = True  # the probe's label
    hedged: bool = False  # the answer opened with the hedge (only when the probes were answered)
    # refused with the gate open (only when the probes were answered): by the answer stage or the inspector
    # (no sentence answers it), or a model the shop lacks: a refusal whatever the threshold
    refused: bool = False
    right: bool = False  # answerable and the answer cites the probe's own document


@dataclass(frozen=True)
class HedgeChoice:
    hedge_threshold: float  # the band is [threshold, hedge_threshold); 0.0: no band
    hedged_answerable: int  # answerable probes above the threshold answered with the hedge
    hedged_right: int  # ... of them right (citing their own document)
    hedged_wrong: int  # hedged answers above the threshold that were wrong (unanswerable, or another document)
    refused_right: int  # ... of them the band refuses
    refused_wrong: int
    reason: str = ""  # why there is no band


def choose_hedge_band(
    outcomes: Sequence[ProbeOutcome],
    answerable: int,
    threshold: float,
    bound: float = HEDGE_LOSS_BOUND,
) -> HedgeChoice:
    """The highest hedge_threshold that refuses at most `bound` of the `answerable` probes among the
    right hedged answers at or above `threshold`, cut just above a wrong hedged answer's score (no higher:
    a band reaching past every wrong guess refuses right ones for nothing)."""
    hedges = sorted((o for o in outcomes if o.hedged and o.score >= threshold), key=lambda o: o.score)
    right = [o.score for o in hedges if o.right]
    wrong = [o.score for o in hedges if not o.right]
    asked = sum(o.answerable for o in hedges)
    counts = (asked, len(right), len(wrong))
    if len(wrong) < MIN_WRONG_HEDGES or asked < MIN_ANSWERABLE_HEDGES:
        reason = (
            f"{len(wrong)} wrong hedged answers (need {MIN_WRONG_HEDGES}) and {asked} answerable probes "
            f"answered with the hedge (need {MIN_ANSWERABLE_HEDGES}) above the threshold"
        )
        return HedgeChoice(0.0, *counts, 0, 0, reason)
    allowed = math.floor(bound * answerable + 1e-9)
    top = 0.0
    for score in wrong:
        cut = math.floor(score * 10_000) / 10_000 + 0.0001  # refuses this score once written with 4 decimals
        if sum(s < cut for s in right) <= allowed:
            top = cut
    if top <= threshold:
        return HedgeChoice(0.0, *counts, 0, 0, "every cut refuses more right hedged answers than allowed")
    return HedgeChoice(round(top, 4), *counts, sum(s < top for s in right), sum(s < top for s in wrong))


class ProbeRank:
    """The pipeline's rank stage with the current probe's held-out chunks taken out of the pool."""

    def __init__(self, rank: Rank):
        self.rank = rank
        self.probe: Probe | None = None

    async def run(self, given: RankInput, run: QuestionRun) -> Ranking:
        probe = self.probe
        if probe is None:
            return await self.rank.run(given, run)
        hits = [hit for hit in given.pool.hits() if not probe.excludes(hit.doc_id, hit.section)]
        pool = EvidencePool.from_hits(hits)
        return await self.rank.run(RankInput(given.analysis, pool, given.pinned, given.filters, given.limits), run)


def score_probes(
    kb: KnowledgeBase, probes: Sequence[Probe], on_probe: Callable[[int, int], None] | None = None
) -> list[float]:
    """The gate's score of each probe through the KB's pipeline (0.0 when nothing was found)."""
    return [outcome.score for outcome in run_probes(kb, probes, answer=False, on_probe=on_probe)]


def run_probes(
    kb: KnowledgeBase,
    probes: Sequence[Probe],
    answer: bool = True,
    on_probe: Callable[[int, int], None] | None = None,
) -> list[ProbeOutcome]:
    """Each probe through the KB's pipeline: its gate score and, with `answer`, whether its answer
    hedged and was right. Without `answer` the gate refuses everything (only the score is wanted)."""
    threshold = 0.0 if answer else 1.0  # answer everything, with no band, or refuse everything
    config = PipelineConfig.load(kb.dir, refusal_threshold=threshold, hedge_threshold=0.0)
    pipeline = QAPipeline(kb, config).warm_up()
    probing = ProbeRank(pipeline.rank)
    pipeline.rank = probing  # type: ignore[assignment]  # same run(RankInput, QuestionRun) -> Ranking
    outcomes = []
    for i, probe in enumerate(probes):
        probing.probe = probe
        result = pipeline.run(probe.question)
        cited = {citation.doc_id for citation in result.citations}
        outcomes.append(
            ProbeOutcome(
                score=result.best_score or 0.0,
                answerable=probe.answerable,
                hedged=answer and not result.refused and hedged(result.answer),
                refused=answer and result.refused and result.best_score is not None,
                right=probe.answerable and probe.doc_id in cited,
            )
        )
        if on_probe:
            on_probe(i + 1, len(probes))
    pipeline.close()  # run()'s event loop
    return outcomes


def kb_fingerprint(kb: KnowledgeBase) -> str:
    """What the KB holds: its documents' content hashes (a changed or added document changes it)."""
    digest = hashlib.sha256()
    for doc_id, content_hash in sorted(kb.catalog.content_hashes().items()):
        digest.update(f"{doc_id}\t{content_hash}\n".encode())
    return digest.hexdigest()[:16]


def self_calibrate(
    kb: KnowledgeBase,
    seed: int = 0,
    max_probes: int = 200,
    bound: float = FALSE_REFUSAL_BOUND,
    write: bool = True,
    on_probe: Callable[[int, int], None] | None = None,
    hedging_band: bool = False,
) -> dict[str, Any]:
    """Make the probes, score them, choose the threshold and (write) store it in <kb>/config.yaml.
    The hedging band is chosen and its figures stored either way; `hedging_band` also turns it on
    (hedge_threshold). Off by default: measured on the records KB and the demo, the bands the probes
    chose refused right answers and caught no unanswerable question (docs/knowledge.md)."""
    probes = make_probes(kb.all_chunks(), seed=seed, max_probes=max_probes)
    # before any probe runs: a KB too small to calibrate says so at once (an ingest of a few documents stays quick)
    check_enough_probes(sum(p.answerable for p in probes), sum(not p.answerable for p in probes))
    outcomes = run_probes(kb, probes, answer=True, on_probe=on_probe)
    scores = [outcome.score for outcome in outcomes]
    answerable = [s for p, s in zip(probes, scores, strict=True) if p.answerable]
    unanswerable = [s for p, s in zip(probes, scores, strict=True) if not p.answerable]
    held_out = [s for p, s in zip(probes, scores, strict=True) if p.kind == "held_out"]
    choice = choose_threshold(answerable, unanswerable, bound, held_out)
    band = choose_hedge_band(outcomes, len(answerable), choice.threshold)
    before = PipelineConfig.load(kb.dir).refusal_threshold  # what the KB ran with until now
    figures: dict[str, Any] = {
        **asdict(choice),
        "false_refusal_bound": bound,
        "by_kind": _by_kind(probes, outcomes, choice.threshold),
        "in_the_end": _in_the_end(outcomes, choice.threshold),
        "hedging_band": {**asdict(band), "hedge_loss_bound": HEDGE_LOSS_BOUND, "applied": hedging_band},
        "previous_threshold": {
            "threshold": before,
            "false_refusals": sum(s < before for s in answerable),
            "refusal_recall": round(sum(s < before for s in unanswerable) / len(unanswerable), 4),
        },
        "seed": seed,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "documents": len(kb.catalog.content_hashes()),
        "kb_fingerprint": kb_fingerprint(kb),
    }
    if write:
        write_kb_config(kb.dir, choice.threshold, figures, band.hedge_threshold if hedging_band else None)
    return figures


LABELLED_KEY = "labelled_calibration"  # the figures' block of a threshold chosen on the shop's own questions


def calibrate_from_questions(
    kb: KnowledgeBase, questions_file: Path, bound: float = FALSE_REFUSAL_BOUND, write: bool = True
) -> dict[str, Any]:
    """The KB's threshold chosen on a labelled question file the shop has (JSON lines, each with
    "question" and "answerable": true / false): the same rule as on probes, read off the real questions,
    which override the probes (the KB's self_calibration block goes, so a later ingest leaves it). A line
    that does not read is a QuestionFileError naming the file and line."""
    asked = read_labelled_questions(questions_file)
    probes = [Probe(q, "masked" if answerable else "held_out", "", answerable) for q, answerable in asked]
    outcomes = run_probes(kb, probes, answer=True)
    answerable = [o.score for o in outcomes if o.answerable]
    unanswerable = [o.score for o in outcomes if not o.answerable]
    # the shop's unanswerable questions are real ones: the refusal target is read off them as off held-out probes
    choice = choose_threshold(answerable, unanswerable, bound, held_out=unanswerable)
    figures: dict[str, Any] = {
        **asdict(choice),
        "false_refusal_bound": bound,
        "in_the_end": _in_the_end(outcomes, choice.threshold),
        "questions_file": str(questions_file),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "kb_fingerprint": kb_fingerprint(kb),
    }
    if write:
        update_kb_config(kb.dir, {"refusal_threshold": choice.threshold, LABELLED_KEY: figures}, remove=(CONFIG_KEY,))
    return figures


class QuestionFileError(ValueError):
    """A labelled question file that does not read: the message names the file and line."""


def read_labelled_questions(path: Path) -> list[tuple[str, bool]]:
    """(question, answerable) of each non-empty line of a JSON-lines file."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionFileError(f"{path}: cannot read the question file ({exc})") from exc
    asked = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QuestionFileError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise QuestionFileError(f"{path}:{number}: expected an object with 'question' and 'answerable'")
        question, answerable = row.get("question"), row.get("answerable")
        if not isinstance(question, str) or not question.strip():
            raise QuestionFileError(f"{path}:{number}: field 'question' must be a non-empty string")
        if not isinstance(answerable, bool):
            raise QuestionFileError(f"{path}:{number}: field 'answerable' must be true or false")
        asked.append((question, answerable))
    return asked


def calibration_due(kb_dir: Path | str, changed: int) -> str | None:
    """Why an ingest that added, replaced or removed `changed` documents should self-calibrate the KB,
    or None. A KB that runs on the default threshold (its config sets none: the default was fitted on
    other text, docs/models.md) chooses its own at the first ingest that changes it, and tries again at
    each later one while it is too small to; a self-calibrated KB chooses again once `changed` reaches
    RECALIBRATE_SHARE of the documents it was calibrated on. A threshold set by hand or chosen on a
    labelled question file stays: its owner chose it."""
    if changed <= 0:
        return None
    config = read_kb_config(kb_dir)
    stored = config.get(CONFIG_KEY)
    if not isinstance(stored, dict):
        if "refusal_threshold" in config or LABELLED_KEY in config:
            return None
        return "the KB runs on the default refusal threshold, fitted on other text: it chooses its own"
    documents = int(stored.get("documents") or 0)
    if documents and changed < RECALIBRATE_SHARE * documents:
        return None
    base = f"{documents} it was calibrated on" if documents else "an unknown number it was calibrated on"
    return f"{changed} documents added, changed or removed since its self-calibration ({base})"


def _by_kind(probes: Sequence[Probe], outcomes: Sequence[ProbeOutcome], threshold: float) -> dict[str, dict[str, int]]:
    """Per kind: probes, refused by the threshold, and refused in the end (by it or a later stage)."""
    kinds: dict[str, dict[str, int]] = {}
    for probe, outcome in zip(probes, outcomes, strict=True):
        counts = kinds.setdefault(probe.kind, {"probes": 0, "refused": 0, "refused_in_the_end": 0})
        counts["probes"] += 1
        counts["refused"] += outcome.score < threshold
        counts["refused_in_the_end"] += outcome.score < threshold or outcome.refused
    return kinds


def _in_the_end(outcomes: Sequence[ProbeOutcome], threshold: float) -> dict[str, float]:
    """False refusals and refusal recall of the answers the probes would get with the threshold: the gate's
    refusals and the later stages' (an answer stage that finds no sentence answering a near miss refuses it)."""
    answerable = [o.score < threshold or o.refused for o in outcomes if o.answerable]
    unanswerable = [o.score < threshold or o.refused for o in outcomes if not o.answerable]
    return {
        "false_refusal_rate": round(sum(answerable) / max(len(answerable), 1), 4),
        "refusal_recall": round(sum(unanswerable) / max(len(unanswerable), 1), 4),
    }


def write_kb_config(
    kb_dir: Path | str, threshold: float, figures: dict[str, Any], hedge_threshold: float | None = None
) -> Path:
    """Set refusal_threshold, the self_calibration figures and, when given, hedge_threshold (0.0: no
    band) in <kb>/config.yaml; other keys, a hedge_threshold not given included, are kept."""
    values: dict[str, Any] = {"refusal_threshold": threshold, CONFIG_KEY: figures}
    if hedge_threshold is not None:
        values["hedge_threshold"] = hedge_threshold
    return update_kb_config(kb_dir, values)


def format_self_calibration(figures: dict[str, Any]) -> str:
    """The figures as the lines a person reads after `calibrate --self` or `ingest --self-calibrate`."""
    previous = figures["previous_threshold"]
    kinds = "  ".join(
        f"{kind} {c['refused']}/{c['probes']} refused ({c['refused_in_the_end']} in the end)"
        for kind, c in sorted(figures["by_kind"].items())
    )
    end = figures["in_the_end"]
    return (
        f"self-calibrated refusal_threshold {figures['threshold']:g}: {figures['answerable']} answerable probes, "
        f"{figures['false_refusals']} refused ({figures['false_refusal_rate']:.1%}, bound "
        f"{figures['false_refusal_bound']:.0%}); {figures['unanswerable']} unanswerable, refusal recall "
        f"{figures['refusal_recall']:.1%}\n  {_cuts_line(figures)}\n  {kinds}\n"
        "  with the answer stage's refusals: false refusals "
        f"{end['false_refusal_rate']:.1%}, refusal recall {end['refusal_recall']:.1%}\n"
        f"  {_band_line(figures['hedging_band'])}\n"
        f"  the previous threshold {previous['threshold']:g} on the same "
        f"probes: {previous['false_refusals']} answerable refused, refusal recall {previous['refusal_recall']:.1%}\n"
        f"  KB fingerprint {figures['kb_fingerprint']}, {figures['date']}"
    )


def _cuts_line(figures: dict[str, Any]) -> str:
    """Which cut chose the threshold: the false-refusal bound's or the refusal target's."""
    bound_cut, target_cut = figures.get("false_refusal_cut"), figures.get("refusal_target_cut")
    if target_cut is None:
        return f"chosen by the false-refusal bound (too few held-out probes to show {REFUSAL_TARGET:.0%} refusals)"
    chosen = "the refusal target's" if figures.get("limited_by") == "refusal_target" else "the false-refusal bound's"
    return (
        f"chosen: {chosen} cut (false-refusal cut {bound_cut:g}, "
        f"{REFUSAL_TARGET:.0%} refusal-target cut {target_cut:g})"
    )


def format_labelled(figures: dict[str, Any]) -> str:
    """The figures of `calibrate --kb DIR --questions FILE` as a person reads them."""
    end = figures["in_the_end"]
    return (
        f"refusal_threshold {figures['threshold']:g} chosen on {figures['questions_file']}: "
        f"{figures['answerable']} answerable questions, {figures['false_refusals']} refused by it "
        f"({figures['false_refusal_rate']:.1%}, bound {figures['false_refusal_bound']:.0%}); "
        f"{figures['unanswerable']} unanswerable, refusal recall {figures['refusal_recall']:.1%}\n"
        f"  with the answer stage's refusals: false refusals {end['false_refusal_rate']:.1%}, "
        f"refusal recall {end['refusal_recall']:.1%}"
    )


def _band_line(band: dict[str, Any]) -> str:
    if not band["hedge_threshold"]:
        return f"no hedging band: {band['reason']}"
    state = "on" if band["applied"] else "off: --hedging-band turns it on"
    return (
        f"hedging band up to {band['hedge_threshold']:g} ({state}): refuses {band['refused_wrong']} of "
        f"{band['hedged_wrong']} wrong hedged answers and {band['refused_right']} of {band['hedged_right']} right "
        f"ones ({band['hedged_answerable']} answerable probes hedged)"
    )
