"""The skill registry: which retrieval skills exist, where they come from, and how a call runs.

Skills are declared in a config file (default tools/skills.yaml) and by installed plug-ins
(entry points in the group "citescope.skills"), so a new skill needs no pipeline edit. Each
skill is health-checked when loaded (import, signature, docstring) and may add its own
`health(ctx)` check; one that fails is skipped and recorded in `degradations`. A call runs in
a worker thread under the skill's timeout: an exception or a timeout becomes a degraded
SkillResult, never an exception in the agent loop. Framework-free: agents/toolkit.py wraps
the registry for AgentScope.

Config entry keys: name, import ("module:function"), params (the skill's ctx.config),
timeout_s, enabled, description (replaces the docstring summary the model reads).
An entry point resolves to a skill function, to a dict with those keys ("function" may stand
for "import"), or to a SkillSpec. A config entry wins over a plug-in of the same name, so
`enabled: false` in the config turns a plug-in off.
"""

from __future__ import annotations

import copy
import importlib
import importlib.metadata
import inspect
import re
import threading
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from citescope.tools.base import SkillContext, SkillResult

DEFAULT_CONFIG = Path(__file__).with_name("skills.yaml")
ENTRY_POINT_GROUP = "citescope.skills"
DEFAULT_TIMEOUT_S = 10.0
_ENTRY_KEYS = {"name", "import", "params", "timeout_s", "enabled", "description"}
_TOP_KEYS = {"defaults", "skills"}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")  # a tool name every model API accepts
_IMPORT = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_ARG_LINE = re.compile(r"^(\s*)\**(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class SkillConfigError(ValueError):
    """A config file or entry that cannot be used; the message names the file and the entry."""


@dataclass
class SkillSpec:
    """What a config entry or a plug-in declares about one skill."""

    name: str
    import_path: str = ""  # "module:function"; or give `function` directly
    function: Callable | None = None
    params: dict = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    enabled: bool = True
    description: str | None = None
    origin: str = ""  # where it was declared, for messages


@dataclass
class Skill:
    """A loaded, healthy skill: the function plus what callers need to present and call it."""

    spec: SkillSpec
    function: Callable
    signature: inspect.Signature  # model-visible parameters only, annotations resolved
    arg_docs: dict[str, str]  # parameter -> its docstring description
    args_model: type[BaseModel]  # validates and coerces the model's arguments

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def description(self) -> str:
        """The spec's override, else the docstring without its Args section."""
        return self.spec.description or docstring_summary(self.function.__doc__ or "")


# ----------------------------------------------------------------------------- docstrings


def docstring_args(doc: str) -> dict[str, str]:
    """Google-style `Args:` section -> {name: description} (continuation lines joined)."""
    args: dict[str, str] = {}
    lines = inspect.cleandoc(doc or "").splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Args:")
    except StopIteration:
        return args
    entry_indent, current = None, None
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            break  # next section ("Returns:") or prose
        match = _ARG_LINE.match(line)
        if match and (entry_indent is None or indent == entry_indent):
            entry_indent, current = indent, match.group(2)
            args[current] = match.group(3).strip()
        elif current is not None and indent > (entry_indent or 0):
            args[current] = (args[current] + " " + line.strip()).strip()
    return args


def docstring_summary(doc: str) -> str:
    """The docstring up to its first section header (what the model reads about the skill)."""
    kept = []
    for line in inspect.cleandoc(doc or "").splitlines():
        if re.match(r"^(Args|Arguments|Returns|Raises|Yields|Examples?|Note):\s*$", line.strip()):
            break
        kept.append(line)
    return "\n".join(kept).strip()


# ----------------------------------------------------------------------------- health check


class Unhealthy(Exception):
    """Why a skill cannot be offered (import, signature, docstring or its own health check)."""


def resolve_import(import_path: str) -> Callable:
    module_name, _, attribute = import_path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except Exception as exc:  # any import-time failure of a skill module makes it unhealthy
        raise Unhealthy(f"import {import_path} failed: {type(exc).__name__}: {exc}") from exc
    return target


def load_skill(spec: SkillSpec) -> Skill:
    """Import and check a skill: `(visible args, *, ctx) -> SkillResult`, every arg documented
    and typed with a JSON-able type. Raises Unhealthy saying what is wrong."""
    function = spec.function or resolve_import(spec.import_path)
    if not callable(function):
        raise Unhealthy(f"{spec.import_path or function!r} is not callable")
    try:
        hints = typing.get_type_hints(function)
        signature = inspect.signature(function)
    except Exception as exc:
        raise Unhealthy(f"cannot read the signature: {type(exc).__name__}: {exc}") from exc
    ctx_param = signature.parameters.get("ctx")
    if ctx_param is None or ctx_param.kind is not inspect.Parameter.KEYWORD_ONLY:
        raise Unhealthy("needs a keyword-only parameter `ctx` (def skill(..., *, ctx: SkillContext))")
    returns = hints.get("return")
    if not (isinstance(returns, type) and issubclass(returns, SkillResult)):
        raise Unhealthy("must be annotated `-> SkillResult`")
    arg_docs = docstring_args(function.__doc__ or "")
    visible: list[inspect.Parameter] = []
    fields: dict[str, Any] = {}  # name -> (annotation, default), create_model's field form
    for name, param in signature.parameters.items():
        if name == "ctx":
            continue
        if param.kind in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
            inspect.Parameter.POSITIONAL_ONLY,
        ):
            raise Unhealthy(f"parameter {name!r}: only named parameters can be offered to a model")
        if name not in hints:
            raise Unhealthy(f"parameter {name!r} has no type annotation")
        if not arg_docs.get(name):
            raise Unhealthy(f"parameter {name!r} is not described in the docstring's Args section")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints[name], default)
        visible.append(param.replace(annotation=hints[name]))
    try:
        # extra="forbid": an argument the skill does not take is an error the model can fix
        args_model = create_model(f"{spec.name}_args", __config__=ConfigDict(extra="forbid"), **fields)
        args_model.model_json_schema()
    except Exception as exc:
        raise Unhealthy(f"argument types are not JSON-able: {type(exc).__name__}: {exc}") from exc
    if not docstring_summary(function.__doc__ or "") and not spec.description:
        raise Unhealthy("has no docstring summary and no description in its config entry")
    return Skill(spec, function, inspect.Signature(visible), arg_docs, args_model)


