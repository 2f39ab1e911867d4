"""Smoke test of `make chaos` (hack/chaos, issue 10): the --quick run passes end to end.

A couple of dozen jobs of every kind on two `--leader-elect` replicas, under the whole fault
plan (500 and 429 at 10%, watch drops, forced 410s, connection resets) and two leader
SIGKILLs; the partition is left to the full run (it alone lasts about a watch timeout). Not a
timing assertion: it checks that every job ended exactly as planned (state, reason,
restartCount, pods created), that both kills were followed by a new lease holder, and that
nothing is left running. The full run's figures are in docs/chaos.md.

On the real backend (ASCENDJOB_TEST_BACKEND=real) the same --quick run goes to kube-apiserver
with the replicas behind the fault proxy (`--backend real`, about 75 s); the local-cluster
cases are skipped there, and the real case is skipped on local.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hack.chaos.jobs import KINDS
from tests.processes import children_of

REPO = Path(__file__).resolve().parents[3]

pytestmark = [pytest.mark.slow]
LOCAL = pytest.mark.local_only("the local backend's run: faults from the embedded server's hooks")
REAL = pytest.mark.real_only("the real backend's run: a real kube-apiserver behind the proxy")


def quick(tmp_path_factory: pytest.TempPathFactory, backend: str) -> tuple[str, dict[str, Any]]:
    """(the text report, the JSON figures) of one `python -m hack.chaos --quick`."""
    out = tmp_path_factory.mktemp("chaos") / "chaos.json"
    before = children_of(os.getpid())
    proc = subprocess.run(
        [sys.executable, "-m", "hack.chaos", "--quick", "--backend", backend, "--json", str(out)],
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert children_of(os.getpid()) <= before, "the chaos run left processes running"
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return proc.stdout, json.loads(out.read_text())


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    return quick(tmp_path_factory, "local")


@pytest.fixture(scope="module")
def real_quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    return quick(tmp_path_factory, "real")


@LOCAL
@pytest.mark.timeout(300)
def test_quick_chaos_passes(quick_run: tuple[str, dict[str, Any]]) -> None:
    text, figures = quick_run
    assert text.rstrip().endswith("chaos: PASSED"), text[-3000:]
    assert figures["passed"] and figures["problems"] == []


@LOCAL
@pytest.mark.timeout(300)
def test_every_job_ended_exactly_as_planned(quick_run: tuple[str, dict[str, Any]]) -> None:
    _, figures = quick_run
    assert figures["outcome_exact"] == figures["pods_exact"] == figures["jobs"] > 0
    assert figures["stuck"] == []
    for kind in KINDS:
        assert figures["by_kind"][kind.name] > 0, kind.name
        assert figures["exact_by_kind"][kind.name] == figures["by_kind"][kind.name], kind.name


@LOCAL
@pytest.mark.timeout(300)
def test_faults_fired_and_every_kill_failed_over(quick_run: tuple[str, dict[str, Any]]) -> None:
    _, figures = quick_run
    faults = figures["faults"]
    assert faults["injected"].get("500", 0) > 0 and faults["injected"].get("429", 0) > 0
    assert faults["watch_drops"] > 0 and faults["forced_410"] > 0 and faults["resets"] > 0
    assert figures["kills"] == 2
    assert len(figures["failovers"]) == 2 and all(s > 0 for s in figures["failovers"])


@REAL
@pytest.mark.timeout(500)
def test_quick_chaos_passes_on_real(real_quick_run: tuple[str, dict[str, Any]]) -> None:
    """Every job exact, every fault fired through the proxy, and the monitor saw everything
    (no relist of its direct watches) with nothing lost between proxy and server."""
    text, figures = real_quick_run
    assert text.rstrip().endswith("chaos: PASSED"), text[-3000:]
    assert figures["backend"] == "real" and figures["problems"] == []
    assert figures["outcome_exact"] == figures["pods_exact"] == figures["jobs"] > 0
    faults = figures["faults"]
    assert faults["injected"].get("500", 0) > 0 and faults["injected"].get("429", 0) > 0
    assert faults["watch_drops"] > 0 and faults["forced_410"] > 0 and faults["resets"] > 0
    assert figures["bed"]["monitor_relists"] == 0
    assert figures["bed"]["proxy_upstream_errors"] == 0
    assert len(figures["failovers"]) == 2
