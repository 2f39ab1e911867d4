"""Print the outcome: each differing step with a compact diff, per-area shares, the total."""

from __future__ import annotations

from collections import defaultdict

from hack.fidelity.compare import Outcome, excerpts
from hack.fidelity.steps import Case

MAX_DIFFS = 6


def report(cases: list[Case], outcomes: list[list[Outcome]], verbose: bool, took: float) -> float:
    """Print everything and return the percentage of identical steps."""
    by_area: dict[str, list[bool]] = defaultdict(list)
    for case, steps in zip(cases, outcomes, strict=True):
        for o in steps:
            by_area[case.area].append(o.identical)
            if o.identical:
                if verbose:
                    print(f"same  {o.case} #{o.index} {o.description}")
                continue
            print(f"DIFF  {o.case} #{o.index} {o.description}")
            for path, local, real in o.diffs[:MAX_DIFFS]:
                a, b = excerpts(local, real)
                print(f"        {path}:")
                print(f"          local {a}")
                print(f"          real  {b}")
            if len(o.diffs) > MAX_DIFFS:
                print(f"        ... and {len(o.diffs) - MAX_DIFFS} more differences")
    print()
    total = [same for results in by_area.values() for same in results]
    for area in sorted(by_area):
        results = by_area[area]
        print(f"  {area:<12} {sum(results):>4}/{len(results):<4} identical")
    share = 100.0 * sum(total) / len(total) if total else 0.0
    print(
        f"fidelity: {sum(total)}/{len(total)} steps identical ({share:.1f}%) "
        f"in {len(cases)} cases, {took:.0f} s"
    )
    return share
