"""Offline extractive answerer: quotes the best evidence sentences, each ending in 【chunk_id】.

Deterministic and fast (no model, no per-sentence embedding): candidate sentences from the
evidence are scored by question-term overlap, matching numbers/units and model numbers, the
chunk's retrieval score, authority and recency (scoring.py, reading the question as reading.py
does); 1-3 non-redundant sentences that each add something the question asked about are chosen
(selection.py) and framed in the user's language (answerer.py). Conflicts are disclosed first,
newest/official first (disclosure.py). Questions about a product's variants and sizes are read
off its tables first (agents/product_answers.py). The composed answer is checked with the
Inspector on its own evidence and anything it would reject is dropped, so the answer always
passes (or becomes the fixed refusal).
"""

from citescope.agents.extractive.answerer import ExtractiveAnswerer

__all__ = ["ExtractiveAnswerer"]
