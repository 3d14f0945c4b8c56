"""Benchmark: claim checking (`run.py bench reader`, issue #46). Every item of
workflows/evaluation/perturbations.py is put to the current inspector exactly as the pipeline puts
an answer to it: the answer "claim【chunk-id】", the evidence that chunk, the inspector built with
the KB's lexicon and entity index (workflows/pipeline.py). A perturbation should be rejected, a faithful
paraphrase passed; the report gives both fractions overall, per family, per source, and with the
held-out families apart.

Sources: (a) the chunks of a KB's documents (the demo's by default), loaded and chunked by the
project's own loader and chunker; (b) the reading-comprehension passages of
../shared/training/mrc_train.jsonl whose title falls in the reader-benchmark bucket
(reader_holdout.is_reader_bench_title), chunked the same way, checked without a lexicon.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from citescope.agents.claim_reader import ClaimReader
from citescope.agents.entity_index import EntityIndex
from citescope.agents.inspector import Inspector, claims_as_read
from citescope.knowledge.chunking import chunk_document
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.loaders import load_path
from citescope.knowledge.schema import Chunk, Document
from citescope.knowledge.settings import get_settings
from citescope.tools.base import EvidenceHit
from citescope.workflows.evaluation.perturbations import FAMILIES, HELD_OUT_FAMILIES, ClaimItem, Passage, generate
from citescope.workflows.evaluation.reader_holdout import is_reader_bench_title

DEMO_SOURCE = "demo_kb"
MRC_SOURCE = "mrc_heldout"
DEFAULT_LIMIT = 1000  # passages (chunks) per source: today every chunk of both (635 demo, 709 MRC; ~20 s)


class Source:
    """One source's evidence chunks (as hits), the names entity_swap swaps, and its inspector."""

    def __init__(
        self,
        name: str,
        chunks: Sequence[Chunk],
        names: dict[str, list[str]],
        lexicon: Lexicon | None,
        entities: EntityIndex | None = None,
    ):
        """entities: the KB's entity index, which the pipeline's inspector reads (a product the cited
        chunks are not about: rule entity.product); None for text with no products."""
        self.name = name
        self.hits = {c.chunk_id: EvidenceHit.from_chunk(c, 1.0) for c in chunks}
        self.names = names
        # as workflows/pipeline.py builds it: the KB's lexicon and its entity index
        self.inspector = Inspector(lexicon=lexicon, entities=None if entities is None else lambda: entities)

    def passages(self, limit: int | None, seed: int) -> list[Passage]:
        ids = sorted(self.hits)
        if limit is not None and limit < len(ids):
            ids = sorted(random.Random(f"{seed}:{self.name}").sample(ids, limit))
        return [Passage(i, self.hits[i].text, self.name) for i in ids]

    def rejects(self, claim: str, chunk_id: str) -> bool:
        return not self.inspector.run(f"{claim}【{chunk_id}】", [self.hits[chunk_id]]).passed

    def reader_rejects(self, items: Sequence[ClaimItem], reader: ClaimReader, reject_above: float) -> list[bool]:
        """The trained claim checker's verdicts on the items (one engine batch), each read as the
        inspector gives it to the checker (inspector.claims_as_read: no table rows, no answer frame,
        amounts as the evidence writes them)."""
        given = [claims_as_read(item.claim, [self.hits[item.evidence_id]]) for item in items]
        verdicts = iter(reader.check([pair for pairs in given for pair in pairs]))
        # a list inside any(), not a generator: each item's verdicts are all taken, whatever the first says
        return [any([next(verdicts).contradicted > reject_above for _ in pairs]) for pairs in given]


def _chunks(docs: Iterable[Document]) -> list[Chunk]:
    settings = get_settings()
    return [c for d in docs for c in chunk_document(d, settings.chunk_size, settings.chunk_overlap)]


def entity_index_of(docs: Sequence[Document], lexicon: Lexicon | None) -> EntityIndex:
    """The entity index the pipeline's query analyzer builds from a stored KB (agents/query_analysis.py
    over tools/product_index.py), read from the documents instead: a product per SKU rows' product id
    (name, brand and category of its first row that gives them), then each product page whose product has
    no SKU rows."""
    products: dict[str, dict] = {}
    for doc in docs:
        for row in doc.skus or ():
            product = products.setdefault(
                row.product_id, {"product_id": row.product_id, "name": "", "brand": "", "category": "", "skus": []}
            )
            for key in ("name", "brand", "category"):
                product[key] = product[key] or getattr(row, key) or ""
            product["skus"].append(row.sku)
    for doc in docs:
        if doc.doc_type == "product" and doc.product_id and doc.product_id not in products:
            products[doc.product_id] = {
                "product_id": doc.product_id,
                "name": doc.title or doc.product_id,
                "brand": doc.brand or "",
                "category": doc.category or "",
                "skus": [],
            }
    for product in products.values():
        product["name"] = product["name"] or product["product_id"]
    return EntityIndex(list(products.values()), lexicon).warm_up()


