"""The streamed answer's events, as every surface sends them (the Python API's QAPipeline.astream,
the service's SSE, Studio): one SentenceEvent per sentence the customer may read, in order, then one
AnswerEvent with the whole QAResult. The sentences' texts joined are the result's answer.

A model's answer is streamed while it is written (workflows/stages/stream.py sends each sentence
once it has passed the inspector); whatever the question ends with after the last streamed
sentence (the whole answer when nothing was streamed: an extractive answer, a refusal, a cached
one; or what is added after the model's sentences) is sent sentence by sentence when it is done.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Literal

from pydantic import BaseModel, Field

from citescope.agents.citations import SentenceCutter, parse_citations
from citescope.workflows.result import Citation, QAResult

log = logging.getLogger(__name__)


class SentenceEvent(BaseModel):
    kind: Literal["sentence"] = "sentence"
    text: str  # as the customer reads it, 【id】 inline (leading white space and line breaks kept)
    citations: list[Citation] = Field(default_factory=list)  # the ids it cites
    trace_id: str = ""  # the answer's trace id (the result's)


class AnswerEvent(BaseModel):
    kind: Literal["answer"] = "answer"
    result: QAResult


Listener = Callable[[SentenceEvent], None]


async def relay_answer(answer: Callable[[Listener], Awaitable[QAResult]]) -> AsyncIterator[SentenceEvent | AnswerEvent]:
    """Run answer(listener) and yield the sentences it sends as they come, then those of the rest
    of its answer, then the AnswerEvent. The listener may be called from any thread (the service
    answers on the Assistant's own loop). Leaving the iteration early cancels the answer."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[SentenceEvent | None] = asyncio.Queue()

    def listener(event: SentenceEvent) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, event)
        except RuntimeError:  # the reader's loop is closed (a service shutting down): the answer goes on
            pass

    task = asyncio.ensure_future(answer(listener))
    # after the sentences: a listener's call_soon_threadsafe precedes the result, FIFO
    task.add_done_callback(lambda _: loop.call_soon_threadsafe(queue.put_nowait, None))
    sent = ""
    try:
        while (event := await queue.get()) is not None:
            sent += event.text
            yield event
        result = task.result()
    finally:
        task.cancel()  # no-op once done
    for event in rest_of(result, sent):
        yield event
    yield AnswerEvent(result=result)


def rest_of(result: QAResult, sent: str) -> list[SentenceEvent]:
    """The sentences of the answer after what was already sent, cut as a stream cuts them."""
    if not result.answer.startswith(sent):  # cannot happen: the answer is built from what was sent
        log.error("the streamed sentences are not the start of the answer (trace %s)", result.trace_id)
        return []
    cited = {c.id: c for c in result.citations}
    pieces = SentenceCutter(known_ids=cited.keys()).finish(result.answer[len(sent) :])
    return [
        SentenceEvent(
            text=piece,
            citations=[cited[i] for i in parse_citations(piece, known_ids=cited.keys()) if i in cited],
            trace_id=result.trace_id,
        )
        for piece in pieces
    ]
