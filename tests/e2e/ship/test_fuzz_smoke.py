"""Smoke test of `make fuzz` (issue 10, section 3): hack/fuzz in --quick mode passes.

The full run (300+ cases, figures in docs/fuzz.md) is `make fuzz`; here a couple of dozen
cases from a fixed seed go through the whole path: a fresh cluster of the selected backend,
the controller as a subprocess, foreign pods, raw POSTs, the five checks. The seed is fixed so
a failure here is a reproduction: `python -m hack.fuzz --quick --seed 7`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hack.fuzz.mutate import load_samples, make_case
from tests.conftest import BACKEND
from tests.processes import children_of

REPO = Path(__file__).resolve().parents[3]
SEED = 7
CHECKS = ("conditions", "no-pods", "alive", "foreign", "no-crash")


def test_cases_are_reproducible_from_the_seed() -> None:
    """Case i depends on (seed, i) alone: --only and --seed rebuild the exact bytes."""
    samples = load_samples()
    first = [make_case(SEED, i, samples) for i in range(30)]
    again = [make_case(SEED, i, samples) for i in (29, 3, 0)]
    assert [c.body for c in again] == [first[29].body, first[3].body, first[0].body]
    assert make_case(SEED + 1, 3, samples).body != first[3].body
    assert any(c.mutations for c in first)
    assert len({c.name for c in first if c.name.startswith("fz-")}) > 20


@pytest.mark.e2e
@pytest.mark.slow  # a cluster and the controller in real processes, ~15 s (local)
@pytest.mark.timeout(300)
def test_quick_fuzz_run_passes(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    before = children_of(os.getpid())
    argv = [sys.executable, "-m", "hack.fuzz", "--quick", "--seed", str(SEED)]
    argv += ["--backend", BACKEND, "--out", str(tmp_path)]
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=280)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert f"fuzz seed {SEED}" in out
    assert out.rstrip().endswith("RESULT: PASS"), out
    for name in CHECKS:
        assert re.search(rf"^ok\s+{name}\s", out, re.MULTILINE), out
    # The run had subjects for each check: jobs accepted and refused, invalid ones, pods.
    accepted = int(re.search(r"^accepted\s+(\d+)", out, re.MULTILINE).group(1))  # type: ignore[union-attr]
    assert accepted > 0
    assert re.search(r"^\s+rejected\s+\d{3} ", out, re.MULTILINE), out
    assert "Failed(JobValidFailed)" in out
    assert re.search(r"first condition\s+p50 [\d.]+s, p99 [\d.]+s", out), out
    assert (tmp_path / "controller.log").stat().st_size > 0
    assert children_of(os.getpid()) <= before, "the fuzzer left processes running"
