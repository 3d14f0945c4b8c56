"""A reader head's run in two sessions on a tiny model, as the training tests check it: two steps
without an export, then resumed to a third step that exports (2 layers of the small bundled file)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from citescope.knowledge.e5_model_file import bundled_model_path


def two_sessions(train: Callable[..., dict[str, Any]], tmp_path: Path) -> dict[str, Any]:
    """train(**settings) -> the last log record; data in tmp_path/data, the run in tmp_path/run.
    Returns the resumed session's record after checking the first one's."""
    settings: dict[str, Any] = dict(
        data_dir=tmp_path / "data",
        out_dir=tmp_path / "run",
        layers=2,
        batch_size=4,
        max_tokens=48,
        checkpoint_every=2,
        valid_examples=8,
        export_model=False,
        model_path=bundled_model_path("enpt"),  # a 47k-piece table: loads 5x quicker
    )
    first = train(**settings, max_steps=2)
    assert first["step"] == 2 and 0.0 <= first["valid"]["accuracy"] <= 1.0
    return train(**{**settings, "export_model": True}, max_steps=3, resume=True)
