"""Stage stream: a model's answer shown sentence by sentence, each the moment it has passed the
inspector's per-sentence checks (Inspector.check_sentence: every cited id was shown, a factual
sentence cites one, its cited chunks support its numbers and terms). Nothing shown is ever
withdrawn, by construction (docs/llm.md, "Streaming"):

- Until the first factual sentence passes, nothing is shown: passing courtesy sentences wait
  for it, and a sentence that fails stops the model there; the draft is rejected as a whole and
  the pipeline's usual course follows (one regeneration with the findings, then the extractive
  answer). A reply with no factual sentence (a refusal) also goes the usual way.
- From then on a sentence that fails is withheld and the stream goes on; the answer is the
  sentences shown, so its whole-answer verdict is the one its sentences already passed
  (Inspector.report over their verdicts).
- The one check on the whole answer, that every conflict among the evidence is disclosed, only
  adds: each conflict the shown sentences did not disclose is disclosed after them, in the
  extractive answerer's cited sentence, checked like any other.
- A model that fails once something was shown is not retried nor replaced by the route's next
  model (the text would start over): the answer is what was shown, reported as a degradation.
  Before that, a retry or the next model is read from its own start (_SentenceGate.start).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace

from citescope.agents.budget import BudgetTracker, ModelFailure
from citescope.agents.citations import SentenceCutter
from citescope.agents.extractive.disclosure import disclose
from citescope.agents.inspector import InspectionReport, Inspector, SentenceVerdict
from citescope.workflows.answer_events import Listener, SentenceEvent
from citescope.workflows.result import Citation
from citescope.workflows.stages.answer import Answer, AnswerInput, Draft

# A sentence as the customer reads it (script, sensitive words), with the words the filter found;
# None: the filter withholds it. (sentence, the question as typed, the evidence ids): Disclose.say.
Say = Callable[[str, str, Collection[str]], tuple[str, list[str]] | None]


@dataclass(frozen=True)
class Said:
    """What a streamed answer showed: its text as read, the sensitive words found in it."""

    text: str
    compliance: list[str] = field(default_factory=list)


@dataclass
class Streaming:
    """A question whose answer is streamed (QuestionRun.streaming)."""

    listener: Listener  # told each sentence as it is shown
    typed: str  # the question as asked, whose script the sentences are shown in
    trace_id: str = ""  # the result's, once it exists
    said: Said | None = None  # what was shown; once anything was, that is the answer, never withdrawn


@dataclass(frozen=True)
class StreamedDraft:
    draft: Draft
    report: InspectionReport
    said: Said | None = None  # None: nothing was shown, the draft goes the usual way
    degradation: str = ""


class _SentenceGate:
    """Reads the model's reply as it grows (agents.answerer.TextReader): cuts it into sentences,
    checks each, and shows those that pass."""

    def __init__(self, given: AnswerInput, inspector: Inspector, say: Say, streaming: Streaming):
        self.given, self.inspector, self.say, self.streaming = given, inspector, say, streaming
        self.by_id = {hit.chunk_id: hit for hit in given.evidence}
        self.cutter = SentenceCutter(known_ids=self.by_id.keys())
        self.held: list[tuple[str, list[SentenceVerdict]]] = []  # passed, waiting for the first factual one
        self.shown: list[tuple[str, list[SentenceVerdict]]] = []
        self.said, self.withheld = "", 0
        self.compliance: list[str] = []
        self.rejected: list[SentenceVerdict] = []
        self.written = ""  # the reply so far

    @property
    def committed(self) -> bool:
        return bool(self.shown)

    def may_retry(self) -> bool:
        return not self.committed and not self.rejected

    def start(self) -> None:
        """A new attempt (a retry, the route's next model): its reply starts over. Only asked while
        may_retry() holds, so nothing was shown: the held sentences go with the old reply."""
        self.cutter = SentenceCutter(known_ids=self.by_id.keys())
        self.held, self.written = [], ""

    async def read(self, text: str) -> bool:
        """False once a sentence failed before anything was shown: the model is read no further."""
        self.written = text
        for piece in self.cutter.feed(text):
            if not self.take(piece):
                return False
        return True

    def finish(self) -> None:
        if not self.rejected:
            for piece in self.cutter.finish(self.written):
                if not self.take(piece):
                    return

    def take(self, piece: str) -> bool:
        """Check one sentence and show it if it may be; False: it failed before anything was shown."""
        verdicts = self.inspector.verdicts(
            piece, self.given.evidence, self.given.analysis.question, self.given.siblings
        )
        if not verdicts:  # citations alone, or marks: nothing to read
            return True
        if not all(v.passed for v in verdicts):
            if not self.committed:
                self.rejected = verdicts
                return False
            self.withheld += 1
            return True
        if self.committed:
            self.show(piece, verdicts)
            return True
        self.held.append((piece, verdicts))
        if any(v.sentence.is_factual for v in verdicts):  # the answer is committed from here on
            for held, held_verdicts in self.held:
                self.show(held, held_verdicts)
            self.held = []
        return True

    def show(self, piece: str, verdicts: list[SentenceVerdict]) -> None:
        said = self.say(piece, self.streaming.typed, self.by_id.keys())
        if said is None:  # the sensitive-word filter withholds it
            self.withheld += 1
            return
        text, hits = said
        if not self.said:
            text = text.lstrip()
        self.said += text
        self.compliance += [hit for hit in hits if hit not in self.compliance]
        self.shown.append((piece, verdicts))
        ids = dict.fromkeys(i for v in verdicts for i in v.valid_ids)
        cited = [Citation.of(self.by_id[i]) for i in ids]
        self.streaming.listener(SentenceEvent(text=text, citations=cited, trace_id=self.streaming.trace_id))

    def verdicts(self) -> list[SentenceVerdict]:
        return [v for _, verdicts in self.shown for v in verdicts]


class StreamAnswer:
    def __init__(self, answer: Answer, inspector: Inspector, say: Say):
        """answer: the answer stage (its model, and its extractive answer for a model that fails);
        say: Disclose.say."""
        self.answer = answer
        self.extractive = answer.extractive
        self.inspector = inspector
        self.say = say

    async def run(self, given: AnswerInput, budget: BudgetTracker, streaming: Streaming) -> StreamedDraft:
        gate = _SentenceGate(given, self.inspector, self.say, streaming)
        draft: Draft | None = None
        failure = ""
        try:
            draft = await self.answer.run(given, budget, reader=gate)
            if draft.source == "llm":
                gate.finish()
        except ModelFailure as exc:  # raised only once sentences were shown, or the reply was stopped
            failure = str(exc)
        if gate.rejected:  # nothing shown: the draft so far, rejected, goes back to the pipeline
            report = self.inspector.report(gate.rejected, given.conflicts)
            text = draft.text if draft is not None else gate.written
            rejected = replace(draft, text=text) if draft is not None else Draft(text, "llm", position=given.position)
            return StreamedDraft(rejected, report)
        if not gate.committed:  # no factual sentence (a refusal), or the extractive answer: told as a whole
            assert draft is not None, "a model fails for good without a draft only after sentences were shown"
            report = self.inspector.run(
                draft.text, given.evidence, given.conflicts, given.analysis.question, given.siblings
            )
            return StreamedDraft(draft, report, degradation=draft.degradation)
        self._disclose_conflicts(gate, given)
        report = self.inspector.report(gate.verdicts(), given.conflicts)
        reasons = [draft.degradation] if draft is not None and draft.degradation else []
        if failure:
            reasons.append(f"answerer model failed after {len(gate.shown)} streamed sentence(s) ({failure})")
        if gate.withheld:
            reasons.append(f"streamed answer: {gate.withheld} sentence(s) withheld")
        if report.missing_conflicts:
            reasons.append("streamed answer: conflict not disclosed: " + "、".join(report.missing_conflicts))
        text = "".join(piece for piece, _ in gate.shown)
        shown = replace(draft, text=text) if draft is not None else Draft(text, "llm", position=given.position)
        return StreamedDraft(shown, report, Said(gate.said, gate.compliance), "; ".join(reasons))

    def _disclose_conflicts(self, gate: _SentenceGate, given: AnswerInput) -> None:
        """Each conflict the shown sentences left undisclosed, disclosed after them (only adds)."""
        english = self.extractive.asked_in_english(given.analysis.question, given.evidence)
        for conflict in given.conflicts:
            if self.inspector.conflict_disclosed(conflict, [v.sentence for v in gate.verdicts()]):
                continue
            sentence = disclose(conflict, gate.by_id, english)
            if sentence:
                gate.take((" " if english else "") + sentence)
