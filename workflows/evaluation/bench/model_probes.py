"""Probe questions about models a shop does not sell, beside the same questions about the ones it does.

For every model number in the catalogue's product names (火焰7, XZ-2000, T20, Air Jordan 1, iPhone 15:
agents.query_analysis.EntityIndex.series) the next number of its series the catalogue lacks (火焰8,
XZ-4000, T25, Air Jordan 2, iPhone 16) is asked about in three ways (its price, its stock, what it
is like), with and without the brand; none is answerable from the shop's documents. The real model's
price question is asked too, answerable by its SKU table. Generated from the catalogue, not written
for the pipeline: `run.py eval --dataset knowledge/demo --questions questions_models.jsonl` measures
how often a question about another model of a series gets the sold model's facts.

Run: `.venv/bin/python -m citescope.workflows.evaluation.bench.model_probes KB_DIR [OUT.jsonl]` (default: stdout).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from citescope.agents.query_analysis import QueryAnalyzer, series_in
from citescope.knowledge.kb import KnowledgeBase
from citescope.tools.products import product_index

UNKNOWN_TEMPLATES = ("{brand}{model}多少钱？", "{model}现在有货吗？", "{brand}{model}怎么样？")


def next_number(number: str, taken: set[str]) -> str:
    """The next number of a series not taken, stepping by its last non-zero digit (2000 -> 3000 -> 4000, 7 -> 8)."""
    step = 10 ** (len(number) - len(number.rstrip("0"))) if number.strip("0") else 1
    value = int(number) + step
    while str(value) in taken:
        value += step
    return str(value)


def probes(kb: KnowledgeBase) -> list[dict]:
    index = QueryAnalyzer(kb).index
    series = index.series
    out, seen = [], set()
    for product in product_index(kb).products.values():
        name, brand = product.name or "", (product.brand or "").strip()
        prices = sorted({row["price"] for row in product.skus})
        for key, number, model in series_in(name):
            if key not in series or model in seen:
                continue
            seen.add(model)
            other = model[: len(model) - len(number)] + next_number(number, set(series[key]))
            prefix = "" if brand and brand in model else brand
            for n, template in enumerate(UNKNOWN_TEMPLATES if other not in seen else ()):
                out.append(
                    {
                        "qid": f"model-{len(seen):02d}-{n}",
                        "question": template.format(brand=prefix, model=other),
                        "answers": [],
                        "gold_doc_ids": [],
                        "answerable": False,
                        "qtype": "unknown_model",
                    }
                )
            seen.add(other)
            # the model the shop sells, asked the same way: its one price (a name two products share is ambiguous)
            if len(prices) == 1 and len(series[key][number]) == 1:
                out.append(
                    {
                        "qid": f"model-{len(seen):02d}-sold",
                        "question": f"{prefix}{model}多少钱？",
                        "answers": [f"{prices[0]:.2f}元"],
                        "gold_doc_ids": [f"sku-{product.product_id}"],
                        "answerable": True,
                        "qtype": "sold_model",
                    }
                )
    return out


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit(__doc__)
    lines = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in probes(KnowledgeBase(argv[0])))
    if len(argv) > 1:
        Path(argv[1]).write_text(lines, encoding="utf-8")
    else:
        sys.stdout.write(lines)


if __name__ == "__main__":
    main(sys.argv[1:])
