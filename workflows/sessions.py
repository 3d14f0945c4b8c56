"""Conversations: per-session history and dialogue state, and the clarifying questions.

`SessionStore` keeps every session in one SQLite file per KB (`<kb>/sessions.sqlite`, WAL), so
a session is resumable by id from another Assistant or process. A session carries the product
the conversation is about (follow-ups such as "它多少钱？" are filtered to it) and, after a
clarifying question, the pending task: the question waiting for facts and its product.

`Clarifier` decides when to ask instead of guessing: a size recommendation whose skill
(tools.sizes.size_recommend) reports facts it needs ({"need": [...]}) the customer has not
given, a name several products fit ("AJ1", "轻羽"), or a question about a product it never names
("这双鞋雨天防滑吗？", "它多少钱？", "适合新手吗？") with no product anywhere in the conversation. The next
turn that supplies what was asked completes the pending task (the facts are merged into the
earlier question; bare numbers are read as the measures asked for: "175，72公斤").
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from citescope.agents.query_analysis import (
    Entity,
    QueryAnalyzer,
    QueryFeatures,
    describe_body_facts,
    parse_body_reply,
    parse_sizes,
    without_product_asks,
)
from citescope.knowledge.crosslingual import with_document_words
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.normalize import normalize
from citescope.knowledge.text import CJK_RUN, chinese_int, is_storable_text
from citescope.tools.base import SkillContext
from citescope.tools.products import product_index, size_recommend
from citescope.workflows.personal_data import redact_personal, redact_personal_in
from citescope.workflows.sqlite_store import columns_of, open_sqlite
from citescope.workflows.tenants import DEFAULT_TENANT

FILE_NAME = "sessions.sqlite"
MAX_SESSION_ID_CHARS = 128

FACT_LABELS = {"height_cm": "身高（cm）", "weight_kg": "体重（kg）", "foot_length_cm": "脚长（cm）"}
ASK_FACTS = "为了给您推荐合适的尺码，请告诉我您的{facts}。"
ASK_PRODUCT = "请问您问的是哪款商品？请告诉我商品名称或型号，我再为您查询。"
ASK_WHICH = "“{asked}”对应本店的多款商品，请问您问的是哪一款？{options}（回复序号或商品名即可）"
ASK_WHICH_KIND = "请问您问的是哪一款{kind}？{options}（回复序号或商品名即可）"
MAX_LISTED = 8  # more products of the kind than this: ASK_PRODUCT, no list
# A question this short that names nothing (no product, brand or category word) is about some
# product when its best keyword match is a product's page, review or post ("适合新手吗？").
_UNNAMED_SUBJECT_CHARS = 12
# A reply that picks an offered option by its number: "2", "第二个", "第2款"
_ORDINAL = re.compile(r"^\s*(?:第\s*)?([1-9一二三四五六七八九])\s*(?:个|款|种|项|号)?\s*[。.！!]?\s*$")
# Words that point at a product the question does not name.
_PRODUCT_REFERENCE = re.compile(
    r"它|这款|那款|这件|那件|这双|那双|这只|那只|这台|那台|这条|那条|这个|那个|"
    r"该款|该商品|此款|同款"
)
_NO_PRODUCT_INTENTS = ("policy", "out_of_scope", "comparison")
_ASCII_WORD = re.compile(r"[a-z0-9]+")
# Words that point or fill in, never a product's own word when a reply picks an option.
_FILLER = re.compile(r"这款|那款|这个|那个|这件|那件|这双|那双|这种|那种|一款|一个|的|吧|呀|啊|呢|吗|我要|要|选|就")


def _words(text: str) -> set[str]:
    """CJK character pairs and ASCII words of lower-cased text, pointing and filler words left out."""
    text = _FILLER.sub(" ", text.lower())
    pairs = {run[i : i + 2] for run in CJK_RUN.findall(text) for i in range(len(run) - 1)}
    return pairs | set(_ASCII_WORD.findall(text))


# Sessions are owned by a tenant: two tenants' "s1" are two conversations. Files written before
# tenants existed are rebuilt once with their rows in the default tenant (_migrate).
_TABLES = (
    "CREATE TABLE IF NOT EXISTS sessions (tenant TEXT NOT NULL, id TEXT NOT NULL, created_at REAL NOT NULL, "
    "updated_at REAL NOT NULL, entity TEXT, pending TEXT, PRIMARY KEY (tenant, id))",
    "CREATE TABLE IF NOT EXISTS turns (tenant TEXT NOT NULL, session_id TEXT NOT NULL, number INTEGER NOT NULL, "
    "question TEXT NOT NULL, answer TEXT NOT NULL, trace_id TEXT NOT NULL, refused INTEGER NOT NULL, "
    "clarification TEXT, at REAL NOT NULL, PRIMARY KEY (tenant, session_id, number), "
    "FOREIGN KEY (tenant, session_id) REFERENCES sessions(tenant, id))",
)
_SCHEMA = ";\n".join(_TABLES) + ";"


def _migrate(conn) -> None:
    """Sessions stored before tenants (keyed by id alone) move to the default tenant."""
    if not columns_of(conn, "sessions") or "tenant" in columns_of(conn, "sessions"):
        return
    conn.execute("ALTER TABLE sessions RENAME TO sessions_before_tenants")
    conn.execute("ALTER TABLE turns RENAME TO turns_before_tenants")
    for statement in _TABLES:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO sessions SELECT ?, id, created_at, updated_at, entity, pending FROM sessions_before_tenants",
        (DEFAULT_TENANT,),
    )
    conn.execute(
        "INSERT INTO turns SELECT ?, session_id, number, question, answer, trace_id, refused, "
        "clarification, at FROM turns_before_tenants",
        (DEFAULT_TENANT,),
    )
    conn.execute("DROP TABLE turns_before_tenants")
    conn.execute("DROP TABLE sessions_before_tenants")


def new_session_id() -> str:
    return uuid.uuid4().hex


_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def check_session_id(session_id: str) -> str:
    if (
        not is_storable_text(session_id)
        or not session_id.strip()
        or _CONTROL_CHARS.search(session_id)
        or len(session_id) > MAX_SESSION_ID_CHARS
    ):
        raise ValueError(
            f"a session id is non-empty text of at most {MAX_SESSION_ID_CHARS} characters "
            "(valid Unicode, no control characters such as NUL)"
        )
    return session_id.strip()


def _when(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


class Clarification(BaseModel):
    """What a reply asked the customer for instead of answering."""

    kind: Literal["facts", "product"]
    need: list[str]  # facts (height_cm, weight_kg, foot_length_cm) or ["product"]
    text: str  # the question put to the customer
    product: Entity | None = None
    options: list[Entity] = Field(default_factory=list)  # the products a "product" question offers
    skill: str | None = None  # the skill that reported the need
    arguments: dict = Field(default_factory=dict)  # what that skill was called with
    elapsed_ms: float = 0.0  # the skill call


class PendingTask(BaseModel):
    """A question waiting for the facts a clarifying question asked for."""

    kind: Literal["facts", "product"]
    need: list[str]
    question: str  # the question to complete (facts given so far merged in)
    entity: Entity | None = None
    options: list[Entity] = Field(default_factory=list)  # the products offered, in the order listed
    trace_id: str  # the clarifying reply


class Turn(BaseModel):
    question: str  # what the customer typed
    answer: str
    trace_id: str
    refused: bool = False
    at: datetime
    clarification: dict | None = None


class SessionState(BaseModel):
    id: str
    created_at: datetime
    updated_at: datetime
    entity: Entity | None = None  # the product the conversation is about (carried into follow-ups)
    pending: PendingTask | None = None
    turns: list[Turn] = Field(default_factory=list)


class SessionStore:
    """SQLite store of sessions and their turns; one connection serialised by a lock."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._conn = open_sqlite(self.path, _SCHEMA, migrate=_migrate)
        self._lock = threading.Lock()

    @classmethod
    def for_kb(cls, kb_dir: Path | str) -> SessionStore:
        return cls(Path(kb_dir) / FILE_NAME)

    def get(self, session_id: str, tenant: str = DEFAULT_TENANT) -> SessionState | None:
        """The tenant's session (None for an unknown id, and for another tenant's)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT id, created_at, updated_at, entity, pending FROM sessions WHERE tenant = ? AND id = ?",
                (tenant, session_id),
            ).fetchone()
            if row is None:
                return None
            turns = self._conn.execute(
                "SELECT question, answer, trace_id, refused, clarification, at FROM turns "
                "WHERE tenant = ? AND session_id = ? ORDER BY number",
                (tenant, session_id),
            ).fetchall()
        return SessionState(
            id=row[0],
            created_at=_when(row[1]),
            updated_at=_when(row[2]),
            entity=Entity.model_validate_json(row[3]) if row[3] else None,
            pending=PendingTask.model_validate_json(row[4]) if row[4] else None,
            turns=[
                Turn(
                    question=q,
                    answer=a,
                    trace_id=t,
                    refused=bool(r),
                    clarification=json.loads(c) if c else None,
                    at=_when(at),
                )
                for q, a, t, r, c, at in turns
            ],
        )

    def add_turn(
        self,
        session_id: str,
        turn: Turn,
        entity: Entity | None,
        pending: PendingTask | None,
        tenant: str = DEFAULT_TENANT,
    ) -> None:
        """Append a turn and set the session's carried product and pending task (one transaction;
        the session is created on its first turn). Personal data is redacted from what is stored."""
        session_id = check_session_id(session_id)
        now = turn.at.timestamp()
        turn = turn.model_copy(
            update={
                "question": redact_personal(turn.question),
                "answer": redact_personal(turn.answer),
                "clarification": redact_personal_in(turn.clarification),
            }
        )
        if pending is not None:
            pending = pending.model_copy(update={"question": redact_personal(pending.question)})
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(
                    "INSERT OR IGNORE INTO sessions (tenant, id, created_at, updated_at) VALUES (?, ?, ?, ?)",
                    (tenant, session_id, now, now),
                )
                number = self._conn.execute(
                    "SELECT COALESCE(MAX(number), 0) + 1 FROM turns WHERE tenant = ? AND session_id = ?",
                    (tenant, session_id),
                ).fetchone()[0]
                self._conn.execute(
                    "INSERT INTO turns (tenant, session_id, number, question, answer, trace_id, refused, "
                    "clarification, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        tenant,
                        session_id,
                        number,
                        turn.question,
                        turn.answer,
                        turn.trace_id,
                        int(turn.refused),
                        json.dumps(turn.clarification, ensure_ascii=False) if turn.clarification else None,
                        now,
                    ),
                )
                self._conn.execute(
                    "UPDATE sessions SET updated_at = ?, entity = ?, pending = ? WHERE tenant = ? AND id = ?",
                    (
                        now,
                        entity.model_dump_json() if entity else None,
                        pending.model_dump_json() if pending else None,
                        tenant,
                        session_id,
                    ),
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class Clarifier:
    """When to ask the customer for facts, and how their answer completes the waiting question."""

    def __init__(self, kb: KnowledgeBase, analyzer: QueryAnalyzer):
        self.kb = kb
        self.analyzer = analyzer

    def check(self, features: QueryFeatures) -> Clarification | None:
        """The clarifying question this question needs before it can be answered, if any."""
        if features.intent in _NO_PRODUCT_INTENTS:
            return None
        product = features.product
        if product is not None and product.product_id is None:
            return self._which_product(product)  # "AJ1": the Low or the Retro? never guess
        if product is not None:
            return self._missing_facts(features, product) if features.asks_size_advice and product.product_id else None
        index = product_index(self.kb)
        if features.brands or features.model_codes or not index.products:
            return None  # something narrows the search, or the KB sells nothing (no product to ask for)
        reference = _PRODUCT_REFERENCE.search(features.canonical)
        if reference is None and features.categories:
            return None  # "外套尺码怎么选": a question about a kind of product, not one of them
        refers = (
            reference
            or (features.is_followup and (features.sizes or features.asks_price_stock or features.asks_size))
            or self._about_an_unnamed_product(features)
        )
        if not refers:
            return None
        kind, options = self._of_kind(features, reference)
        if kind and 0 < len(options) <= MAX_LISTED:
            listed = "；".join(f"{i}. {o.name}" for i, o in enumerate(options, start=1))
            return Clarification(
                kind="product", need=["product"], text=ASK_WHICH_KIND.format(kind=kind, options=listed), options=options
            )
        return Clarification(kind="product", need=["product"], text=ASK_PRODUCT)

    def _about_an_unnamed_product(self, features: QueryFeatures) -> bool:
        """A short question that names no product, brand or category and asks about a product: only
        its price, stock or size ("多少钱？有货吗？"), or something whose best keyword match is tied to a
        product (its page, a review, a post), not an FAQ entry or a policy ("适合新手吗？" yes,
        "支持哪些付款方式？" and "鞋子尺码怎么选？" no)."""
        if (
            features.length > _UNNAMED_SUBJECT_CHARS
            or not (features.question_words or features.asks_price_stock)
            or self.analyzer.index.names_anything(features.canonical)
        ):
            return False
        if not self.kb.query_tokens(without_product_asks(features.canonical)):
            return True  # nothing but a price, stock or size ask: "多少钱？有货吗？"
        # searched as the documents word it: 箱子压坏了 is a delivery's 破损 (a policy), not a suitcase
        best = self.kb.search_keyword(with_document_words(features.canonical, features.shop), k=1)
        chunk = self.kb.get(best[0].chunk_id) if best else None
        return chunk is not None and bool(chunk.product_id)

    def _of_kind(self, features: QueryFeatures, reference: re.Match | None) -> tuple[str, list[Entity]]:
        """The kind of product a reference names ("这双鞋" -> 鞋, "这款充电宝" -> 充电宝, or a category
        the question names) and the shop's products of that kind; ("", []) when it names none."""
        index = product_index(self.kb)
        canon = {
            pid: (
                index.lexicon.canonicalize(normalize(p.category or "")),
                index.lexicon.canonicalize(normalize(p.name or "")),
            )
            for pid, p in index.products.items()
        }

        def of(word: str) -> list[str]:
            if len(word) == 1:  # a bare head noun names a category it ends (鞋: 运动鞋, 包: 箱包)
                return [pid for pid, (category, _) in canon.items() if category.endswith(word)]
            return [pid for pid, (category, name) in canon.items() if word in category or word in name]

        after = CJK_RUN.match(features.canonical, reference.end()) if reference is not None else None
        word = after.group(0)[:6] if after else ""
        for size in range(len(word), 0, -1):
            owners = of(word[:size])
            if owners:
                return word[:size], [self._option(index.products[pid]) for pid in sorted(owners)]
        if features.categories:
            owners = of(features.categories[0])
            return features.categories[0], [self._option(index.products[pid]) for pid in sorted(owners)]
        return "", []

    @staticmethod
    def _option(product) -> Entity:
        return Entity(
            name=product.name,
            product_id=product.product_id,
            brand=product.brand or None,
            category=product.category or None,
        )

    def _which_product(self, product: Entity) -> Clarification | None:
        """Which of the products a name fits equally well (product_lookup would list the same
        candidates, else the products the name is a key of); None when it fits none or one."""
        index = product_index(self.kb)
        candidates = index.resolve(product.surface or product.name).candidates
        if len(candidates) < 2:
            fitting = self.analyzer.index.fitting(product.surface or product.name)
            candidates = [index.products[pid] for pid in sorted(fitting) if pid in index.products]
        if len(candidates) < 2:
            return None
        options = [self._option(p) for p in candidates]
        listed = "；".join(f"{i}. {o.name}" for i, o in enumerate(options, start=1))
        return Clarification(
            kind="product",
            need=["product"],
            text=ASK_WHICH.format(asked=product.surface or product.name, options=listed),
            options=options,
        )

    def _missing_facts(self, features: QueryFeatures, product: Entity) -> Clarification | None:
        given = {
            "height_cm": features.height_cm,
            "weight_kg": features.weight_kg,
            "foot_length_cm": features.foot_length_cm,
        }
        arguments: dict[str, Any] = {"product": product.product_id, **{k: v for k, v in given.items() if v is not None}}
        started = time.perf_counter()
        need = size_recommend(**arguments, ctx=SkillContext(self.kb)).data.get("need")
        elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
        if not need:
            return None
        labels = [FACT_LABELS.get(name, name) for name in need]
        facts = labels[0] if len(labels) == 1 else "、".join(labels[:-1]) + "和" + labels[-1]
        return Clarification(
            kind="facts",
            need=list(need),
            text=ASK_FACTS.format(facts=facts),
            product=product,
            skill="size_recommend",
            arguments=arguments,
            elapsed_ms=elapsed_ms,
        )

    def complete(self, pending: PendingTask, reply: str) -> tuple[str, Entity | None] | None:
        """(question, product) to answer when `reply` gives what `pending` waits for; None when
        the reply is something else (a new question: the pending task is dropped)."""
        turn = self.analyzer.run(reply)
        if pending.kind == "facts":
            facts = parse_body_reply(reply, pending.need)  # "175，72公斤": the bare 175 is the height asked for
            same_product = all(
                p.product_id == (pending.entity.product_id if pending.entity else None) for p in turn.products
            )
            if not facts or not same_product:
                return None
            read_alone = {
                name: value
                for name, value in (
                    ("height_cm", turn.height_cm),
                    ("weight_kg", turn.weight_kg),
                    ("foot_length_cm", turn.foot_length_cm),
                )
                if value is not None
            }
            # what the reply says only in context is spelt out, so the completed question reads alone
            added = reply if facts == read_alone else f"{reply}（{describe_body_facts(facts)}）"
            return f"{pending.question} {added}", pending.entity
        if pending.options:
            chosen = self._chosen_option(pending.options, reply, turn)
            return (f"{chosen.name} {pending.question}", chosen) if chosen is not None else None
        named = turn.products[0] if turn.products else None
        just_a_name = not (turn.question_words or turn.asks_price_stock or turn.asks_size) and turn.intent == "fact"
        if named is not None and just_a_name:
            # a name several products fit ("轻羽") keeps the question waiting: it is asked back next
            return f"{reply} {pending.question}", named if named.product_id else None
        return None

    def carry_variant(self, state: SessionState, question: str) -> str:
        """A follow-up naming one variant dimension of the conversation's product asks about the
        other as the last turn named it: "那M码呢？" after "雪山白L码还有吗？" is 雪山白 M, "那黑色呢？"
        after it is black L. Returns the question with that colour or size put in front, or as is."""
        index = product_index(self.kb)
        product = (
            index.products.get(state.entity.product_id)
            if state.entity and state.entity.product_id is not None
            else None
        )
        if product is None or not state.turns or index.resolve(question).product is not None:
            return question
        colours = list(dict.fromkeys(r["colour"] for r in product.skus if r.get("colour")))
        sizes = {str(r["size"]).upper() for r in product.skus if r.get("size")}

        def named(text: str) -> tuple[list[str], list[str]]:
            canonical = normalize(text)
            return ([c for c in colours if c in canonical], [z for z in parse_sizes(canonical.upper()) if z in sizes])

        before_colours, before_sizes = named(state.turns[-1].question)
        now_colours, now_sizes = named(question)
        if now_sizes and not now_colours and len(before_colours) == 1:
            return f"{before_colours[0]} {question}"
        if now_colours and not now_sizes and len(before_sizes) == 1:
            return f"{before_sizes[0]}码 {question}"
        return question

    def _chosen_option(self, options: list[Entity], reply: str, turn: QueryFeatures) -> Entity | None:
        """The offered product a reply picks: by its number ("2", "第二个"), by a name only it
        fits ("Retro", "芝加哥"), as the product the reply names, or by a word of its name or colours
        no other option has ("缓震那款", "长款的", "活力橙"); None for anything else."""
        ordinal = _ORDINAL.match(reply)
        if ordinal:
            digit = ordinal.group(1)
            index = int(digit) if digit.isdigit() else chinese_int(digit)
            if index and index <= len(options):
                return options[index - 1]
            # no such number: "3" may still be a model number only one option has (轻羽3)
        by_id = {o.product_id: o for o in options}
        match = product_index(self.kb).resolve(reply)
        if match.product is not None and match.product.product_id in by_id:
            return by_id[match.product.product_id]
        among = [by_id[p.product_id] for p in match.candidates if p.product_id in by_id]
        if len(among) == 1:
            return among[0]
        named = [p for p in turn.products if p.product_id in by_id]
        if turn.products:  # a product offered, or another one (a new question)
            return by_id[named[0].product_id] if len(named) == 1 else None
        if turn.question_words or turn.asks_price_stock or turn.asks_size or turn.brands or turn.model_codes:
            return None  # a question of its own, not a pick
        # a word of one option's name or colours only ("缓震那款", "长款的"), compared among the options alone
        words = _words(normalize(reply))
        fits = [o for o in options if words & _words(self._described(o.product_id))]
        return fits[0] if len(fits) == 1 else None

    def _described(self, product_id: str | None) -> str:
        """A product's name, category and SKU colours, as a reply picking it may word them."""
        product = product_index(self.kb).products.get(product_id or "")
        if product is None:
            return ""
        colours = {row.get("colour") or "" for row in product.skus}
        return normalize(" ".join([product.name, product.category, *sorted(colours)]))
