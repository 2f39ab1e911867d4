"""Profile the controller inside any benchmark with py-spy, and summarise where its CPU went.

    .venv/bin/python hack/profile_controller.py record -o /tmp/prof -- \\
        .venv/bin/python hack/bench_peers.py --jobs 300 --only ours
    .venv/bin/python hack/profile_controller.py summary /tmp/prof/controller-*.txt

`record` runs the command, watches its descendants, and attaches `py-spy record --gil` to each
process whose command line matches `--match` (default: the controller, `ascendjob_controller
run` or bench_controller's re-exec with added latency) until it exits; one raw file per
process. `--gil` samples only the thread holding the GIL, so samples approximate the
process's Python CPU time rather than its threads' waiting (py-spy's --subprocesses does not
follow the benchmarks' grandchildren, hence the polling). `py-spy record --pid` needs ptrace.

`threads` runs the command too, and reads each matching process's threads from /proc (their
user + system CPU, as the kernel counts it) and names them with `py-spy dump`: CPU by thread
name when the process exits, `--per N` also in ms per unit (per job: the benchmark's job
count). Nothing samples or pauses the process, so the figures are the run's own; py-spy's
sampling profiles were seen to misplace time (a 35 ms collection shown as 230 ms, a 3 us
`strftime` as a tenth of the Event sender: docs/benchmarks.md, "Twelfth round").

`summary` reads py-spy's raw format (one collapsed stack per line, `frame;frame;... count`)
and prints the samples by source file of the leaf frame (self time), and the functions with
the most inclusive samples (each counted once per stack, so recursion does not inflate it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^():]+)(?::\d+)?\)$")


def stacks(lines: Iterable[str], process: str | None) -> Iterator[tuple[list[str], int]]:
    """(frames, samples) of every stack, only the process whose first frame matches."""
    pattern = re.compile(process) if process else None
    for line in lines:
        body, _, count = line.rstrip("\n").rpartition(" ")
        if not body or not count.isdigit():
            continue
        frames = body.split(";")
        if frames[0].startswith("process "):
            if pattern is not None and not pattern.search(frames[0]):
                continue
            frames = frames[1:]
        elif pattern is not None:
            continue
        if frames:
            yield frames, int(count)


def where(frame: str) -> tuple[str, str]:
    """(function, source file) of one frame; the file shortened to its package path."""
    found = FRAME.match(frame)
    if found is None:
        return frame, "?"
    path = found["file"]
    for marker in ("site-packages/", "ascendjob_controller/", "lib/python3"):
        if marker in path:
            path = path[path.index(marker) :]
            break
    return found["func"], path


def summarise(pairs: Iterable[tuple[list[str], int]], top: int) -> str:
    by_file: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for frames, n in pairs:
        total += n
        by_file[where(frames[-1])[1]] += n
        seen = {f"{func} ({path})" for func, path in map(where, frames)}
        for name in seen:
            inclusive[name] += n
    if not total:
        return "no samples matched"
    out = [f"{total} samples", "", "self samples by source file of the leaf frame:"]
    out += [f"  {100 * n / total:5.1f}%  {name}" for name, n in by_file.most_common(top)]
    out += ["", "inclusive samples by function:"]
    out += [f"  {100 * n / total:5.1f}%  {name}" for name, n in inclusive.most_common(top)]
    return "\n".join(out)


DEFAULT_MATCH = r"ascendjob_controller run|--as-controller-with-rtt"
THREAD_LINE = re.compile(r'^Thread (?P<tid>0x[0-9a-fA-F]+|\d+) \([^)]*\): "(?P<name>[^"]*)"', re.M)
NUMBERED = re.compile(r"-\d+$")


def thread_seconds(stat: str, ticks_per_second: float) -> float:
    """User + system CPU seconds from one /proc/<pid>/task/<tid>/stat line."""
    fields = stat.rsplit(")", 1)[1].split()  # the name, in parentheses, may hold spaces
    return (int(fields[11]) + int(fields[12])) / ticks_per_second


def thread_names(dump: str) -> dict[int, str]:
    """tid -> thread name from `py-spy dump` output (tids in decimal or hex)."""
    return {int(m["tid"], 0): m["name"] for m in THREAD_LINE.finditer(dump)}


def by_thread_name(cpu: dict[int, float], names: dict[int, str]) -> Counter[str]:
    """CPU seconds per thread name; numbered siblings (`worker-0`, `worker-1`) as one row."""
    totals: Counter[str] = Counter()
    for tid, seconds in cpu.items():
        totals[NUMBERED.sub("-*", names.get(tid, f"tid {tid} (no name)"))] += seconds
    return totals


def thread_table(totals: Counter[str], per: float | None) -> str:
    """The whole process's CPU, then each thread name's seconds, share and ms per unit."""
    whole = sum(totals.values())
    out = [f"{whole:.3f} s CPU" + (f", {1000 * whole / per:.2f} ms per unit" if per else "")]
    for name, seconds in totals.most_common():
        per_unit = f"  {1000 * seconds / per:7.3f} ms/unit" if per else ""
        share = 100 * seconds / whole if whole else 0.0
        out.append(f"  {seconds:8.3f} s  {share:5.1f}%{per_unit}  {name}")
    return "\n".join(out)


def _task_seconds(pid: int) -> dict[int, float]:
    """tid -> CPU seconds of every thread of `pid` now; {} once the process is gone."""
    ticks = os.sysconf("SC_CLK_TCK")
    found: dict[int, float] = {}
    with contextlib.suppress(OSError):
        for task in (Path("/proc") / str(pid) / "task").iterdir():
            with contextlib.suppress(OSError, IndexError, ValueError):
                found[int(task.name)] = thread_seconds((task / "stat").read_text(), ticks)
    return found


def threads(command: list[str], match: str, per: float | None) -> int:
    """Run `command`; CPU by thread of every matching descendant, printed as each exits."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    pattern = re.compile(match)
    root = subprocess.Popen(command)
    cpu: dict[int, dict[int, float]] = {}
    names: dict[int, dict[int, str]] = {}
    reported: set[int] = set()

    def report(pid: int) -> None:
        reported.add(pid)
        print(
            f"process {pid}: CPU by thread\n"
            + thread_table(by_thread_name(cpu[pid], names.get(pid, {})), per),
            flush=True,
        )

    try:
        while root.poll() is None:
            candidates = {root.pid: _cmdline(root.pid), **_descendants(root.pid)}
            live = {p for p, c in candidates.items() if pattern.search(c)}
            for pid in live - reported:
                seen = _task_seconds(pid)
                if seen:
                    cpu.setdefault(pid, {}).update(seen)
                if set(seen) - set(names.get(pid, {})):  # a thread not named yet
                    dump = subprocess.run(
                        [spy, "dump", "--pid", str(pid)], capture_output=True, text=True
                    ).stdout
                    names.setdefault(pid, {}).update(thread_names(dump))
            for pid in set(cpu) - live - reported:
                report(pid)  # exited: its last reading stands
            time.sleep(0.2)
    finally:
        if root.poll() is None:
            root.terminate()
    for pid in set(cpu) - reported:
        report(pid)
    return root.wait()


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        raw = (Path("/proc") / str(pid) / "cmdline").read_bytes()
        return raw.replace(b"\0", b" ").decode(errors="replace")
    return ""


