"""A shop's own words: its name, membership tiers, delivery zones and programme names.

Generic code and data know nothing of any one shop; what only one shop says lives in a small file
its source folder ships, `shop.yaml` (knowledge/demo/shop.yaml), found at ingest like lexicon.json
and stored with the built KB (KnowledgeBase.shop). A KB without one gets the neutral profile: no
name (the prompts say 本店), no tiers, no zones. Words are read in their matching form (simplified,
knowledge/chinese_script.py), as questions are: a traditional shop may write 臺北 or 黃金會員.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from citescope.knowledge.chinese_script import matching_form

SHOP_PROFILE_FILENAME = "shop.yaml"
NEUTRAL_SHOP_NAME = "本店"  # what the prompts call a shop whose profile names none


class ShopProfileError(ValueError):
    """A shop profile that cannot be used; the message names the file and the field."""


def _words(values: list[str], field: str) -> list[str]:
    cleaned = [value.strip() for value in values]
    if any(not value for value in cleaned):
        raise ValueError(f"{field}: an empty word")
    return cleaned


class ShopProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # the shop's name as the prompts give it ("云栈优选"); None: the prompts say 本店
    name: str | None = None
    # the membership tiers as a shopper types them (金卡, 银卡): a question naming one asks the shop's policy
    membership_tiers: list[str] = Field(default_factory=list)
    # other words only this shop uses for its programmes and services (a points club, a coupon's
    # name): a question naming one asks the shop's policy, as a tier does
    policy_words: list[str] = Field(default_factory=list)
    # delivery zone as the shop's shipping policy names it -> the places it covers (江浙沪: [上海, 江苏, …]):
    # a question about delivery to a place is searched with its zone's name as well
    delivery_zones: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name_is_not_blank(cls, name: str | None) -> str | None:
        if name is not None and not name.strip():
            raise ValueError("an empty name: leave the field out for a shop without one")
        return name.strip() if name is not None else None

    @field_validator("membership_tiers", "policy_words")
    @classmethod
    def _no_empty_word(cls, values: list[str], info) -> list[str]:
        return _words(values, info.field_name)

    @model_validator(mode="after")
    def _each_place_in_one_zone(self) -> ShopProfile:
        zone_of: dict[str, str] = {}
        for zone, places in self.delivery_zones.items():
            if not zone.strip():
                raise ValueError("delivery_zones: an empty zone name")
            for place in _words(places, f"delivery_zones.{zone}"):
                if zone_of.setdefault(place, zone) != zone:
                    raise ValueError(f"delivery_zones: {place} is in both {zone_of[place]} and {zone}")
        return self

    @classmethod
    def load(cls, path: Path) -> ShopProfile:
        """The profile in a shop.yaml; ShopProfileError names the file and the field at fault."""
        try:
            raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ShopProfileError(f"{path}: not a readable shop profile ({exc})") from exc
        if not isinstance(raw, dict):
            raise ShopProfileError(f"{path}: a shop profile is a mapping of fields (name, membership_tiers, …)")
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, error['loc'])) or 'profile'}: {error['msg']}" for error in exc.errors()
            )
            raise ShopProfileError(f"{path}: invalid shop profile: {problems}") from None

    @property
    def prompt_name(self) -> str:
        """What the prompts call the shop: “云栈优选”电商店铺, or 本店 without a name."""
        return f"“{self.name}”电商店铺" if self.name else NEUTRAL_SHOP_NAME

    @cached_property
    def policy_pattern(self) -> re.Pattern | None:
        """The shop's tiers and programme words in a question (matching form), longest first; None
        when it has none."""
        words = {matching_form(w) for w in (*self.membership_tiers, *self.policy_words)}
        if not words:
            return None
        return re.compile("|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w))), re.I)

    @cached_property
    def zone_table(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(place in matching form and lower case, (its zone's name,)): the documents' word for a place
        a question about delivery names (上海 -> 江浙沪), as knowledge/crosslingual.py reads a glossary."""
        return tuple(
            (matching_form(place).lower(), (matching_form(zone),))
            for zone, places in self.delivery_zones.items()
            for place in places
        )


def find_shop_profile(paths: Iterable[Path | str]) -> ShopProfile | None:
    """The profile of the shop whose sources are being ingested: the shop.yaml among `paths` or in
    their folders (hidden ones left out, as the loader does); None without one. Two different
    profiles are refused (a KB holds one shop's knowledge), and so is a profile that does not read."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_file() and path.name == SHOP_PROFILE_FILENAME:
            files.append(path)
        elif path.is_dir():
            for folder, subfolders, names in os.walk(path):
                subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
                if SHOP_PROFILE_FILENAME in names:
                    files.append(Path(folder) / SHOP_PROFILE_FILENAME)
    profiles = [(file, ShopProfile.load(file)) for file in files]
    for file, profile in profiles[1:]:
        if profile != profiles[0][1]:
            raise ShopProfileError(
                f"{file}: a second, different shop profile beside {profiles[0][0]}; a KB holds one shop "
                "(ingest each shop into its own KB)"
            )
    return profiles[0][1] if profiles else None
