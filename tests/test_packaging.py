"""A non-editable install puts one name into site-packages, `citescope`, and works from there.

Builds a wheel from a copy of the source tree (as `pip install .` would), installs it into a
fresh virtual environment, and answers a demo question with the installed package alone. The
fresh environment borrows this one's dependencies through PYTHONPATH, which does not run .pth
files, so this checkout's editable install cannot stand in for the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "build", "var", ".kb", "__pycache__", "*.egg-info", ".pytest_cache", ".hypothesis", "tests", "docs"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(REPO, source, ignore=NOT_SOURCE)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(work / "dist"), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (found,) = (work / "dist").glob("citescope-*.whl")
    return found


def test_the_wheel_holds_one_top_level_package_with_its_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"citescope", "-".join(wheel.name.split("-")[:2]) + ".dist-info"}
    for needed in (
        "citescope/__init__.py",
        "citescope/run.py",
        "citescope/agents/planner.py",
        "citescope/workflows/evaluation/__init__.py",
        "citescope/prompts/answerer.md",
        "citescope/tools/skills.yaml",
        "citescope/agents/arms.yaml",
        "citescope/workflows/pipeline.yaml",
        "citescope/knowledge/demo/faq.jsonl",
        "citescope/knowledge/demo/skus.csv",
    ):
        assert needed in names, needed
    assert not [name for name in names if name.startswith("citescope/tests/")]


@pytest.mark.slow
def test_an_installed_citescope_answers_from_site_packages(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    before = {path.name for path in site.iterdir()}
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    dist_info = "-".join(wheel.name.split("-")[:2]) + ".dist-info"
    assert {path.name for path in site.iterdir()} - before == {"citescope", dist_info}

    # Dependencies from this environment; run from tmp_path so no checkout is on the path.
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}

    def installed(*command: str, timeout: int) -> str:
        done = subprocess.run(
            command, env=env, cwd=tmp_path, check=True, capture_output=True, text=True, timeout=timeout
        )
        return done.stdout

    where = installed(str(python), "-c", "import citescope.workflows.cli as c; print(c.__file__)", timeout=120)
    assert Path(where.strip()).is_relative_to(site)

    script = str(env_dir / "bin" / "citescope")
    demo, kb = site / "citescope" / "knowledge" / "demo", tmp_path / "kb"
    installed(script, "ingest", str(demo), "--kb", str(kb), timeout=600)
    asked = installed(script, "ask", "退货多久到账？", "--kb", str(kb), "--json", timeout=300)
    result = json.loads(asked)
    assert not result["refused"]
    assert "【" in result["answer"] and result["citations"]