# ----------------------------------------------------------------------------- config


def _spec_from_entry(entry: Any, where: str, defaults: dict, allow_function: bool = False) -> SkillSpec:
    if not isinstance(entry, dict):
        raise SkillConfigError(f"{where}: an entry must be a mapping with name and import, got {type(entry).__name__}")
    name = entry.get("name")
    label = f"{where} ({name})" if isinstance(name, str) and name else where  # what messages point at
    allowed = _ENTRY_KEYS | ({"function"} if allow_function else set())
    if set(entry) - allowed:
        raise SkillConfigError(f"{label}: unknown key(s) {sorted(set(entry) - allowed)}; allowed: {sorted(allowed)}")
    if not isinstance(name, str) or not _NAME.match(name):
        raise SkillConfigError(f"{where}: name must be a tool name like keyword_search, got {name!r}")
    function = entry.get("function") if allow_function else None
    import_path = entry.get("import", "")
    if function is None and (not isinstance(import_path, str) or not _IMPORT.match(import_path)):
        raise SkillConfigError(f"{label}: import must be 'package.module:function', got {import_path!r}")
    params = entry.get("params") or {}
    if not isinstance(params, dict):
        raise SkillConfigError(f"{label}: params must be a mapping, got {type(params).__name__}")
    timeout = entry.get("timeout_s", defaults.get("timeout_s", DEFAULT_TIMEOUT_S))
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise SkillConfigError(f"{label}: timeout_s must be a positive number, got {timeout!r}")
    enabled = entry.get("enabled", True)
    if not isinstance(enabled, bool):
        raise SkillConfigError(f"{label}: enabled must be true or false, got {enabled!r}")
    description = entry.get("description")
    if description is not None and not isinstance(description, str):
        raise SkillConfigError(f"{label}: description must be text")
    return SkillSpec(
        name=name,
        import_path=import_path or "",
        function=function,
        params=dict(params),
        timeout_s=float(timeout),
        enabled=enabled,
        description=description,
        origin=label,
    )


