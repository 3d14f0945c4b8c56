"""How the extractive answerer discloses a conflict: one sentence stating each source's value,
cited, in the detector's order, and which one prevails (or that the sources give no ground to choose)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from citescope.agents.citations import (
    after_heading,
    quotable,
    split_sentences,
)
from citescope.agents.conflicts import canonical_text
from citescope.agents.extractive.scoring import MAX_SENTENCE_CHARS
from citescope.tools.base import EvidenceHit

if TYPE_CHECKING:
    from citescope.agents.conflicts import Conflict, ConflictValue


_UNDECIDED = "资料无法判断以哪一说法为准，建议转人工客服确认"  # closes a disclosure no source outranks


def disclose(conflict: Conflict, by_id: dict[str, EvidenceHit], english: bool) -> str:
    """One sentence stating the conflicting values, each cited: official before user reports,
    else newest first, or nearest the asked time first (the detector's order)."""
    values, seen = [], set()
    for value in conflict.values:
        if value.chunk_id in by_id and value.chunk_id not in seen:
            seen.add(value.chunk_id)
            values.append(value)
    if len(values) < 2:
        return ""
    statements = [(v, by_id[v.chunk_id], _statement(v, by_id[v.chunk_id])) for v in values[:3]]
    parts = []
    if len({v.authority for v, _, _ in statements}) > 1:
        statements.sort(key=lambda s: s[0].authority != "official")
        for value, hit, text in statements:
            if value.authority == "official":
                source = quotable(hit.source) or ("product page" if english else "详情页")
                parts.append(
                    f"the official {source} says: {text}【{hit.chunk_id}】"
                    if english
                    else f"官方{source}显示：{text}【{hit.chunk_id}】"
                )
            elif english:
                kind = "review" if hit.doc_type == "review" else "post"
                parts.append(f"however a user {kind} says: {text}【{hit.chunk_id}】")
            else:
                kind = "评价" if hit.doc_type == "review" else "分享"
                parts.append(f"但有用户{kind}称：{text}【{hit.chunk_id}】")
        if english:
            sentence = "; ".join(parts)
            return sentence[0].upper() + sentence[1:] + "."
        return "；".join(parts) + "。"
    dates = set()
    for index, (value, hit, text) in enumerate(statements):
        date = value.updated_at or hit.updated_at
        dates.add(date)
        title = quotable(hit.title)
        if english:
            label = f"“{title}”" if title else ("one source" if index == 0 else "another source")
            parts.append(label + (f" ({date})" if date else "") + f" says: {text}【{hit.chunk_id}】")
        elif title:
            parts.append((f"{date} 的" if date else "") + f"《{title}》为：{text}【{hit.chunk_id}】")
        else:  # untitled passages (search snippets): told apart by order, not by a name they lack
            parts.append(
                ("有" if index == 0 else "另有") + (f" {date} 的" if date else "") + f"来源称：{text}【{hit.chunk_id}】"
            )
    # Sources of one authority and no dates give no ground to prefer one: say so, never pick.
    undecided = not conflict.as_of and len(dates) == 1
    if english:
        prevails = "the one nearest the time asked about" if conflict.as_of else "the newest one"
        close = (
            "they do not show which holds, please check with customer service" if undecided else f"{prevails} prevails"
        )
        return "Sources disagree: " + "; ".join(parts) + f"; {close}."
    kind = "政策" if all(h.doc_type == "policy" for _, h, _ in statements) else "信息"
    prevails = f"以最接近所问时间的{kind}为准" if conflict.as_of else f"以最新{kind}为准"
    return "不同来源说法不一致：" + "；".join(parts) + f"，{_UNDECIDED if undecided else prevails}。"


def compact(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _statement(value: ConflictValue, hit: EvidenceHit) -> str:
    """The sentence that carries a conflicting value: as the evidence writes it when that is the
    detector's whole sentence and the value reads the same there (在队两年多, not the canonical
    在队2年多), else the detector's; failing both, the value itself."""
    sentence = quotable(value.sentence or "")
    wanted = compact(sentence)
    for candidate in split_sentences(hit.text):
        raw = quotable(candidate.text)
        if wanted and wanted == compact(canonical_text(raw)) and compact(value.value) in compact(raw):
            sentence = raw
            break
    sentence = after_heading(sentence, hit.section)
    if sentence and compact(value.value) in compact(sentence) and len(sentence) <= MAX_SENTENCE_CHARS:
        return sentence
    return quotable(value.value)