def kb_source(kb_dir: Path) -> Source:
    """A KB's documents (a folder as given to `ingest`): its product titles and brands are the names."""
    docs, _issues, lexicon = load_path(kb_dir)
    if not docs:
        raise ValueError(f"no documents in {kb_dir} (--kb takes the folder of a KB's documents, as given to ingest)")
    names = {
        "product": sorted({d.title for d in docs if d.doc_type == "product" and d.title}),
        "brand": sorted({d.brand for d in docs if d.brand}),
    }
    return Source(DEMO_SOURCE, _chunks(docs), names, lexicon, entity_index_of(docs, lexicon))


def mrc_source(mrc_train: Path) -> Source:
    """The reader-benchmark passages of mrc_train.jsonl (one document per distinct context); the
    article titles are the names."""
    docs: dict[str, Document] = {}
    with mrc_train.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if not is_reader_bench_title(row["title"]):
                continue
            doc_id = "mrc-" + hashlib.sha1(row["context"].encode("utf-8")).hexdigest()[:12]
            docs.setdefault(doc_id, Document(doc_id=doc_id, title=row["title"], text=row["context"]))
    names = {"title": sorted({d.title for d in docs.values()})}
    return Source(MRC_SOURCE, _chunks(docs.values()), names, None)


def _rate(rejected: int, total: int) -> float | None:
    return round(rejected / total, 4) if total else None


def _rates(outcomes: Sequence[tuple[ClaimItem, bool]]) -> dict:
    """perturbations_rejected / paraphrases_rejected of some outcomes, with their counts."""
    out: dict = {}
    for label, key in (("contradicted", "perturbations"), ("supported", "paraphrases")):
        chosen = [rejected for item, rejected in outcomes if item.label == label]
        out[f"{key}_rejected"] = _rate(sum(chosen), len(chosen))
        out[key] = len(chosen)
    return out