def read_config(path: Path) -> list[SkillSpec]:
    """Skill specs of a YAML config file; any problem -> SkillConfigError naming file and entry."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SkillConfigError(f"{path}: cannot read skill config ({exc})") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("skills"), list):
        raise SkillConfigError(f"{path}: expected a mapping with a 'skills' list")
    if set(raw) - _TOP_KEYS:
        raise SkillConfigError(
            f"{path}: unknown top-level key(s) {sorted(set(raw) - _TOP_KEYS)}; allowed: {sorted(_TOP_KEYS)}"
        )
    defaults = raw.get("defaults") or {}
    if not isinstance(defaults, dict) or set(defaults) - {"timeout_s"}:
        raise SkillConfigError(f"{path}: defaults may only set timeout_s")
    specs: list[SkillSpec] = []
    seen: dict[str, int] = {}  # skill name -> index of its first entry
    for index, entry in enumerate(raw["skills"]):
        spec = _spec_from_entry(entry, f"{path}: skills[{index}]", defaults)
        if spec.name in seen:
            raise SkillConfigError(f"{spec.origin}: duplicate skill name, first declared at skills[{seen[spec.name]}]")
        seen[spec.name] = index
        specs.append(spec)
    return specs


def plugin_specs(degradations: list[str]) -> list[SkillSpec]:
    """Specs of installed plug-ins; a broken plug-in is recorded, never fatal."""
    specs = []
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {entry_point.name} = {entry_point.value}"
        try:
            target = entry_point.load()
            if isinstance(target, SkillSpec):
                spec = copy.copy(target)
                spec.params = dict(target.params)  # configure() must not change the plug-in's own spec
            elif isinstance(target, dict):
                spec = _spec_from_entry({"name": entry_point.name, **target}, where, {}, allow_function=True)
            elif callable(target):
                spec = SkillSpec(name=entry_point.name, function=target)
            else:
                raise SkillConfigError(f"{where}: resolves to {type(target).__name__}, not a skill")
            spec.origin = spec.origin or where
            specs.append(spec)
        except Exception as exc:
            degradations.append(f"plug-in skipped: {where}: {type(exc).__name__}: {exc}")
    return specs


# ----------------------------------------------------------------------------- registry


class SkillView(SkillContext):
    """One skill's view of the question's SkillContext: its own `config`; every other attribute,
    read or written, is the shared context's (same KB and pool, and a reranker a skill caches
    on ctx is kept for the next call)."""

    def __init__(self, shared: SkillContext, config: dict):  # no super().__init__: nothing of its own
        object.__setattr__(self, "_shared", shared)
        object.__setattr__(self, "config", config)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_shared"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "config":
            object.__setattr__(self, name, value)
        else:
            setattr(object.__getattribute__(self, "_shared"), name, value)


class SkillTimeout(Exception):
    pass


def run_with_timeout(function: Callable, kwargs: dict, timeout_s: float, thread_name: str) -> Any:
    """Run in a daemon thread; raise SkillTimeout after timeout_s (the thread is abandoned, and a
    daemon thread never holds up interpreter exit)."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = function(**kwargs)
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name=thread_name, daemon=True).start()
    if not done.wait(timeout_s):
        raise SkillTimeout(f"no result after {timeout_s:g}s")
    if "error" in box:
        raise box["error"]
    return box["value"]


