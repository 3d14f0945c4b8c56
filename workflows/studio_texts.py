"""What a Studio session shows, in the customer's language and as Markdown Studio renders well.

Studio shows every message through a Markdown renderer, where single line breaks join lines into
one paragraph; so the sources are a list (one `- 【id】 title (updated_at)` per line) and a tool
result is one list item per hit. The words come from prompts/studio_texts.yaml (Chinese first);
a refusal reason is a code in QAResult (`weak_evidence`), never shown as such: the file words it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml

from citescope.agents.citations import strip_citations
from citescope.agents.inspector import InspectionReport
from citescope.knowledge.chinese_script import in_traditional, written_in_traditional
from citescope.knowledge.text import CJK_CHAR, is_english
from citescope.workflows.result import QAResult

Language = Literal["zh", "zh-Hant", "en"]
TEXTS_PATH = Path(__file__).resolve().parents[1] / "prompts" / "studio_texts.yaml"
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_LIST_SEPARATOR = {"zh": "、", "zh-Hant": "、", "en": ", "}


def language_of(question: str, answer: str = "") -> Language:
    """The language to speak to the customer in: traditional Chinese for a question written in it;
    English for a question without Chinese that reads as English or that the pipeline answered in
    English (it also knows product names: "AJ1 Retro" alone is a Chinese shop's product, not
    English); simplified Chinese otherwise."""
    if written_in_traditional(question):
        return "zh-Hant"
    if not CJK_CHAR.search(question) and (is_english(question) or not CJK_CHAR.search(strip_citations(answer))):
        return "en"
    return "zh"


class StudioTexts:
    """The entries of prompts/studio_texts.yaml: key -> {zh, en}, and refusal_reasons -> code -> {zh, en}."""

    def __init__(self, entries: dict[str, dict], reasons: dict[str, dict]):
        self.entries = entries
        self.reasons = reasons

    @classmethod
    def load(cls, path: Path = TEXTS_PATH) -> StudioTexts:
        """The file, checked: every entry needs a zh and an en text (ValueError naming the entry)."""
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: expected a mapping of text entries")
        reasons = raw.pop("refusal_reasons", None) or {}
        for where, entries in ((None, raw), ("refusal_reasons", reasons)):
            for key, entry in entries.items():
                name = f"{where}.{key}" if where else key
                if not isinstance(entry, dict) or not all(isinstance(entry.get(lang), str) for lang in ("zh", "en")):
                    raise ValueError(f"{path}: entry {name!r} needs a zh and an en text")
        if "other" not in reasons:
            raise ValueError(f"{path}: refusal_reasons needs an 'other' entry for codes it does not list")
        return cls(raw, reasons)

    def say(self, key: str, language: Language, **values: Any) -> str:
        """The entry in that language, its {placeholders} filled (values inserted verbatim)."""
        return self._localized(self.entries[key], language, values)

    def refusal_reason(self, code: str, language: Language) -> str:
        """A refusal code (`weak_evidence`) in words; an unlisted code reads as 'other'."""
        return self._localized(self.reasons.get(code) or self.reasons["other"], language, {})

    @staticmethod
    def _localized(entry: dict, language: Language, values: dict[str, Any]) -> str:
        template = entry["en" if language == "en" else "zh"]
        if language == "zh-Hant":
            template = in_traditional(template)
        filled = {key: str(value) for key, value in values.items()}
        return _PLACEHOLDER.sub(lambda m: filled.get(m.group(1), m.group(0)), template)


@lru_cache(maxsize=1)
def studio_texts() -> StudioTexts:
    return StudioTexts.load()


def joined(items: list[str], language: Language) -> str:
    return _LIST_SEPARATOR[language].join(items)


def answer_markdown(result: QAResult, language: Language) -> str:
    """The answer as the pipeline wrote it, then its sources as a Markdown list."""
    texts = studio_texts()
    blocks = [result.answer.strip()]
    if result.citations:
        items = [f"- 【{c.id}】 {c.title}" + (f" ({c.updated_at})" if c.updated_at else "") for c in result.citations]
        sources = "\n".join(items)
        blocks.append(
            texts.say("sources", language) + "\n\n" + (in_traditional(sources) if language == "zh-Hant" else sources)
        )
    if result.degraded:
        blocks.append(texts.say("degraded", language, reasons=joined(result.degradation_reasons, language)))
    return "\n\n".join(blocks)


def verdict_markdown(result: QAResult, language: Language) -> str:
    """The inspector's verdict in the customer's language: one line, then the findings as a list."""
    texts = studio_texts()

    def say(key: str, **values: Any) -> str:
        return texts.say(key, language, **values)

    if result.clarification is not None:
        return say("verdict_clarification")
    if result.refusal_reason == "unknown_model":
        return say("verdict_unknown_model", models=joined(result.features.get("unknown_models") or [], language))
    report = result.inspection
    if report is None:
        return say("verdict_refused_before_answer", reason=texts.refusal_reason(result.refusal_reason, language))
    head = (
        say("verdict_passed")
        if report.passed and not result.refused
        else say("verdict_failed_refused")
        if result.refused
        else say("verdict_failed")
    )
    line = say(
        "verdict_line",
        head=head,
        factual=report.factual_sentences,
        coverage=f"{report.coverage:.0%}",
        cited_count=len(report.cited_ids),
        cited=joined(report.cited_ids, language) or say("verdict_none_cited"),
    )
    if result.regenerated:
        line += say("verdict_regenerated")
    if result.conflicts:
        line += say("verdict_conflicts", attributes=joined([c.attribute for c in result.conflicts], language))
    blocks = [line]
    if result.refused and result.refusal_reason:
        blocks.append(say("verdict_refusal_reason", reason=texts.refusal_reason(result.refusal_reason, language)))
    findings = _findings(report, language)
    if findings:
        blocks.append("\n".join(f"- {finding}" for finding in findings))
    return "\n\n".join(blocks)


def _findings(report: InspectionReport, language: Language) -> list[str]:
    texts = studio_texts()
    lines = []
    if report.invalid_ids:
        lines.append(texts.say("finding_invalid_ids", language, ids=joined(report.invalid_ids, language)))
    lines += [texts.say("finding_uncited", language, sentence=s) for s in report.uncited]
    lines += [
        texts.say("finding_unsupported", language, missing=joined(u.missing, language), sentence=u.sentence)
        for u in report.unsupported
        if u.missing
    ]
    lines += [  # a semantic rule or the model judge (agents/claim_rules.py, agents/inspector_judge.py)
        texts.say("finding_contradicted", language, rule=hit.rule, evidence=hit.evidence, sentence=u.sentence)
        for u in report.unsupported
        for hit in u.contradicted
    ]
    if report.missing_conflicts:
        lines.append(
            texts.say("finding_missing_conflicts", language, attributes=joined(report.missing_conflicts, language))
        )
    return lines


def tool_result_markdown(text: str) -> str:
    """A skill's result as the planner reads it (tools/base.py SkillResult.text: an optional note,
    one `【id】 title — snippet` line per hit, an optional degradation note) as Markdown: each hit
    a list item, every other line a paragraph of its own."""
    blocks: list[str] = []
    items: list[str] = []
    for line in filter(None, (raw.strip() for raw in text.splitlines())):
        if line.startswith("【"):
            items.append(f"- {line}")
            continue
        if items:
            blocks.append("\n".join(items))
            items = []
        blocks.append(line)
    if items:
        blocks.append("\n".join(items))
    return "\n\n".join(blocks)


def markdown_tool_results_hook(agent: Any, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """An AgentBase pre_print hook: the printed copy of a message shows its tool results as
    Markdown (the planner's memory, which a model reads, keeps the plain text)."""
    msg = kwargs.get("msg")
    content = getattr(msg, "content", None)
    if not isinstance(content, list):
        return None
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            output = block.get("output")
            if isinstance(output, str):
                block["output"] = tool_result_markdown(output)
            elif isinstance(output, list):
                for part in output:
                    if isinstance(part, dict) and part.get("type") == "text":
                        part["text"] = tool_result_markdown(part.get("text", ""))
    return kwargs
