"""hack/profile_controller's `threads`: CPU by thread from /proc, named by py-spy dump.

The parsing is checked on real text (this process's own /proc entry and a recorded dump),
and the whole subcommand on a real child process whose busy thread must come out on top.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from hack.profile_controller import by_thread_name, thread_names, thread_seconds, thread_table

DUMP = """Process 14329: python -m ascendjob_controller run
Python v3.11.7 (/usr/bin/python3.11)

Thread 14329 (idle): "MainThread"
    <module> (<string>:4)
Thread 14331 (active, gil): "ascendjob-worker-0"
    f (<string>:3)
Thread 0x3801 (idle): "ascendjob-worker-1"
Thread 14333 (idle): "event-recorder"
"""


def test_thread_names_reads_decimal_and_hex_tids() -> None:
    assert thread_names(DUMP) == {
        14329: "MainThread",
        14331: "ascendjob-worker-0",
        0x3801: "ascendjob-worker-1",
        14333: "event-recorder",
    }


def test_thread_seconds_reads_this_threads_own_stat() -> None:
    ticks = os.sysconf("SC_CLK_TCK")
    stat = Path(f"/proc/self/task/{threading.get_native_id()}/stat").read_text()
    before = thread_seconds(stat, ticks)
    spent = sum(i * i for i in range(3_000_000))  # some CPU on this thread
    after = thread_seconds(
        Path(f"/proc/self/task/{threading.get_native_id()}/stat").read_text(), ticks
    )
    assert spent > 0 and after > before >= 0


def test_a_process_name_with_spaces_and_parentheses_is_skipped() -> None:
    stat = "42 (a (b) c) S " + " ".join(["0"] * 10) + " 250 150 " + " ".join(["0"] * 30)
    assert thread_seconds(stat, 100) == 4.0


def test_numbered_siblings_are_one_row_and_unnamed_threads_still_count() -> None:
    names = thread_names(DUMP)
    totals = by_thread_name({14329: 0.5, 14331: 1.0, 0x3801: 2.0, 99: 0.25}, names)
    assert totals == Counter(
        {"ascendjob-worker-*": 3.0, "MainThread": 0.5, "tid 99 (no name)": 0.25}
    )
    table = thread_table(totals, per=500)
    assert table.splitlines()[0] == "3.750 s CPU, 7.50 ms per unit"
    assert table.splitlines()[1].endswith("6.000 ms/unit  ascendjob-worker-*")


@pytest.mark.skipif(not Path(sys.executable).with_name("py-spy").exists(), reason="no py-spy")
def test_the_subcommand_names_the_busy_thread_of_a_child(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(
        "import threading, time\n"
        "def burn():\n"
        "    end = time.monotonic() + 1.5\n"
        "    while time.monotonic() < end:\n"
        "        sum(range(1000))\n"
        "t = threading.Thread(target=burn, name='busy-7'); t.start()\n"
        "time.sleep(0.5); t.join()\n"
    )
    command = [sys.executable, "hack/profile_controller.py", "threads", "--match", "child\\.py"]
    done = subprocess.run(
        [*command, "--", sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("  ")]
    assert rows and rows[0].endswith("busy-*"), done.stdout