def _descendants(pid: int) -> dict[int, str]:
    """pid -> command line of every live descendant of `pid`, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: dict[int, str] = {}
    frontier = {pid}
    while frontier:
        frontier = {c for c, p in parents.items() if p in frontier} - found.keys()
        for child in frontier:
            found[child] = _cmdline(child)
    return found


def record(command: list[str], out: Path, match: str, rate: int) -> int:
    """Run `command`; py-spy every matching descendant into `out`; the command's exit code."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    out.mkdir(parents=True, exist_ok=True)
    pattern = re.compile(match)
    root = subprocess.Popen(command)
    spies: dict[int, subprocess.Popen[bytes]] = {}
    try:
        while root.poll() is None:
            for pid, cmdline in _descendants(root.pid).items():
                if pid in spies or not pattern.search(cmdline) or "py-spy" in cmdline:
                    continue
                args = [spy, "record", "--pid", str(pid), "--gil", "--rate", str(rate)]
                args += ["--format", "raw", "-o", str(out / f"controller-{pid}.txt")]
                spies[pid] = subprocess.Popen(args, stdout=subprocess.DEVNULL)
            time.sleep(0.1)
    finally:
        for spy_proc in spies.values():
            try:
                spy_proc.wait(timeout=30)  # it stops, and writes, when its process exits
            except subprocess.TimeoutExpired:
                spy_proc.send_signal(signal.SIGINT)
                spy_proc.wait(timeout=30)
        if root.poll() is None:
            root.terminate()
    return root.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    rec = sub.add_parser("record", help="run a command, py-spy its controller processes")
    rec.add_argument("-o", "--out", type=Path, required=True, help="directory for the files")
    rec.add_argument("--match", default=DEFAULT_MATCH, help="regex on the command line")
    rec.add_argument("--rate", type=int, default=100, help="samples per second")
    rec.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    thr = sub.add_parser("threads", help="run a command, CPU by thread of its controllers")
    thr.add_argument("--match", default=DEFAULT_MATCH, help="regex on the command line")
    thr.add_argument("--per", type=float, help="also ms per unit: this many (jobs, say)")
    thr.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    summary = sub.add_parser("summary", help="where the samples of raw profiles went")
    summary.add_argument("profiles", type=Path, nargs="+", help="py-spy --format raw files")
    summary.add_argument("--process", help="regex on the process frame (--subprocesses)")
    summary.add_argument("--top", type=int, default=25, help="rows per table")
    args = parser.parse_args(argv)
    if args.verb in ("record", "threads"):
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if args.verb == "threads":
            return threads(command, args.match, args.per)
        return record(command, args.out, args.match, args.rate)
    lines = [line for p in args.profiles for line in p.read_text(errors="replace").splitlines()]
    print(summarise(stacks(lines, args.process), args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
