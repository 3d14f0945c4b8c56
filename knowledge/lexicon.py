"""The shop's vocabulary: aliases (surface form -> canonical), synonyms, and domain terms.

Aliases are applied to what is indexed and to queries, never to the text a user sees, so a
citation snippet still shows the source's own words. Both are read in their matching form
(simplified, knowledge/chinese_script.py): a traditional shop's alias 蘋果手機 matches 苹果手机.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, Field

from citescope.knowledge.chinese_script import matching_form


class Lexicon(BaseModel):
    aliases: dict[str, str] = Field(default_factory=dict)
    synonyms: dict[str, list[str]] = Field(default_factory=dict)
    terms: list[str] = Field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> Lexicon:
        try:
            return cls.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))
        except (ValueError, OSError) as exc:
            raise ValueError(f"{path}: not a valid lexicon file ({exc})") from exc

    def merged(self, other: Lexicon) -> Lexicon:
        synonyms = {k: list(v) for k, v in self.synonyms.items()}
        for key, values in other.synonyms.items():
            synonyms[key] = sorted(set(synonyms.get(key, [])) | set(values))
        return Lexicon(
            aliases={**self.aliases, **other.aliases},
            synonyms=synonyms,
            terms=sorted(set(self.terms) | set(other.terms)),
        )

    def fingerprint(self) -> str:
        raw = self.model_dump_json()
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]

    def all_terms(self) -> list[str]:
        """Words the tokenizer must keep whole: terms, canonical names and aliases."""
        return sorted(set(self.terms) | set(self.aliases) | set(self.aliases.values()))

    @cached_property
    def _alias_pattern(self) -> re.Pattern | None:
        if not self.aliases:
            return None
        parts = []
        for alias in sorted(self._alias_lookup, key=len, reverse=True):
            escaped = re.escape(alias)
            # ASCII aliases must not match inside longer ASCII words (AJ1 inside AJ11).
            if alias[:1].isascii() and alias[:1].isalnum():
                escaped = r"(?<![A-Za-z0-9])" + escaped
            if alias[-1:].isascii() and alias[-1:].isalnum():
                escaped = escaped + r"(?![A-Za-z0-9])"
            parts.append(escaped)
        return re.compile("|".join(parts), re.IGNORECASE)

    @cached_property
    def _alias_lookup(self) -> dict[str, str]:
        """Alias (as written and in matching form, lower-cased) -> canonical name in matching form."""
        lookup = {alias.lower(): matching_form(canonical) for alias, canonical in self.aliases.items()}
        for alias, canonical in self.aliases.items():
            lookup.setdefault(matching_form(alias).lower(), matching_form(canonical))
        return lookup

    def canonicalize(self, text: str) -> str:
        """The text's matching form with every alias replaced by its canonical name (longest first)."""
        text = matching_form(text)
        pattern = self._alias_pattern
        if pattern is None:
            return text
        return pattern.sub(lambda m: self._alias_lookup[m.group(0).lower()], text)

    def expansions(self, word: str) -> list[str]:
        """Synonyms of a word, in both directions of the synonym table."""
        found = set(self.synonyms.get(word, []))
        for key, values in self.synonyms.items():
            if word in values:
                found.add(key)
                found.update(values)
        found.discard(word)
        return sorted(found)
