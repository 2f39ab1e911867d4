"""The command line of the fuzzer: options, the run, the figures, the verdict, the exit status.

Exit status 0 when every check passed, 1 when one failed (the reproductions are written and
named), 2 on a usage error. The seed is printed first, so even a run that dies half-way can
be repeated exactly: `--seed S` rebuilds the same cases, `--only I,J` just those.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from hack.fuzz.checks import all_checks
from hack.fuzz.report import figures, repro_lines, verdict
from hack.fuzz.run import Options, run, write_repros

FULL_COUNT = 300
QUICK = {"count": 24, "rate": 8.0, "settle": 5.0, "foreign": 3}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m hack.fuzz",
        description="POST mutated AscendJobs raw at a fresh cluster running the controller.",
    )
    parser.add_argument("--seed", type=int, help="RNG seed (default: from the clock; printed)")
    parser.add_argument("--count", type=int, help=f"cases (default {FULL_COUNT})")
    parser.add_argument("--quick", action="store_true", help="a small run for the smoke test")
    parser.add_argument("--backend", choices=("local", "real"), default="local")
    parser.add_argument("--rate", type=float, help="POSTs per second (default 5)")
    parser.add_argument("--settle", type=float, help="seconds for running jobs to end (20)")
    parser.add_argument("--condition-timeout", type=float, default=60.0)
    parser.add_argument("--nodes", type=int, default=4, help="simulated nodes, 8 NPUs each")
    parser.add_argument("--foreign", type=int, help="foreign pods (default 6)")
    parser.add_argument("--only", help="comma-separated case indices to run alone")
    parser.add_argument(
        "--replay", type=Path, nargs="+", default=[], help="POST these files' bytes as the cases"
    )
    parser.add_argument("--out", type=Path, help="where logs and reproductions go")
    parser.add_argument("--show", action="store_true", help="print the cases and exit")
    return parser


def options_from(args: argparse.Namespace) -> Options:
    quick = QUICK if args.quick else {}

    def pick(name: str, default: float) -> float:
        value = getattr(args, name)
        return value if value is not None else quick.get(name, default)

    only = tuple(int(i) for i in args.only.split(",")) if args.only else None
    return Options(
        seed=args.seed if args.seed is not None else random.SystemRandom().randrange(10**6),
        count=int(pick("count", FULL_COUNT)),
        backend=args.backend,
        rate=pick("rate", 5.0),
        condition_timeout=args.condition_timeout,
        settle=pick("settle", 20.0),
        nodes=args.nodes,
        foreign=int(pick("foreign", 6)),
        only=only,
        replay=tuple(args.replay),
        out_dir=args.out,
    )


def show_cases(options: Options) -> int:
    from hack.fuzz.run import build_cases

    for case in build_cases(options):
        mutations = "; ".join(case.mutations) or "(none)"
        print(f"{case.index:5d} {case.name[:40]:<40} {case.sample:<28} {mutations}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    options = options_from(args)
    print(f"fuzz seed {options.seed} (repeat with --seed {options.seed})", flush=True)
    if args.show:
        return show_cases(options)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    result = run(options)
    checks = all_checks(result)
    failing = set().union(*(c.cases for c in checks))
    write_repros(result.out_dir, result.outcomes, failing)
    print(f"started          {started}")
    print("\n".join(figures(result)))
    print(f"logs             {result.out_dir}")
    for line in repro_lines(result, failing):
        print(line)
    print("\n".join(verdict(checks)), flush=True)
    return 0 if all(c.ok for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
