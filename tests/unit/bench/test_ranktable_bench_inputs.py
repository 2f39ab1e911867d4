"""The rank-table benchmark measures completed tables, not a valid-looking "initializing".

Its jobs once requested NPUs without the equal limit that validation (and kube-apiserver)
demand, and every variant quietly measured the initializing short cut. This checks that each
variant is a valid job whose table is what its name says, at the smallest size.
"""

from __future__ import annotations

import importlib.util
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
