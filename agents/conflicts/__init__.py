"""Deterministic conflict check over evidence: the same attribute of the same entity, two values.

Four rules find candidate conflicts between hits from *different* documents (a document
never contradicts itself: its table rows, or a price and a discounted price, are different facts):

1. Aligned statements (aligned.py). Two sentences that say the same thing word for word except one
   slot (`共有70个议席` / `共有170个议席`, `7天无理由退换` / `15天无理由退换`, `在武汉举办` / `在成都举办`,
   or list items one side leaves out). The shared words around the slot are what make it the
   same attribute; free text with no product or title to anchor it is only ever compared this
   way. A slot that names *which* thing (a year, a model code, a size, a label, or a value of a
   kind the question itself fixes, such as `五次会议`) marks two different facts, not a conflict;
   so does a reworded function word, and a value of another kind than the question asks for.
   Documents whose titles name different years are yearly editions, never compared this way.
2. Versions (claims.py). Two versions of one document (same title once a bracketed version mark
   such as （2024版） is removed) whose same section reads differently where the question asks: the
   clause each version says and the other does not is its value.
3. Claims about one product (claims.py; same product_id, at least one side official): materials
   from a small lexicon (头层牛皮 vs 人造革) and yes/no properties (防水 vs 渗水).
4. Table numbers (claims.py). A price or stock count that untrusted text (a review, a post, a text
   of unknown type) states about a product, against the product's official SKU rows in the
   evidence (agents/table_claims.py): a value no row holds is a conflict, the table's first.

Only slots near the question's own terms count (question.py). Values are compared in canonical
form (values.py: 15天 = 十五天 = 15 天, 1年 = 12个月 by the one unit table of knowledge/units.py
that the inspector reads too, 149.00元 = 149元, 12月20日 = 2021年12月20日), and each conflict
lists one source per value, official before community, then newest first (detect.py).
Measured rates and known limits: docs/conflicts.md.
"""

from citescope.agents.conflicts.claims import MATERIALS, PROPERTIES
from citescope.agents.conflicts.detect import Conflict, ConflictValue, detect_conflicts, warm_up
from citescope.agents.conflicts.passages import one_subject
from citescope.agents.conflicts.values import canonical_text, parse_value

__all__ = [
    "MATERIALS",
    "PROPERTIES",
    "Conflict",
    "ConflictValue",
    "canonical_text",
    "detect_conflicts",
    "one_subject",
    "parse_value",
    "warm_up",
]
