"""The inspector's semantic rules (agents/claim_rules.py): one generated case per example of each rule
id in agents/claim_rules.yaml (the rule must fire on a `fires: true` example and stay quiet on a
`fires: false` one), then the rules inside the real inspector on real demo chunks."""

from __future__ import annotations

import pytest

from citescope.agents.claim_rules import ClaimRules
from citescope.agents.entity_index import EntityIndex
from citescope.agents.inspector import Inspector
from citescope.knowledge.chunking import chunk_document
from citescope.knowledge.loaders import load_path
from citescope.tools.base import EvidenceHit
from tests.conftest import DEMO_DIR

RULES = ClaimRules.load()
EXAMPLES = [(rule, example) for rule, examples in RULES.examples.items() for example in examples]


@pytest.fixture(scope="module")
def demo_index() -> EntityIndex:
    """The demo shop's entity index, from its SKU table as the pipeline's analyzer builds it."""
    documents, issues, lexicon = load_path(DEMO_DIR / "skus.csv")
    assert not issues
    products: dict[str, dict] = {}
    for row in (row for document in documents for row in document.skus or []):
        products.setdefault(
            row.product_id, {"product_id": row.product_id, "name": row.name, "brand": row.brand, "skus": []}
        )["skus"].append(row.sku)
    return EntityIndex(list(products.values()), lexicon).warm_up()


def test_every_rule_has_examples_both_ways():
    assert set(RULES.examples) == {
        "polarity.negation",
        "yes_no.opening",
        "stock.status",
        "entity.product",
        "entity.brand",
    }
    for rule, examples in RULES.examples.items():
        assert {e["fires"] for e in examples} == {True, False}, rule


@pytest.mark.parametrize(("rule", "example"), EXAMPLES, ids=[f"{r}:{e['claim'][:14]}" for r, e in EXAMPLES])
def test_rule_example(rule, example, demo_index):
    rules = ClaimRules.load(entities=lambda: demo_index)
    hit = EvidenceHit(
        chunk_id="doc#section-0",
        doc_id="doc",
        score=1.0,
        title=example.get("title", ""),
        text=example["evidence"],
        product_id=example.get("product"),
    )
    fired = [h.rule for h in rules.check(example["claim"], [hit])]
    assert (rule in fired) == example["fires"], fired


def test_the_entity_rule_is_off_without_an_index():
    example = next(e for r, e in EXAMPLES if r == "entity.product" and e["fires"])
    hit = EvidenceHit(chunk_id="d#s-0", doc_id="d", score=1.0, text=example["evidence"], product_id=example["product"])
    assert ClaimRules.load().check(example["claim"], [hit]) == []


def test_a_policy_holds_for_every_product(demo_index):
    """A chunk about no product (a shop policy) does not make naming a product a contradiction."""
    rules = ClaimRules.load(entities=lambda: demo_index)
    hit = EvidenceHit(chunk_id="p#s-0", doc_id="p", score=1.0, doc_type="policy", text="自签收次日起 15天无理由退换。")
    assert rules.check("星择 XZ-3000 自签收次日起 15天无理由退换", [hit]) == []


@pytest.fixture(scope="module")
def demo_chunks() -> dict[str, EvidenceHit]:
    hits = {}
    for path in ("faq.jsonl", "skus.csv", "products/p-xz3000.md"):
        documents, issues, _ = load_path(DEMO_DIR / path)
        assert not issues
        hits |= {c.chunk_id: EvidenceHit.from_chunk(c, 1.0) for d in documents for c in chunk_document(d)}
    return hits


def test_verbatim_evidence_passes_every_rule(demo_chunks, demo_index):
    """Each demo FAQ reply and SKU stock row, quoted whole with its citation, is no contradiction of
    itself (the extractive answerer quotes evidence)."""
    inspector = Inspector(entities=lambda: demo_index)
    for chunk_id, hit in demo_chunks.items():
        if chunk_id.startswith(("faq-", "sku-")):
            report = inspector.run(f"{hit.text}【{chunk_id}】", [hit])
            assert report.rules_fired == [], (chunk_id, report.unsupported)


def test_rules_in_the_inspector_on_demo_chunks(demo_chunks, demo_index):
    inspector = Inspector(entities=lambda: demo_index)
    overview, intro = "sku-p-xz3000#skus-0", "prod-xz3000#商品简介-0"
    evidence = [demo_chunks[overview], demo_chunks[intro]]
    stock = inspector.run(f"价格 299.00元，目前两种颜色都已缺货【{overview}】。", evidence)
    assert not stock.passed and stock.rules_fired == ["stock.status"]
    assert inspector.run(f"价格 299.00元，深空灰和月光银两种颜色都有货【{overview}】。", evidence).passed
    negated = inspector.run(f"XZ-3000 支持磁吸无线充电【{intro}】。", evidence)
    assert negated.rules_fired == ["polarity.negation"]
    assert "不支持磁吸无线充电" in negated.unsupported[0].contradicted[0].evidence
    assert inspector.run(f"XZ-3000 不支持磁吸无线充电【{intro}】。", evidence).passed


@pytest.mark.parametrize("example", RULES.limited_examples, ids=lambda e: e["reply"][:12])
def test_limited_yes_example(example):
    """Who a reply's opening yes is limited to, as the data file's examples say."""
    assert RULES.limited_to(example["reply"]) == example["limited_to"]
