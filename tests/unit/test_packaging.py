"""The package, its console script and its manifests hang together."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml


def test_module_entry_point_prints_help() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ascendjob_controller", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "local-cluster" in out.stdout


def test_crds_name_their_kinds(repo_root: Path) -> None:
    crds = {
        doc["metadata"]["name"]: doc
        for path in sorted((repo_root / "manifests" / "crd").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
    }
    acjob = crds["ascendjobs.mindxdl.gitee.com"]
    assert acjob["spec"]["names"]["shortNames"] == ["acjob"]
    columns = [
        c["name"]
        for c in acjob["spec"]["versions"][0]["additionalPrinterColumns"]
        if not c.get("priority")  # the -o wide ones: tests/unit/ship/test_printer_columns.py
    ]
    assert columns == ["Status", "Age", "Restarts"]
    assert "podgroups.scheduling.volcano.sh" in crds
