"""Benchmark: how often a claim checker rejects real answers (`run.py bench reader --answers-kb KB`, #46).

The perturbation bench (bench/reader.py) puts generated sentences to the checker; an answer is
shaped otherwise: a quote framed with its product's name or a user's voice, trimmed, joined, a
table row written out. Here a KB's own answerable probes (agents/self_probes.py: questions made
from its documents, no one's labelled questions) go through its pipeline with the checker off,
and every factual sentence of their answers that cites a chunk is put to the checker as the
inspector puts it (`Inspector.check_sentence`). The extractive answer quotes the chunks it cites,
so each such sentence is faithful to its evidence: what the checker rejects here is a false
rejection (the one exception, a sentence opening with a yes or no its evidence may not state, is
counted apart). Since quotes go to no checker (claim_reader.stated_word_for_word), `sentences_read`
counts what an extractive answer states otherwise than its source: 0 of 117 on the demo.
"""

from __future__ import annotations

import time

from citescope.agents.citations import split_sentences
from citescope.agents.claim_reader import ClaimReader
from citescope.agents.inspector import READER_RULE, Inspector, claims_as_read
from citescope.agents.self_probes import make_probes
from citescope.knowledge.kb import KnowledgeBase
from citescope.tools.base import EvidenceHit
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig

DEFAULT_PROBES = 300  # probes made (about 4 answerable per document, spread over the documents)


def run_probe_answer_bench(
    kb: KnowledgeBase,
    claim_reader: ClaimReader,
    reject_above: float | None = None,
    seed: int = 0,
    max_probes: int = DEFAULT_PROBES,
    examples: int = 10,
) -> dict:
    """The share of the answers' cited factual sentences the checker rejects, with examples."""
    started = time.perf_counter()
    kb.warm_up()
    hits = {c.chunk_id: EvidenceHit.from_chunk(c, 1.0) for c in kb.all_chunks()}
    probes = [p for p in make_probes(kb.all_chunks(), seed=seed, max_probes=max_probes) if p.answerable]
    # the answers as the KB gives them today, but never already filtered by a checker of its config
    config = PipelineConfig.load(kb.dir).model_copy(update={"claims_model": None})
    pipeline = QAPipeline(kb, config).warm_up()
    inspector = Inspector(claim_reader=claim_reader, claim_reject_above=reject_above)
    answered = checked = read = 0  # read: given to the checker (not only table rows cited)
    rejected: list[dict] = []
    try:
        for probe in probes:
            result = pipeline.run(probe.question)
            answered += not result.refused
            for sentence in [] if result.refused else split_sentences(result.answer, known_ids=hits.keys()):
                verdict = inspector.check_sentence(sentence, hits)
                if not sentence.is_factual or not verdict.valid_ids:
                    continue
                checked += 1
                read += bool(claims_as_read(sentence.text, [hits[i] for i in verdict.valid_ids]))
                reader = [hit for hit in verdict.contradicted if hit.rule == READER_RULE]
                if reader:
                    opening = inspector.rules.opening_word(sentence.text) is not None
                    rejected.append(
                        {"question": probe.question, "sentence": sentence.text, "read": reader[0].evidence}
                        | {"opens_with_yes_or_no": opening}
                    )
    finally:
        pipeline.close()
    threshold = claim_reader.reject_above if reject_above is None else reject_above
    return {
        "probe_answers_rejected": round(len(rejected) / checked, 4) if checked else None,
        "sentences_checked": checked,
        "sentences_read": read,
        "rejected_opening_with_yes_or_no": sum(r["opens_with_yes_or_no"] for r in rejected),
        "probes": len(probes),
        "answered": answered,
        "reject_above": threshold,
        "checker": str(claim_reader.model_dir),
        "rejected_examples": rejected[:examples],
        "seed": seed,
        "seconds": round(time.perf_counter() - started, 1),
    }
