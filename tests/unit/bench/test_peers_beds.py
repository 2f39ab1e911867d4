"""hack/peers/beds.py: which processes are the bed's, and what they cost; bench_peers' pod
check on a real API server's defaults."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hack.bench_peers import with_server_defaults
from hack.peers.beds import Bed, bed, descendants, parents


@pytest.mark.parametrize(
    ("roots", "parent_of", "want"),
    [
        ((1,), {}, [1]),
        ((10,), {11: 10, 12: 10, 13: 11, 20: 1}, [10, 11, 12, 13]),
        ((10, 20), {11: 10, 21: 20, 22: 21, 30: 1}, [10, 11, 20, 21, 22]),
        ((10,), {10: 1, 11: 10, 1: 0}, [10, 11]),  # an ancestor of the root is not the bed's
    ],
)
def test_descendants(roots: tuple[int, ...], parent_of: dict[int, int], want: list[int]) -> None:
    assert sorted(descendants(roots, parent_of)) == want


def test_parents_knows_this_process() -> None:
    assert parents()[os.getpid()] == os.getppid()


def test_the_bed_cpu_counts_a_grandchild() -> None:
    """A busy grandchild (the shape of etcd and kube-apiserver under the real cluster's
    Python process) is charged to the bed."""
    spin = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass\n"
    grand = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {spin!r}])"
    child = subprocess.Popen([sys.executable, "-c", grand])
    try:
        deadline = time.monotonic() + 20
        seen = 0.0
        while child.poll() is None and time.monotonic() < deadline:
            tree = Bed("http://unused", (child.pid,))
            if len(tree.pids()) == 2:
                seen = max(seen, tree.cpu())
            time.sleep(0.05)
    finally:
        child.wait(20)
    assert seen >= 0.3


def test_an_unknown_backend_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="local, real"), bed("kind", tmp_path):
        pass


def test_server_defaults_give_a_field_ref_its_api_version() -> None:
    env = [
        {"name": "A", "value": "1"},
        {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "C", "valueFrom": {"fieldRef": {"apiVersion": "v2", "fieldPath": "x"}}},
    ]
    assert with_server_defaults(env) == [
        {"name": "A", "value": "1"},
        {
            "name": "B",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
        },
        {"name": "C", "valueFrom": {"fieldRef": {"apiVersion": "v2", "fieldPath": "x"}}},
    ]
    assert env[1] == {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    assert with_server_defaults(None) is None
