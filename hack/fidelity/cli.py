"""`python -m hack.fidelity [--case SUBSTRING] [--threshold 95] [--local-kubeconfig F]
[--real-kubeconfig F]`: start both servers (or use running ones), run the corpus, report.

Exits 1 when the share of identical steps is below the threshold, 2 when a server cannot
be started.
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

from hack.fidelity.client import Server
from hack.fidelity.corpus import all_cases
from hack.fidelity.report import report
from hack.fidelity.servers import ServerProcess, local_server, real_server
from hack.fidelity.suite import Pair, run_all


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hack/fidelity/run", description=__doc__)
    parser.add_argument("--case", action="append", default=[], help="run cases whose name has this")
    parser.add_argument("--threshold", type=float, default=95.0, help="percent identical needed")
    parser.add_argument("--workers", type=int, default=4, help="cases run at once")
    parser.add_argument("--local-kubeconfig", help="use this running local cluster")
    parser.add_argument("--real-kubeconfig", help="use this running real cluster")
    parser.add_argument("--verbose", "-v", action="store_true", help="print every step")
    return parser.parse_args(argv)


def _servers(args: argparse.Namespace, workdir: Path) -> tuple[Pair, list[ServerProcess]]:
    started: list[ServerProcess] = []
    paths = {}
    for name, given, make in (
        ("local", args.local_kubeconfig, local_server),
        ("real", args.real_kubeconfig, real_server),
    ):
        if given:
            paths[name] = Path(given)
            continue
        proc = make(workdir)
        started.append(proc)
        proc.start(timeout=240.0)
        paths[name] = proc.kubeconfig
    return Pair(Server("local", paths["local"]), Server("real", paths["real"])), started


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    cases = [c for c in all_cases() if not args.case or any(s in c.name for s in args.case)]
    workdir = Path(tempfile.mkdtemp(prefix="fidelity-"))
    started: list[ServerProcess] = []
    pair: Pair | None = None
    try:
        try:
            pair, started = _servers(args, workdir)
        except RuntimeError as err:
            print(f"fidelity: {err}", file=sys.stderr)
            return 2
        began = time.monotonic()
        outcomes = run_all(pair, cases, secrets.token_hex(2), args.workers)
        share = report(cases, outcomes, args.verbose, time.monotonic() - began)
    finally:
        for proc in reversed(started):
            proc.stop()
        if pair is not None:
            pair.local.close()
            pair.real.close()
        shutil.rmtree(workdir, ignore_errors=True)  # the servers' kubeconfigs
    return 0 if share >= args.threshold else 1
