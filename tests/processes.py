"""Running a hack/ script as the smoke tests do: in a subprocess, leaving nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def children_of(pid: int) -> set[int]:
    """Every live descendant of `pid`, from /proc (no psutil needed)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    """Running or stopped: not gone, and not a zombie waiting for its parent."""
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def cmdline(pid: int) -> str:
    """The command line of `pid`, its arguments joined by spaces ("" once it is gone)."""
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def run_script(argv: list[str], timeout: float, what: str = "the benchmark") -> str:
    """stdout of `python <argv>` run from the repository; it must exit 0 and leave no process."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    before = children_of(os.getpid())
    proc = subprocess.run(
        [sys.executable, *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert children_of(os.getpid()) <= before, f"{what} left processes running"
    return proc.stdout
