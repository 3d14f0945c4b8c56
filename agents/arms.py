"""Strategy arms: named retrieval plans from agents/arms.yaml, filled from query features.

An arm is an ordered list of steps {skill, args}; `Arm.plan(features)` turns it into concrete
calls under a hard budget. The offline planner runs the plan as real tool calls and the LLM
planner receives it as a suggestion; the policy (agents/policy.py) picks the arm.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from citescope.agents.query_analysis import Entity, QueryFeatures
from citescope.knowledge.crosslingual import with_document_words

DEFAULT_ARMS = Path(__file__).with_name("arms.yaml")
DEFAULT_MAX_CALLS = 4
DEFAULT_MAX_PER_TOOL = 2
TEMPLATE_FIELDS = frozenset(
    {
        "question",
        "query",
        "product",
        "product_ref",
        "product_id",
        "filter_product_id",
        "filter_brand",
        "filter_category",
        "doc_types",
        "height_cm",
        "weight_kg",
        "foot_length_cm",
        "size_label",
        "sizes",
        "price_limit",
    }
)
_PLACEHOLDER = re.compile(r"\{(\w+)(\?)?\}")
_BINDING = re.compile(r"^(\w+)\.(\w+)(?:\[(\d+)\])?$")
_POLICY_DOC_TYPES = "policy,faq"


class ArmsConfigError(ValueError):
    """An arms file that cannot be used; the message names the file and the arm."""


class PlanBudget(BaseModel):
    """The tool-call caps a plan is made under: the part of agents.budget.Budget the policy sees."""

    max_calls: int = Field(default=DEFAULT_MAX_CALLS, ge=0)
    max_per_tool: int = Field(default=DEFAULT_MAX_PER_TOOL, ge=0)


class PlannedCall(BaseModel):
    skill: str
    args: dict[str, Any] = Field(default_factory=dict)
    bind: dict[str, str] = Field(default_factory=dict)  # arg -> "skill.key[i]" of an earlier result

    def resolve(self, outputs: Mapping[str, Mapping]) -> PlannedCall:
        """The call with its bindings filled from earlier results (skill name -> result data);
        an unresolvable binding keeps the template value."""
        if not self.bind:
            return self
        args = dict(self.args)
        for arg, ref in self.bind.items():
            value = lookup_binding(ref, outputs)
            if value not in (None, ""):
                args[arg] = value
        return PlannedCall(skill=self.skill, args=args)


def lookup_binding(ref: str, outputs: Mapping[str, Mapping]) -> Any:
    found = _BINDING.match(ref)
    if found is None:  # load_arms rejects such a ref when it reads the arms file
        raise ValueError(f"not a binding 'skill.key' or 'skill.key[i]': {ref!r}")
    skill, key, index = found.groups()
    value = (outputs.get(skill) or {}).get(key)
    if index is None:
        return value
    if isinstance(value, (list, tuple)) and int(index) < len(value):
        return value[int(index)]
    return None


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    skill: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)
    # "product": one call per product the question names; "part": one per part of a compound
    # question; a list: the first of these that the question has more than one of
    for_each: Literal["product", "part"] | list[Literal["product", "part"]] | None = None
    bind: dict[str, str] = Field(default_factory=dict)

    def placeholders(self) -> list[tuple[str, bool]]:
        """(field, optional) for every placeholder in the args."""
        found = []
        for value in self.args.values():
            if isinstance(value, str):
                found += [(m.group(1), bool(m.group(2))) for m in _PLACEHOLDER.finditer(value)]
        return found

    def fill(self, values: Mapping[str, Any]) -> PlannedCall | None:
        """The call for these values; None when a required value is missing."""
        args = {}
        for name, template in self.args.items():
            if not isinstance(template, str) or not _PLACEHOLDER.search(template):
                args[name] = template
                continue
            fields = _PLACEHOLDER.findall(template)
            missing = [f for f, _ in fields if values.get(f) in (None, "")]
            if any(not optional for f, optional in fields if f in missing):
                return None
            if missing:
                continue  # an optional value is missing: leave the argument out
            whole = _PLACEHOLDER.fullmatch(template)
            args[name] = (
                values[whole.group(1)]
                if whole
                else _PLACEHOLDER.sub(lambda m: _as_text(values[m.group(1)]), template).strip()
            )
        return PlannedCall(skill=self.skill, args=args, bind=dict(self.bind))


class Arm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    steps: list[Step] = Field(min_length=1)

    def plan(
        self, features: QueryFeatures, max_calls: int = DEFAULT_MAX_CALLS, max_per_tool: int = DEFAULT_MAX_PER_TOOL
    ) -> list[PlannedCall]:
        """Concrete calls, in order: never more than max_calls, nor max_per_tool of one skill."""
        base = template_values(features)
        focus = features.focus_products
        calls: list[PlannedCall] = []
        per_tool: dict[str, int] = {}
        for step in self.steps:
            variants = [base]
            kinds = [step.for_each] if isinstance(step.for_each, str) else step.for_each or []
            for kind in kinds:
                if kind == "product" and len(focus) > 1:
                    variants = [template_values(features, product) for product in focus]
                    break
                if kind == "part" and len(features.parts) > 1:
                    variants = [template_values(features, part=part) for part in features.parts]
                    break
            for values in variants:
                call = step.fill(values)
                if call is None:
                    continue
                if len(calls) >= max_calls:
                    return calls
                if per_tool.get(call.skill, 0) >= max_per_tool:
                    continue
                per_tool[call.skill] = per_tool.get(call.skill, 0) + 1
                calls.append(call)
        return calls


def first_runnable(
    arms: Mapping[str, Arm], ranked: list[str], features: QueryFeatures, budget: PlanBudget
) -> tuple[str, list[PlannedCall]]:
    """The best-ranked arm that has something to call for this question, and its plan (an arm
    whose every step is skipped gives way to the next; none -> the best with an empty plan)."""
    for name in ranked:
        plan = arms[name].plan(features, budget.max_calls, budget.max_per_tool)
        if plan or budget.max_calls == 0:
            return name, plan
    return ranked[0], []


def _as_text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def template_values(
    features: QueryFeatures, product: Entity | None = None, part: str | None = None, bridged: bool = True
) -> dict[str, Any]:
    """Placeholder values; `product` selects one product of a multi-product question, `part` one
    part of a compound question (as the query; the question stays whole). bridged: the query carries
    the documents' words for an English question's words or a Chinese one's everyday words
    (knowledge/crosslingual.py), which a search needs and the reranker does not (it scores the
    documents' wording beside the question's)."""
    focus = features.focus_products
    if product is None and len(focus) == 1:
        product = focus[0]
    policy = features.intent == "policy"
    query = (part or features.question).strip()
    query = with_document_words(query, features.shop) if bridged else query
    carried = features.carried_entity
    if carried is not None and not features.products:
        query = f"{carried.name} {query}"
    elif features.carried_topic and not features.products:
        query = f"{features.carried_topic} {query}"
    only = lambda items: items[0] if len(items) == 1 else None  # noqa: E731 - one value or none
    return {
        "question": features.question.strip(),
        "query": query,
        "product": product.name if product else None,
        "product_ref": (product.product_id or product.name) if product else None,
        "product_id": product.product_id if product else None,
        "filter_product_id": product.product_id if product and not policy else None,
        "filter_brand": only(features.brands) if not product and not policy else None,
        "filter_category": only(features.categories) if not product and not policy else None,
        "doc_types": _POLICY_DOC_TYPES if policy else None,
        "height_cm": features.height_cm,
        "weight_kg": features.weight_kg,
        "foot_length_cm": features.foot_length_cm,
        "size_label": features.size_label,
        "sizes": list(features.sizes) or None,
        "price_limit": features.price_limit,
    }


def load_arms(path: Path | str = DEFAULT_ARMS, skills: set[str] | None = None) -> dict[str, Arm]:
    """Arms by name, in file order. `skills`, when given, is the set of skill names that exist."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ArmsConfigError(f"{path}: cannot read arms file ({exc.strerror or exc})") from exc
    except yaml.YAMLError as exc:
        raise ArmsConfigError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("arms"), dict) or not raw["arms"]:
        raise ArmsConfigError(f"{path}: expected a mapping 'arms: {{name: {{description, steps}}}}'")
    unknown_top = set(raw) - {"arms"}
    if unknown_top:
        raise ArmsConfigError(f"{path}: unknown top-level key(s) {sorted(unknown_top)}")
    arms = {}
    for name, body in raw["arms"].items():
        where = f"{path}: arm '{name}'"
        if not isinstance(body, dict):
            raise ArmsConfigError(f"{where}: expected a mapping with 'steps'")
        try:
            arm = Arm(name=str(name), **body)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ArmsConfigError(f"{where}: {problems}") from None
        _check_arm(arm, where, skills)
        arms[arm.name] = arm
    return arms


def _check_arm(arm: Arm, where: str, skills: set[str] | None) -> None:
    earlier: set[str] = set()
    for number, step in enumerate(arm.steps, start=1):
        at = f"{where}: step {number} ({step.skill})"
        if skills is not None and step.skill not in skills:
            raise ArmsConfigError(f"{at}: unknown skill (known: {', '.join(sorted(skills))})")
        unknown = sorted({f for f, _ in step.placeholders()} - TEMPLATE_FIELDS)
        if unknown:
            known = ", ".join(sorted(TEMPLATE_FIELDS))
            raise ArmsConfigError(f"{at}: unknown placeholder(s) {unknown} (known: {known})")
        for arg, ref in step.bind.items():
            found = _BINDING.match(ref)
            if found is None:
                raise ArmsConfigError(f"{at}: bind {arg}: {ref!r} is not 'skill.key' or 'skill.key[i]'")
            if found.group(1) not in earlier:
                raise ArmsConfigError(f"{at}: bind {arg}: {found.group(1)!r} is not an earlier step of this arm")
        earlier.add(step.skill)
