"""Smoke test of `make bench`: each benchmark runs in --quick mode and prints its figures.

Not a timing assertion (the project measures speed only in benchmarks): it checks that every
part runs end to end against real subprocesses, that the numbers it prints are there and sane
(jobs all Succeeded, memory grew once pods were cached, per-pod figures at both sizes), and
that nothing is left running.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.processes import run_script

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "hack" / "bench_controller.py"
NUMBER = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
# The quick run took over 150 s at load average 10; the budget is for a hang, not a speed.
pytestmark = pytest.mark.timeout(480)


def _row(output: str, label: str) -> list[float]:
    """The numeric cells of the table row that starts with `label`."""
    for line in output.splitlines():
        if line.strip().startswith(label):
            rest = line.strip()[len(label) :]
            return [float(n.replace(",", "")) for n in re.findall(NUMBER, rest)]
    raise AssertionError(f"row {label!r} missing from:\n{output}")


@pytest.fixture(scope="module")
def quick_output() -> str:
    return run_script([str(SCRIPT), "--quick"], timeout=420)


@pytest.mark.slow  # runs the benchmark script in real subprocesses
def test_throughput_table_compares_worker_counts(quick_output: str) -> None:
    assert re.search(r"workers=1\s+workers=4", quick_output)
    assert _row(quick_output, "Succeeded / Failed") == [4, 0, 4, 0]
    for label in (
        "jobs/s",
        "pods/s",
        "reconciles per job",
        "API requests per job",
        "controller CPU ms per job",
        "API server CPU ms per job",
    ):
        values = _row(quick_output, label)
        assert len(values) == 2 and all(v > 0 for v in values), (label, values)
    p50 = _row(quick_output, "creation -> Running p50 (s)")
    p95 = _row(quick_output, "creation -> Running p95 (s)")
    assert all(a <= b for a, b in zip(p50, p95, strict=True))
    assert all(v > 0 for v in _row(quick_output, "creation -> Succeeded p95 (s)"))
    ratios = re.findall(
        r"ratio workers=4 / workers=1 \(same run\): jobs/s x" + NUMBER, quick_output
    )
    assert len(ratios) == 2, quick_output  # local latency, then with simulated network latency
    assert "10 ms added to every controller request" in quick_output


@pytest.mark.slow  # runs the benchmark script in real subprocesses
def test_memory_table_reports_rss_and_per_pod_cost(quick_output: str) -> None:
    bare = _row(quick_output, "python -c pass")[0]
    kube = _row(quick_output, "python -c 'import kubernetes'")[0]
    idle = _row(quick_output, "controller, idle")[0]
    small = _row(quick_output, "controller, 1,000 Running pods cached")
    large = _row(quick_output, "controller, 2,000 Running pods cached")
    with_jobs = _row(quick_output, "controller, 2,000 Running pods + 100 finished jobs cached")
    assert 0 < bare < kube <= idle < small[0] and idle < large[0] and idle < with_jobs[0]
    for row in (small, large, with_jobs):
        assert row[0] <= row[1]  # RSS, then peak RSS
    for pods in ("1,000", "2,000"):
        per_pod, grown_mb, peak_per_pod = _row(
            quick_output, f"KiB per cached Running pod at {pods} pods:"
        )
        assert per_pod > 0 and grown_mb > 0 and peak_per_pod >= per_pod
    per_job = _row(quick_output, "KiB per cached finished AscendJob:")
    assert per_job[1:] == [100, 2000]  # jobs, over the 2,000-pod controller
    # Cached objects generate no work: the loaded controllers only read.
    assert len(re.findall(r"API requests \(GET [0-9]+\);", quick_output)) == 3, quick_output


@pytest.mark.slow  # runs the benchmark script in real subprocesses
def test_informer_sync_is_reported(quick_output: str) -> None:
    assert "LIST + sync of 2000 Running pods" in quick_output
    for label in ("Informer start -> has_synced", "plain paged LIST + json.loads"):
        best, median, rate = _row(quick_output, label)
        assert 0 <= best <= median and rate > 0


def test_percentile_is_nearest_rank() -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import bench_controller
    finally:
        sys.path.remove(str(SCRIPT.parent))
    values = [float(v) for v in range(1, 101)]
    assert bench_controller.percentile(values, 50) == 50.0
    assert bench_controller.percentile(values, 95) == 95.0
    assert bench_controller.percentile([3.0], 95) == 3.0
    assert bench_controller.percentile([], 50) != bench_controller.percentile([], 50)  # NaN
