"""The rank-table benchmark measures completed tables, not a valid-looking "initializing".

Its jobs once requested NPUs without the equal limit that validation (and kube-apiserver)
demand, and every variant quietly measured the initializing short cut. This checks that each
variant is a valid job whose table is what its name says, at the smallest size; that the v2.0
table really is too large for a ConfigMap; and that a quick run prints what docs/ranktable.md
reports (cold and warm p50 / p99, sizes, the load average). No time is asserted.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ascendjob_controller.job.ranktable import rank_table
from ascendjob_controller.job.validation import validate

SCRIPT = Path(__file__).resolve().parents[3] / "hack" / "bench_ranktable.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_ranktable", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_ranktable"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["v1.0-125x8", "init-1000x8"])
def test_each_variant_is_valid_and_its_table_is_what_its_name_says(name: str) -> None:
    bench = _bench()
    variant = bench.build(name)
    assert validate(variant.job) == []
    table = rank_table(variant.job, variant.pods)
    expected = "initializing" if name.startswith("init") else "completed"
    assert table["status"] == expected
    if expected == "completed":
        assert sum(len(s["device"]) for s in table["server_list"]) == 8 * len(variant.pods)


def test_the_v2_0_table_of_a_thousand_pods_is_too_large_for_a_configmap() -> None:
    """The finding docs/ranktable.md reports: 3.6 MB of compact JSON, over the 1 MiB a
    ConfigMap's data may hold, so such a job needs file mode; v1.x tables of 1,000 pods fit."""
    bench = _bench()
    assert "TOO LARGE for a ConfigMap" in bench.describe(bench.build("v2.0-1000x8"))
    assert " fits a ConfigMap" in bench.describe(bench.build("v1.2-1000x8"))


@pytest.mark.slow  # runs the benchmark in real subprocesses (the cold runs)
def test_quick_run_prints_cold_and_warm_percentiles_and_the_size(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = _bench()
    assert bench.main(["--quick", "--only", "v1.0-125x8"]) == 0
    out = capsys.readouterr().out
    number = r"[0-9]+\.[0-9]"
    cells = rf"\s+{number} /\s*{number}"  # p50 / p99
    for path in ("text", "dict"):
        assert re.search(rf"^v1\.0-125x8\s+{path}({cells}){{4}}$", out, re.MULTILINE), out
        assert re.search(rf"v1\.0-125x8 {path}: p99 CPU cold {number} ms, warm {number}", out)
    assert "72,130 bytes  fits a ConfigMap (1 MiB)" in out
    assert re.search(r"^machine: .* load [0-9.]+, [0-9.]+, [0-9.]+", out, re.MULTILINE)
    assert "load after the run:" in out
