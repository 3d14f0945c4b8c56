"""The inspector's model judge: a chat model reads each factual sentence of a draft beside the chunks
it cites (prompts/inspector_judge.md) and says supported, contradicted or not_enough_info.

It only adds failures on top of the offline checks (agents/inspector.py), which always run first:
it is asked about a draft they passed, in one request for all its sentences, through the same
budgeted path as every model call (agents/budget.budgeted_model_call: the question's model-call
cap and deadline, retries counted). A sentence it calls contradicted is rejected like one a rule
rejects (rule id "judge" in the report); a judge that cannot run (budget used up, deadline, a
provider failing, a reply that is no verdict) is skipped and the report says why, so a draft the
offline checks passed is never blocked by a judge's failure. Enabled by the pipeline config's
`judge` (a model spec; "offline", the default, is off).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Literal

from agentscope.formatter import FormatterBase
from agentscope.message import Msg
from agentscope.model import ChatModelBase
from pydantic import BaseModel, ValidationError

from citescope.agents.budget import BudgetTracker, ModelFailure, RetryPolicy, budgeted_model_call
from citescope.agents.citations import AnswerSentence
from citescope.agents.claim_rules import RuleHit
from citescope.agents.inspector import InspectionReport, UnsupportedClaim
from citescope.agents.prompts import load_prompt
from citescope.tools.base import EvidenceHit

Claim = tuple[AnswerSentence, Sequence[EvidenceHit]]


class Verdict(BaseModel):
    sentence: int  # 1-based, in the order the prompt numbered them
    verdict: Literal["supported", "contradicted", "not_enough_info"]
    reason: str = ""


def judge_prompt(claims: Sequence[Claim]) -> str:
    """The filled prompt: each sentence numbered, its cited chunks under it as the answerer saw them."""
    blocks = []
    for number, (sentence, hits) in enumerate(claims, 1):
        lines = "\n".join(f"  {hit.line()}" for hit in hits)
        blocks.append(f"{number}. {sentence.text}\n  证据：\n{lines}")
    return load_prompt("inspector_judge", claims="\n\n".join(blocks))


def parse_verdicts(reply: str, count: int) -> list[Verdict]:
    """One verdict per sentence from a model reply (JSON, possibly in a code fence); ModelFailure when
    the reply holds no verdict for some sentence, so the budgeted call retries it."""
    match = re.search(r"\{.*\}", reply, re.DOTALL)
    if match is None:
        raise ModelFailure("the judge's reply holds no JSON object")
    try:
        verdicts = [Verdict.model_validate(v) for v in json.loads(match.group(0)).get("verdicts", [])]
    except (json.JSONDecodeError, ValidationError, AttributeError, TypeError) as exc:
        raise ModelFailure(f"the judge's reply is no verdict: {type(exc).__name__}") from None
    by_number = {v.sentence: v for v in verdicts}
    if sorted(by_number) != list(range(1, count + 1)):
        raise ModelFailure(f"the judge gave verdicts for sentences {sorted(by_number)} of 1..{count}")
    return [by_number[n] for n in range(1, count + 1)]


def _text_of(response) -> str:
    return "".join(block.get("text", "") for block in response.content if block.get("type") == "text").strip()


class ModelJudge:
    """A chat model judging a draft's cited sentences; `judge` never raises."""

    def __init__(self, model: ChatModelBase, formatter: FormatterBase, retry: RetryPolicy | None = None):
        self.model = model
        self.formatter = formatter
        self.retry = retry or RetryPolicy()

    @property
    def name(self) -> str:
        return self.model.model_name

    async def verdicts(self, claims: Sequence[Claim], tracker: BudgetTracker) -> list[Verdict]:
        """One budgeted request for all the claims; ModelFailure when it cannot be had."""
        messages = await self.formatter.format([Msg("user", judge_prompt(claims), "user")])
        parsed: list[Verdict] = []

        def validate(response) -> None:  # a reply that is no verdict is a failed attempt, retried
            parsed[:] = parse_verdicts(_text_of(response), len(claims))

        await budgeted_model_call(self.model, messages, tracker, self.retry, validate=validate)
        return parsed

    async def judge(self, report: InspectionReport, claims: Sequence[Claim], tracker: BudgetTracker) -> str | None:
        """Add the judge's verdicts to a report the offline checks passed (contradicted sentences
        fail it); returns why the judge was skipped, or None when it ran."""
        if not claims:
            return None
        try:
            verdicts = await self.verdicts(claims, tracker)
        except ModelFailure as failure:
            reason = f"inspector judge skipped: {failure}"
            # supported: the draft stands on the offline checks
            report.judge = {"model": self.name, "status": "skipped", "reason": reason, "supported": True}
            return reason
        contradicted = [(claims[v.sentence - 1][0], v) for v in verdicts if v.verdict == "contradicted"]
        for sentence, verdict in contradicted:
            hit = RuleHit(rule="judge", claim=sentence.text, evidence=verdict.reason)
            report.unsupported.append(
                UnsupportedClaim(sentence=sentence.text, cited_ids=sentence.cited_ids, missing=[], contradicted=[hit])
            )
        report.judge = {
            "model": self.name,
            "status": "ran",
            "supported": not contradicted,  # each contradicted sentence is in report.unsupported, with the reason
            "verdicts": [v.model_dump() for v in verdicts],
        }
        report.passed = report.passed and not contradicted
        return None
