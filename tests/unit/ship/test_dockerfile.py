"""The Dockerfile is multi-stage, non-root, wheel-only; its build context builds a wheel."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

CONTEXT = ["pyproject.toml", "setup.cfg", "README.md", "ascendjob_controller"]


def instructions(repo_root: Path) -> list[tuple[str, str]]:
    text = (repo_root / "Dockerfile").read_text().replace("\\\n", " ")
    parsed = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            parsed.append((keyword.upper(), rest.strip()))
    return parsed


def test_two_stages_on_python_311_slim(repo_root: Path) -> None:
    steps = instructions(repo_root)
    froms = [rest for keyword, rest in steps if keyword == "FROM"]
    assert froms == ["${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE}"]
    assert ("ARG", "PYTHON_IMAGE=python:3.11-slim") in steps


def test_final_stage_installs_only_wheels_and_runs_non_root(repo_root: Path) -> None:
    steps = instructions(repo_root)
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    final = steps[last_from:]
    assert not [rest for keyword, rest in final if keyword in ("COPY", "ADD")]
    [install] = [rest for keyword, rest in final if keyword == "RUN"]
    assert "--no-index --find-links=/wheels ascendjob-controller" in install
    assert "from=build" in install
    [user] = [rest for keyword, rest in final if keyword == "USER"]
    assert re.fullmatch(r"65532(:65532)?", user)
    [entrypoint] = [rest for keyword, rest in final if keyword == "ENTRYPOINT"]
    assert json.loads(entrypoint) == ["ascendjob-controller", "run"]
    labels = " ".join(rest for keyword, rest in final if keyword == "LABEL")
    for key in ("title", "description", "version", "revision", "created", "licenses"):
        assert f"org.opencontainers.image.{key}=" in labels


def test_dockerignore_allows_only_the_package(repo_root: Path) -> None:
    lines = [
        line.strip()
        for line in (repo_root / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*"
    allowed = sorted(line[1:].rstrip("/") for line in lines if line.startswith("!"))
    assert allowed == sorted(CONTEXT)
    copied = [
        source
        for keyword, rest in instructions(repo_root)
        if keyword == "COPY" and "--from" not in rest
        for source in rest.split()[:-1]
    ]
    assert sorted(copied) == sorted(CONTEXT)


@pytest.mark.slow
def test_build_context_builds_a_wheel_with_the_console_script(
    repo_root: Path, tmp_path: Path
) -> None:
    context = tmp_path / "context"
    context.mkdir()
    for name in CONTEXT:
        source = repo_root / name
        if source.is_dir():
            shutil.copytree(source, context / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, context / name)
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps",
         "--wheel-dir", str(tmp_path / "wheels"), str(context)],
        capture_output=True, text=True, timeout=170,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    [wheel] = list((tmp_path / "wheels").glob("ascendjob_controller-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert (
            "ascendjob-controller = ascendjob_controller.cli:main"
            in archive.read(entry_points).decode()
        )
    for module in ("cli.py", "config.py", "health.py", "logging.py", "__main__.py"):
        assert f"ascendjob_controller/{module}" in names
    assert not [n for n in names if n.startswith("tests/")]
