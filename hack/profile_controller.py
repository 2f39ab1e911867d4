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

`summary` reads py-spy's raw format (one collapsed stack per line, `frame;frame;... count`)
and prints the samples by source file of the leaf frame (self time), and the functions with
the most inclusive samples (each counted once per stack, so recursion does not inflate it).
"""

from __future__ import annotations

import argparse
import contextlib
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
            with contextlib.suppress(OSError):
                raw = (Path("/proc") / str(child) / "cmdline").read_bytes()
                found[child] = raw.replace(b"\0", b" ").decode(errors="replace")
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
    summary = sub.add_parser("summary", help="where the samples of raw profiles went")
    summary.add_argument("profiles", type=Path, nargs="+", help="py-spy --format raw files")
    summary.add_argument("--process", help="regex on the process frame (--subprocesses)")
    summary.add_argument("--top", type=int, default=25, help="rows per table")
    args = parser.parse_args(argv)
    if args.verb == "record":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        return record(command, args.out, args.match, args.rate)
    lines = [line for p in args.profiles for line in p.read_text(errors="replace").splitlines()]
    print(summarise(stacks(lines, args.process), args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
