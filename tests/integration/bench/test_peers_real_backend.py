"""`hack/bench_peers.py --backend real`: the peers comparison on a real kube-apiserver.

Run by `make test-real` (the binaries come from `make real-cluster-bin`). Like the local
smoke test, it checks the figures exist and the contenders were correct, never how fast they
were: each contender ran a few jobs end to end on its own real control plane, through the TLS
bridge and its counting proxy, passed the correctness check (their pods compared with what
the job needs, after kube-apiserver's defaults), and nothing is left running.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.processes import run_script
from tests.unit.bench.test_bench_smoke import NUMBER
from tests.unit.bench.test_bench_smoke import _row as _cells

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "hack" / "bench_peers.py"
CONTENDERS = ("ours", "perfect")

pytestmark = pytest.mark.real_only("starts its own real control planes, built for this lane")


@pytest.fixture(scope="module")
def real_output() -> str:
    argv = [str(SCRIPT), "--quick", "--backend", "real", "--only", ",".join(CONTENDERS)]
    return run_script(argv, timeout=600)


def test_a_row_per_contender_on_a_real_api_server(real_output: str) -> None:
    assert "on a fresh real kube-apiserver" in real_output
    for name in CONTENDERS:
        jobs_per_s, seconds, _, cpu_ms, requests, events, rss, bed_ms, _ = _cells(
            real_output, f"{name} "
        )
        assert all(v > 0 for v in (jobs_per_s, seconds, cpu_ms, requests, rss, bed_ms)), name
        assert events == (3 if name == "ours" else 0), name
    assert re.search(rf"ours / perfect \(same run\): jobs/s x{NUMBER}", real_output)


def test_both_contenders_passed_the_check_on_the_real_server(real_output: str) -> None:
    for name in CONTENDERS:
        assert re.search(rf"^\s+{name}: ok \(0 creates", real_output, re.MULTILINE), real_output
