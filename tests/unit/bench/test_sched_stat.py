"""hack/bench_controller.sched_stat: what the scheduler counted for a process's threads (time
on a CPU, time runnable but waiting for one, times put on one). bench_peers reports the bed's,
to tell a bed short of work from one waiting to be put on a CPU."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hack.bench_controller import SchedStat, sched_stat

SPIN = "import time\nend = time.monotonic() + 5\nwhile time.monotonic() < end: pass\n"


def _task(proc: Path, pid: int, tid: int, schedstat: str | None) -> None:
    task = proc / str(pid) / "task" / str(tid)
    task.mkdir(parents=True)
    if schedstat is not None:
        (task / "schedstat").write_text(schedstat)


def test_every_threads_counts_are_summed(tmp_path: Path) -> None:
    _task(tmp_path, 41, 41, "9000000000 2000000000 120\n")
    _task(tmp_path, 41, 43, "100 500000000 5\n")
    _task(tmp_path, 41, 44, None)  # exited between the listing and the read
    got = sched_stat(41, tmp_path)
    assert got.running == pytest.approx(9.0000001)
    assert got.waiting == pytest.approx(2.5)
    assert got.slices == 125
    assert got.mean_wait == pytest.approx(0.02)


def test_a_process_that_is_gone_has_empty_counts(tmp_path: Path) -> None:
    assert sched_stat(99, tmp_path) == SchedStat()
    assert SchedStat().mean_wait == 0.0


def test_counts_add_and_subtract_field_by_field() -> None:
    a, b = SchedStat(3.0, 2.0, 10), SchedStat(1.0, 0.5, 4)
    assert a + b == SchedStat(4.0, 2.5, 14)
    assert a - b == SchedStat(2.0, 1.5, 6)
    assert sum((a, b), SchedStat()) == a + b


@pytest.mark.skipif(
    not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/schedstat").exists(),
    reason="this kernel keeps no schedstat",
)
def test_two_spinners_on_one_cpu_wait_for_each_other_and_a_sleeper_does_not() -> None:
    cpu = min(os.sched_getaffinity(0))
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(2)]
    sleeper = subprocess.Popen(["sleep", "5"])
    try:
        for proc in spinners:
            os.sched_setaffinity(proc.pid, {cpu})
        before = [sched_stat(p.pid) for p in (*spinners, sleeper)]
        time.sleep(1.0)
        after = [sched_stat(p.pid) for p in (*spinners, sleeper)]
    finally:
        for proc in (*spinners, sleeper):
            proc.kill()
            proc.wait()
    spent = [b - a for a, b in zip(before, after, strict=True)]
    # Sharing one CPU, the spinners run about half the second each and wait the other half.
    assert spent[0].waiting + spent[1].waiting > 0.5, spent
    assert spent[0].running + spent[1].running < 1.2, spent
    assert spent[2].waiting < 0.05 and spent[2].running < 0.05, spent
