"""A benchmark stopped with SIGTERM stops what it started (docs/benchmarks.md: "stops every
process it started").

Python's default for SIGTERM ends the process without unwinding, so the `with` blocks that
stop the local cluster and the controller never ran, and both kept running as orphans. The
descendants are read while the benchmark runs: once it is gone, an orphan is no longer its
descendant, and only its pid can still be looked for.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.processes import REPO, alive, children_of, cmdline

DEADLINE_SECONDS = 120.0


def _wait_for_children(proc: subprocess.Popen[bytes], needles: list[str]) -> set[int]:
    """The benchmark's descendants once one of each `needles` runs among them."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the benchmark ended before it was stopped"
        found = children_of(proc.pid)
        lines = [cmdline(pid) for pid in found]
        if all(any(needle in line for line in lines) for needle in needles):
            return found
        time.sleep(0.2)
    raise AssertionError(f"never saw {needles} among the benchmark's processes")


@pytest.mark.slow  # runs a benchmark script in real subprocesses
def test_sigterm_stops_the_bed_and_the_controller() -> None:
    proc = subprocess.Popen(
        [sys.executable, "hack/bench_latency.py", "--quick", "--only", "failure"],
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started: set[int] = set()
    try:
        started = _wait_for_children(proc, ["local-cluster", "ascendjob_controller run"])
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=DEADLINE_SECONDS)
        left = {pid: cmdline(pid) for pid in started if alive(pid)}
        assert not left, f"still running after the benchmark stopped: {left}"
        assert code == 128 + signal.SIGTERM  # unwound by SystemExit, not ended by the signal
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in started:  # what a failing run left behind
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
