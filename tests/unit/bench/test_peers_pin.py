"""`bench_peers --pin-bed` moves every thread of the local cluster, and those it starts later.

`os.sched_setaffinity(pid)` alone moves one thread; the bed's server, kubelet and watch
threads are already running when it is pinned, so `pin` must reach them all.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hack.bench_peers import pin

CHILD = """
import os, sys, threading, time
for _ in range(3):
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print("ready", flush=True)
sys.stdin.readline()  # pinned by now: a thread started from here inherits it
found = []
later = threading.Thread(target=lambda: found.append(os.sched_getaffinity(0)))
later.start(); later.join()
print(sorted(found[0]), flush=True)
"""


def _affinities(pid: int) -> dict[int, set[int]]:
    return {
        int(task.name): os.sched_getaffinity(int(task.name))
        for task in Path(f"/proc/{pid}/task").iterdir()
    }


def test_every_thread_and_every_later_thread_is_moved() -> None:
    target = {min(os.sched_getaffinity(0))}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdin is not None and child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        assert len(_affinities(child.pid)) == 4
        pin([child.pid], target)
        assert all(cpus == target for cpus in _affinities(child.pid).values())
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == str(sorted(target))
    finally:
        child.kill()
        child.wait()
