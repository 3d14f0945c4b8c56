"""PipelineConfig: the QA pipeline's knobs, loaded in layers.

Later layers win: workflows/pipeline.yaml (defaults) < `<kb>/config.yaml` (per-KB calibrated
values such as refusal_threshold; keys this config does not know are left to other readers of
that file) < environment CITESCOPE_<FIELD> (e.g. CITESCOPE_REFUSAL_THRESHOLD=0.35) < explicit
overrides (CLI flags, tests).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from citescope.agents.budget import Budget, RetryPolicy
from citescope.agents.models import ModelConfig
from citescope.agents.question_rules import known_packs
from citescope.agents.routing import ModelChoice, Role, RouteRule
from citescope.agents.usage import ModelPrice
from citescope.workflows.validation import describe_validation_error

DEFAULTS_PATH = Path(__file__).with_name("pipeline.yaml")
KB_CONFIG_NAME = "config.yaml"
ENV_PREFIX = "CITESCOPE_"


class PipelineConfigError(ValueError):
    """A config layer that cannot be used; the message names the layer."""


# A role's models: one spec (as before), one spec with its settings, or a list of them, cheapest
# first (agents/routing.py). A spec text with commas is a list too (CITESCOPE_ANSWERER="a,b").
ModelEntry = str | ModelChoice
ModelList = ModelEntry | list[ModelEntry]


class PipelineConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_tool_calls: int = Field(4, ge=0)
    max_calls_per_tool: int = Field(2, ge=0)
    max_model_calls: int = Field(10, ge=0)
    deadline_s: float = Field(60.0, gt=0)
    max_input_tokens: int | None = Field(None, ge=0)  # per question, over every model request; None: no limit
    max_output_tokens: int | None = Field(None, ge=0)
    prices: dict[str, ModelPrice] = Field(default_factory=dict)  # model name -> price per 1k tokens
    evidence_top_n: int = Field(6, ge=1)
    evidence_max_chars: int = Field(2400, ge=100)
    evidence_per_doc: int = Field(2, ge=1)
    conflict_scan_top_n: int = Field(12, ge=0)
    refusal_threshold: float = Field(0.1, ge=0.0, le=1.0)
    # the hedging band [refusal_threshold, hedge_threshold): an extractive answer that would open with
    # "根据现有资料" there is refused instead; 0 (or <= refusal_threshold) = no band (self_calibration.py)
    hedge_threshold: float = Field(0.0, ge=0.0, le=1.0)
    planner: ModelList = "offline"
    answerer: ModelList = "offline"
    judge: ModelEntry = "offline"  # the inspector's model judge (agents/inspector_judge.py): one model; "offline" = off
    # the reader's claim checker (agents/claim_reader.py): a model folder from `run.py train claims`; None = off
    claims_model: Path | None = None
    claims_reject_above: float | None = Field(None, ge=0.0, le=1.0)  # P(contradicted) that rejects; None: the card's
    # the reader's pair scorer (agents/pair_scorer.py): a model folder from `run.py train answers`; None = off
    pair_model: Path | None = None
    pair_top_n: int = Field(5, ge=1)  # the reranker's best chunks it reads (one engine pass each)
    # a pair scorer choosing the extractive answer's first sentence (run.py train answers --sentences); None = off
    sentence_model: Path | None = None
    model_routes: list[RouteRule] = Field(default_factory=list)  # where a question starts (agents/routing.py)
    answer_language: Literal["auto", "zh", "en"] = "auto"  # auto: the question's language
    conversation_turns: int = Field(3, ge=0)  # the last turns of a session both models read
    conversation_max_tokens: int = Field(400, ge=0)  # ... within this many estimated tokens
    reranker: str = "offline"
    max_question_chars: int = Field(2000, ge=1)
    retrieval_max_chars: int = Field(160, ge=16)  # of a longer question, what retrieval reads (retrieval_question.py)
    model_timeout_s: float = Field(20.0, gt=0)
    max_retries: int = Field(1, ge=0)
    backoff_s: float = Field(0.5, ge=0)
    offline_reserve_s: float = Field(1.0, ge=0)  # the deadline's end no model request may use
    breaker_failures: int = Field(3, ge=1)
    breaker_cool_down_s: float = Field(30.0, gt=0)
    max_concurrent_requests: int = Field(8, ge=1)  # per provider, process-wide
    sensitive_words_file: str = ""  # "" = off; relative: the KB folder if the file is there, else the repo
    sensitive_action: Literal["mask", "refuse"] = "mask"
    rule_packs: list[str] = Field(default_factory=list)  # opt-in question-rule packs (agents/question_cues.yaml)

    @field_validator("planner", "answerer", "judge", mode="before")
    @classmethod
    def _model_list(cls, value: Any) -> Any:
        if isinstance(value, str) and "," in value:
            value = [part for part in value.split(",") if part.strip()]
        if isinstance(value, str):
            ModelConfig.parse(value)  # raises ValueError naming what is wrong with the spec
            return value.strip()
        listed = value if isinstance(value, list) else [value]
        if not listed:
            raise ValueError("a role's model list is empty (use 'offline')")
        # checked here, entry by entry, so an error names the entry's field and not every type the field allows
        choices = []
        for number, entry in enumerate(listed):
            try:
                choices.append(entry.strip() if isinstance(entry, str) else ModelChoice.model_validate(entry))
                if isinstance(entry, str):
                    ModelConfig.parse(entry)
            except ValidationError as exc:
                raise ValueError(f"model {number}: {describe_validation_error(exc)}") from None
            except ValueError as exc:
                raise ValueError(f"model {number}: {exc}") from None
        return choices if isinstance(value, list) else choices[0]

    @field_validator("rule_packs", mode="before")
    @classmethod
    def _known_packs(cls, value: Any) -> Any:
        packs = [p.strip() for p in value.split(",") if p.strip()] if isinstance(value, str) else value
        if isinstance(packs, list):
            unknown = [p for p in packs if p not in known_packs()]
            if unknown:
                raise ValueError(f"unknown rule pack(s) {unknown} (known: {', '.join(known_packs())})")
        return packs

    @field_validator("reranker")
    @classmethod
    def _reranker_spec(cls, spec: str) -> str:
        kind, _, arg = spec.strip().partition(":")
        if not (kind == "offline" or (kind == "bge" and arg)):
            raise ValueError(
                f"unknown reranker spec {spec!r} (use 'offline', 'offline:<weights.json>' or 'bge:<path or name>')"
            )
        return spec.strip()

    def budget(self) -> Budget:
        return Budget(
            max_tool_calls=self.max_tool_calls,
            max_calls_per_tool=self.max_calls_per_tool,
            max_model_calls=self.max_model_calls,
            deadline_s=self.deadline_s,
            max_input_tokens=self.max_input_tokens,
            max_output_tokens=self.max_output_tokens,
            offline_reserve_s=self.offline_reserve_s,
        )

    def retry(self) -> RetryPolicy:
        return RetryPolicy(
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
            call_timeout_s=self.model_timeout_s,
            breaker_failures=self.breaker_failures,
            breaker_cool_down_s=self.breaker_cool_down_s,
            max_concurrent=self.max_concurrent_requests,
        )

    def model_config_for(self, spec: ModelEntry) -> ModelConfig:
        # The pipeline owns retries (SDK retries would hide attempts from the budget).
        choice = ModelChoice.of(spec)
        settings = choice.model_dump(exclude={"spec"}, exclude_none=True)
        return ModelConfig.parse(choice.spec, timeout_s=self.model_timeout_s, max_retries=0, **settings)

    def model_choices(self, role: Role) -> list[ModelChoice]:
        """The role's models in order, offline entries left out ([] = the offline engine alone)."""
        entries = getattr(self, role)
        listed = entries if isinstance(entries, list) else [entries]
        return [choice for choice in map(ModelChoice.of, listed) if not choice.is_offline]

    def model_configs(self, role: Role) -> list[ModelConfig]:
        return [self.model_config_for(choice) for choice in self.model_choices(role)]

    @classmethod
    def load(
        cls,
        kb_dir: Path | str | None = None,
        environ: Mapping[str, str] | None = None,
        defaults_path: Path | str = DEFAULTS_PATH,
        **overrides: Any,
    ) -> PipelineConfig:
        """Defaults < <kb_dir>/config.yaml < CITESCOPE_* environment < overrides (None = not set)."""
        values = _read_yaml(Path(defaults_path), strict=True)
        if kb_dir is not None and (Path(kb_dir) / KB_CONFIG_NAME).exists():
            values.update(_read_yaml(Path(kb_dir) / KB_CONFIG_NAME, strict=False))
        environ = os.environ if environ is None else environ
        for name in cls.model_fields:
            raw = environ.get(ENV_PREFIX + name.upper())
            if raw is not None and raw.strip():
                values[name] = raw.strip()
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**values)
        except ValidationError as exc:
            raise PipelineConfigError(f"pipeline config: {describe_validation_error(exc)}") from None