class SkillRegistry:
    def __init__(self, specs: Iterable[SkillSpec] = (), source: str = "code"):
        self.source = source
        self.skills: dict[str, Skill] = {}
        self.skipped: dict[str, str] = {}  # name -> why it is not offered
        self.degradations: list[str] = []
        for spec in specs:
            self.add(spec)

    @classmethod
    def from_config(
        cls, path: Path | str | None = None, *, plugins: bool = True, ctx: SkillContext | None = None
    ) -> SkillRegistry:
        """Skills of the config file (default tools/skills.yaml) plus installed plug-ins; with a
        ctx, each skill's own health(ctx) check runs too (else call check_health later)."""
        path = Path(path) if path is not None else DEFAULT_CONFIG
        registry = cls(source=str(path))
        configured = read_config(path)
        for spec in configured:
            registry.add(spec)
        if plugins:
            for spec in plugin_specs(registry.degradations):
                if spec.name in registry.skills or spec.name in registry.skipped:
                    registry.degradations.append(
                        f"plug-in {spec.name} ({spec.origin}) not loaded: a skill of that name is already declared"
                    )
                else:
                    registry.add(spec)
        if ctx is not None:
            registry.check_health(ctx)
        return registry

    def add(self, spec: SkillSpec) -> None:
        """Load and check one skill; unhealthy or disabled skills are recorded, not raised."""
        if spec.name in self.skills or spec.name in self.skipped:
            raise SkillConfigError(f"{spec.origin or spec.name}: skill {spec.name!r} is already registered")
        if not spec.enabled:
            self.skipped[spec.name] = "disabled"
            return
        try:
            self.skills[spec.name] = load_skill(spec)
        except Unhealthy as exc:
            self._mark_unhealthy(spec.name, spec.origin, str(exc))

    def _mark_unhealthy(self, name: str, origin: str, reason: str) -> None:
        self.skills.pop(name, None)
        self.skipped[name] = reason
        self.degradations.append(f"skill {name} skipped ({origin or 'code'}): {reason}")

    def check_health(self, ctx: SkillContext) -> list[str]:
        """Run each skill's optional `health(ctx)` (None/True = fine, False or a message = not);
        failing skills are taken out. Returns the names still healthy."""
        for name, skill in list(self.skills.items()):
            health = getattr(skill.function, "health", None)
            if not callable(health):
                continue
            try:
                verdict = run_with_timeout(
                    health, {"ctx": self._skill_ctx(skill, ctx)}, skill.spec.timeout_s, f"health-{name}"
                )
            except Exception as exc:
                verdict = f"health check raised {type(exc).__name__}: {exc}"
            if verdict is False or isinstance(verdict, str):
                self._mark_unhealthy(name, skill.spec.origin, verdict or "health check failed")
        return self.names()

    def configure(self, name: str, **params: Any) -> None:
        """Set params at run time over the config's, e.g. objects a YAML file cannot hold
        (rewrite_query's `llm` callable); they reach the skill as ctx.config."""
        self.get(name).spec.params.update(params)

    def names(self) -> list[str]:
        return list(self.skills)

    def get(self, name: str) -> Skill:
        try:
            return self.skills[name]
        except KeyError:
            why = f" (skipped: {self.skipped[name]})" if name in self.skipped else ""
            raise KeyError(f"unknown skill {name!r}{why}; healthy skills in {self.source}: {self.names()}") from None

    @staticmethod
    def _skill_ctx(skill: Skill, ctx: SkillContext) -> SkillContext:
        """The question's context as this skill sees it: the skill's params as config."""
        return SkillView(ctx, dict(skill.spec.params))

    def call(self, name: str, ctx: SkillContext, **kwargs: Any) -> SkillResult:
        """Run a skill with validated arguments under its timeout; failures come back degraded."""
        if name in self.skipped and name not in self.skills:
            return SkillResult(
                skill=name,
                degraded=[f"{name} unavailable: {self.skipped[name]}"],
                note=f"技能 {name} 当前不可用，请换用其他技能。",
            )
        skill = self.get(name)
        try:
            validated = skill.args_model.model_validate(kwargs)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in exc.errors())
            return SkillResult(
                skill=name,
                degraded=[f"{name} bad arguments: {problems}"],
                note=f"参数不合法（{problems}），请按工具说明重新调用。",
            )
        try:
            args = {name: getattr(validated, name) for name in skill.signature.parameters}
            result = run_with_timeout(
                skill.function, {**args, "ctx": self._skill_ctx(skill, ctx)}, skill.spec.timeout_s, f"skill-{name}"
            )
        except SkillTimeout as exc:
            return SkillResult(
                skill=name, degraded=[f"{name} timed out: {exc}"], note=f"技能 {name} 超时，没有结果，请换用其他技能。"
            )
        except Exception as exc:
            return SkillResult(
                skill=name,
                degraded=[f"{name} failed: {type(exc).__name__}: {exc}"],
                note=f"技能 {name} 出错，没有结果，请换用其他技能。",
            )
        if not isinstance(result, SkillResult):
            return SkillResult(
                skill=name,
                degraded=[f"{name} returned {type(result).__name__}, not SkillResult"],
                note=f"技能 {name} 出错，没有结果，请换用其他技能。",
            )
        return result