def run_reader_bench(
    kb_dir: Path,
    mrc_train: Path | None,
    limit: int | None = DEFAULT_LIMIT,
    seed: int = 0,
    examples: int = 3,
    claim_reader: ClaimReader | None = None,
    reject_above: float | None = None,
) -> dict:
    """claim_reader: a trained claim checker; an item is then rejected when the inspector rejects
    it or the checker's P(contradicted) > reject_above (None: the threshold its card chose), and
    `reader_alone` reports the checker by itself."""
    started = time.perf_counter()
    alone: list[tuple[ClaimItem, bool]] = []
    sources = [kb_source(kb_dir)]
    if mrc_train is not None:
        sources.append(mrc_source(mrc_train))
    outcomes: list[tuple[ClaimItem, bool]] = []
    verbatim: Counter[str] = Counter()  # the evidence sentences themselves: the inspector's own floor
    skipped: dict[str, Counter[str]] = {}
    passages: dict[str, dict[str, int]] = {}
    for source in sources:
        chosen = source.passages(limit, seed)
        generated = generate(chosen, seed=seed, names=source.names)
        skipped[source.name] = generated.skipped
        passages[source.name] = {"chunks": len(source.hits), "passages": len(chosen)}
        sentences = {(i.evidence_id, i.sentence) for i in generated.items if i.label == "supported"}
        for chunk_id, sentence in sorted(sentences):
            verbatim["checked"] += 1
            verbatim["rejected"] += source.rejects(sentence, chunk_id)
        rules = [source.rejects(item.claim, item.evidence_id) for item in generated.items]
        if claim_reader is None:
            outcomes += list(zip(generated.items, rules, strict=True))
            continue
        threshold = claim_reader.reject_above if reject_above is None else reject_above
        model = source.reader_rejects(generated.items, claim_reader, threshold)
        alone += list(zip(generated.items, model, strict=True))
        outcomes += [(item, a or b) for item, a, b in zip(generated.items, rules, model, strict=True)]

    by_family: dict[str, dict] = {}
    missed: dict[str, list[dict]] = defaultdict(list)
    for family, (label, _change) in FAMILIES.items():
        mine = [(item, rejected) for item, rejected in outcomes if item.family == family]
        wrong = [item for item, rejected in mine if rejected != (label == "contradicted")]
        by_family[family] = {
            "label": label,
            "held_out": family in HELD_OUT_FAMILIES,
            "items": len(mine),
            "rejected": _rate(sum(r for _, r in mine), len(mine)),
            "by_source": {
                s.name: {
                    "items": len(part := [r for i, r in mine if i.source == s.name]),
                    "rejected": _rate(sum(part), len(part)),
                    "skipped_passages": skipped[s.name][family],
                }
                for s in sources
            },
        }
        missed[family] = [
            {"claim": i.claim, "sentence": i.sentence, "evidence_id": i.evidence_id} for i in wrong[:examples]
        ]
    overall = _rates(outcomes)
    return {
        "perturbations_rejected": overall["perturbations_rejected"],
        "paraphrases_rejected": overall["paraphrases_rejected"],
        "counts": {
            "perturbations": overall["perturbations"],
            "paraphrases": overall["paraphrases"],
            "items": len(outcomes),
            "by_source": passages,
        },
        "trained_families": _rates([(i, r) for i, r in outcomes if i.family not in HELD_OUT_FAMILIES]),
        "held_out_families": _rates([(i, r) for i, r in outcomes if i.family in HELD_OUT_FAMILIES])
        | {"families": sorted(HELD_OUT_FAMILIES)},
        "by_source": {s.name: _rates([(i, r) for i, r in outcomes if i.source == s.name]) for s in sources},
        "by_family": by_family,
        "checker": "inspector" if claim_reader is None else f"inspector + claim reader ({claim_reader.model_dir})",
        "reader_alone": None
        if claim_reader is None
        else {
            **_rates(alone),
            "reject_above": claim_reader.reject_above if reject_above is None else reject_above,
            "trained_families": _rates([(i, r) for i, r in alone if i.family not in HELD_OUT_FAMILIES]),
            "held_out_families": _rates([(i, r) for i, r in alone if i.family in HELD_OUT_FAMILIES]),
        },
        "verbatim_rejected": _rate(verbatim["rejected"], verbatim["checked"]),
        "verbatim_checked": verbatim["checked"],
        "misjudged_examples": dict(missed),
        "seed": seed,
        "limit": limit,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def format_reader_report(result: dict) -> str:
    lines = [
        "Claim checking by the current inspector (perturbations should be rejected, paraphrases passed)",
        f"perturbations rejected {_pct(result['perturbations_rejected'])} of {result['counts']['perturbations']}; "
        f"paraphrases rejected {_pct(result['paraphrases_rejected'])} of {result['counts']['paraphrases']}; "
        f"evidence sentences verbatim rejected {_pct(result['verbatim_rejected'])} of {result['verbatim_checked']}",
        f"trained families: perturbations {_pct(result['trained_families']['perturbations_rejected'])}, "
        f"paraphrases {_pct(result['trained_families']['paraphrases_rejected'])}; held-out families "
        f"({', '.join(result['held_out_families']['families'])}): perturbations "
        f"{_pct(result['held_out_families']['perturbations_rejected'])}",
    ]
    if result["reader_alone"] is not None:
        alone = result["reader_alone"]
        lines[0] = f"Claim checking by {result['checker']}"
        lines.append(
            f"the claim reader alone (P(contradicted) > {alone['reject_above']}): perturbations rejected "
            f"{_pct(alone['perturbations_rejected'])}, paraphrases rejected {_pct(alone['paraphrases_rejected'])}; "
            f"held-out families: perturbations {_pct(alone['held_out_families']['perturbations_rejected'])}"
        )
    lines += ["", f"{'family':<16}{'label':<14}{'held out':<10}" + "".join(f"{s:>22}" for s in result["by_source"])]
    for family, row in result["by_family"].items():
        cells = "".join(
            f"{_pct(part['rejected']) + ' of ' + str(part['items']):>22}" for part in row["by_source"].values()
        )
        lines.append(f"{family:<16}{row['label']:<14}{'yes' if row['held_out'] else '':<10}{cells}")
    lines.append("(rejected fraction of items per source; a family skips passages it cannot change: see --json)")
    inversions = result.get("inversions")
    if inversions is not None:
        lines += [
            "",
            f"LLM mode's inversion corpus with the checker: {inversions['inversions_passed']} of "
            f"{inversions['cases']} inversions passed, {inversions['paraphrases_passed']} of {inversions['cases']} "
            "faithful paraphrases passed",
            *(f"  rejected: {text}" for text in inversions["rejected_paraphrase_examples"][:5]),
        ]
    answers = result.get("probe_answers")
    if answers is not None:
        lines += [
            "",
            f"answers to the KB's own probes: the checker rejects {_pct(answers['probe_answers_rejected'])} of "
            f"{answers['sentences_checked']} cited sentences ({answers['sentences_read']} given to it, the rest quote "
            f"their chunks or cite table rows; {answers['answered']} of {answers['probes']} probes answered; "
            f"{answers['rejected_opening_with_yes_or_no']} rejected open with a yes or no)",
            *(f"  {e['sentence']}  <- {e['read']}" for e in answers["rejected_examples"][:5]),
        ]
    return "\n".join(lines)
