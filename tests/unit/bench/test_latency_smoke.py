"""Smoke test of hack/bench_latency.py (issue 12, P4) in --quick mode.

Not a timing assertion (speed is measured by `make bench`, never by tests): it checks that
both parts run end to end against real subprocesses, that every failure got its replacement
and the percentiles are printed in order, that the wide job's pods were all seen, and that
nothing is left running.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.processes import run_script
from tests.unit.bench.test_bench_smoke import _row

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "hack" / "bench_latency.py"


@pytest.fixture(scope="module")
def quick_output() -> str:
    return run_script([str(SCRIPT), "--quick"], timeout=170)


@pytest.mark.slow  # runs the benchmark script in real subprocesses
def test_failure_latency_percentiles_are_printed_and_ordered(quick_output: str) -> None:
    assert "Failure -> replacement pod created: 6 two-pod ExitCode jobs" in quick_output
    assert _row(quick_output, "failures") == [12]
    p50, p95, p99, top = (
        _row(quick_output, label)[-1] for label in ("p50 (ms)", "p95 (ms)", "p99 (ms)", "max")
    )
    assert 0 < p50 <= p95 <= p99 <= top
    # Every failure costs at least its delete and the replacement's create.
    assert _row(quick_output, "controller requests per failure")[0] >= 2
    assert _row(quick_output, "controller CPU ms per failure")[0] > 0
    assert re.search(r"requests per failure by verb: .*DELETE 1\.00", quick_output), quick_output
    assert re.search(r"load average [0-9.]+ -> [0-9.]+", quick_output)


@pytest.mark.slow  # runs the benchmark script in real subprocesses
def test_wide_job_reports_every_pod_created(quick_output: str) -> None:
    assert "A 40-worker job: POST -> all 41 pods seen ADDED" in quick_output
    assert "10 ms added to every controller request" in quick_output
    first = _row(quick_output, "first pod")[0]
    last = _row(quick_output, "all pods")[0]
    assert 0 < first <= last, quick_output
    # Other verbs may come first: "GET 2, POST 44, PATCH 1" when the controller had to GET.
    posts = re.search(r"controller requests: (?:[A-Z]+ [0-9]+, )*POST ([0-9]+)", quick_output)
    # The pods and the Service at least (Events may still be queued).
    assert posts and int(posts.group(1)) >= 41 + 1, quick_output


@pytest.mark.slow  # runs the benchmark script in real subprocesses
def test_idle_controller_is_measured_and_sends_nothing(quick_output: str) -> None:
    """P5's measurement: with every job Running and the controller settled, it sends no
    request but watches and reconciles nothing (its CPU share is the bench's to report)."""
    found = re.search(
        r"Idle with the 6 jobs Running, before the failures: controller CPU ([0-9.]+)% of a core "
        r"over ([0-9.]+) s, ([0-9]+) requests besides watches \(([0-9]+) watch restarts\), "
        r"([0-9]+) reconciles",
        quick_output,
    )
    assert found, quick_output
    cpu, seconds, requests, _, reconciles = (float(v) for v in found.groups())
    assert seconds >= 1.0 and cpu >= 0
    assert requests == 0 and reconciles == 0, found.group(0)
