"""Arguments of `python -m hack.chaos` (`make chaos CHAOS_ARGS=...`); exit 0 only if it passed.

`--quick` is what the smoke test runs: a couple of dozen jobs, two kills, no partition (the
partition alone lasts as long as the controller's watch-silence detection, about 45 s).
`--backend real` runs the same on a real kube-apiserver with the fault proxy in front of it
(backends.py); its budget gets `REAL_START` more seconds, for starting the control plane.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from hack.chaos.backends import BACKENDS
from hack.chaos.faults import FaultPlan
from hack.chaos.replicas import LeaderTimes
from hack.chaos.report import text, write_json
from hack.chaos.run import ChaosConfig, run

QUICK = {"jobs": 24, "kills": 2, "rate": 4.0, "partition": False, "timeout": 150.0, "linger": 2.0}
REAL_START = 180.0  # etcd, kube-apiserver, CRDs, kube-controller-manager on a loaded machine


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m hack.chaos", description=__doc__)
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default="local",
        help="local: the embedded cluster and its fault hooks (default); real: kube-apiserver "
        "+ etcd + kube-controller-manager (make real-cluster-bin) behind the fault proxy",
    )
    p.add_argument("--jobs", type=int, help="jobs to run (default 500)")
    p.add_argument("--kills", type=int, help="times the leader is SIGKILLed (default 10)")
    p.add_argument("--seed", type=int, default=1, help="job mix, kill gaps (default 1)")
    p.add_argument("--rate", type=float, help="jobs POSTed per second (default 5)")
    p.add_argument(
        "--partition",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="partition the leader silently halfway (default on, off with --quick)",
    )
    p.add_argument("--timeout", type=float, help="budget for the whole run, s (default 600)")
    p.add_argument("--linger", type=float, help="calm seconds before the checks (default 5)")
    p.add_argument("--error-percent", type=float, default=10.0, help="500+429 share (10)")
    p.add_argument("--lease", type=float, default=3.0, help="lease duration, s (3)")
    p.add_argument("--renew", type=float, default=2.0, help="renew deadline, s (2)")
    p.add_argument("--retry", type=float, default=0.5, help="retry period, s (0.5)")
    p.add_argument("--quick", action="store_true", help="a small run for the smoke test")
    p.add_argument("--workdir", type=Path, help="keep logs and kubeconfigs here")
    p.add_argument("--keep", action="store_true", help="keep the work directory on success")
    p.add_argument("--json", type=Path, help="also write the figures as JSON to this file")
    p.add_argument(
        "--lossy-proxy",
        action="store_true",
        help="the replicas behind BlackholeProxy as it is, which loses requests under watch "
        "churn (stale caches for ~40 s; see hack/chaos/proxy.py and docs/chaos.md)",
    )
    return p


def config_of(args: argparse.Namespace) -> ChaosConfig:
    """Defaults, then --quick's sizes, then whatever was given explicitly."""
    config = ChaosConfig(
        seed=args.seed,
        times=LeaderTimes(args.lease, args.renew, args.retry),
        faults=FaultPlan(error_percent=args.error_percent),
        workdir=args.workdir,
        keep=args.keep,
        lossy_proxy=args.lossy_proxy,
        backend=args.backend,
    )
    if args.quick:
        config = dataclasses.replace(config, **QUICK)  # type: ignore[arg-type]
    if args.backend == "real":
        config = dataclasses.replace(config, timeout=config.timeout + REAL_START)
    given = {
        name: getattr(args, name)
        for name in ("jobs", "kills", "rate", "partition", "timeout", "linger")
        if getattr(args, name) is not None
    }
    return dataclasses.replace(config, **given)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    result = run(config_of(args))
    print(text(result), flush=True)
    if args.json is not None:
        write_json(result, args.json)
    return 0 if result.passed else 1