def _read_yaml(path: Path, strict: bool) -> dict:
    """The file's mapping; strict = every key must be a field (the defaults file), else the keys
    that are fields (a KB's config.yaml is shared with other components)."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise PipelineConfigError(f"{path}: cannot read pipeline config ({exc})") from exc
    if not isinstance(raw, dict):
        raise PipelineConfigError(f"{path}: expected a mapping of settings")
    unknown = set(raw) - set(PipelineConfig.model_fields)
    if strict and unknown:
        raise PipelineConfigError(f"{path}: unknown setting(s) {sorted(unknown)}")
    return {k: v for k, v in raw.items() if k in PipelineConfig.model_fields}


def read_kb_config(kb_dir: Path | str) -> dict[str, Any]:
    """<kb_dir>/config.yaml as stored, every key (the pipeline's settings and other components' blocks);
    {} when there is none. A file that does not read raises PipelineConfigError naming it."""
    path = Path(kb_dir) / KB_CONFIG_NAME
    if not path.exists():
        return {}
    try:
        stored = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise PipelineConfigError(f"{path}: cannot read pipeline config ({exc})") from exc
    return stored if isinstance(stored, dict) else {}


def update_kb_config(kb_dir: Path | str, values: Mapping[str, Any], remove: Iterable[str] = ()) -> Path:
    """Set these keys in <kb_dir>/config.yaml (and take out those of `remove`), keeping its other keys
    (the file is shared with other components): how calibration, dataset, self or labelled, records what
    it chose."""
    path = Path(kb_dir) / KB_CONFIG_NAME
    stored = {k: v for k, v in {**read_kb_config(kb_dir), **values}.items() if k not in set(remove)}
    # written whole, then renamed: an ingest killed while it self-calibrates leaves the old file or the new,
    # never half a file the KB could not open with
    temporary = path.with_name(f".{KB_CONFIG_NAME}.{os.getpid()}.tmp")
    temporary.write_text(yaml.safe_dump(stored, allow_unicode=True, sort_keys=False), encoding="utf-8")
    os.replace(temporary, path)
    return path
