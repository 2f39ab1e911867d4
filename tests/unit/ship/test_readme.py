"""The README documents what the code does: commands first, every flag, every metric."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ascendjob_controller import config as cfg
from ascendjob_controller import metrics


@pytest.fixture(scope="module")
def readme(repo_root: Path) -> str:
    return (repo_root / "README.md").read_text()


def test_first_two_commands_are_make_run_and_make_test(readme: str) -> None:
    commands = re.findall(r"^(make \w+)", readme, flags=re.MULTILINE)
    assert commands[:2] == ["make run", "make test"]


def test_flags_table_has_every_flag_and_env_twin(readme: str) -> None:
    rows = [line for line in readme.splitlines() if line.startswith("| `--")]
    for setting in cfg.SETTINGS:
        [row] = [r for r in rows if re.match(rf"\| `{setting.flag}[ `\[]", r)]
        assert f"`{setting.env}`" in row


def test_metrics_table_has_every_metric(readme: str) -> None:
    documented = set(re.findall(r"^\| `([a-z_]+)`", readme, flags=re.MULTILINE))
    for family in metrics.REGISTRY.collect():
        name = family.name + ("_total" if family.type == "counter" else "")
        if name.startswith(("process_", "python_")):
            continue
        assert name in documented, name


def test_links_to_the_local_cluster_docs(readme: str) -> None:
    assert "(docs/localcluster.md)" in readme
