"""Run the corpus on both servers and compare: per case, both servers in parallel threads.

Cases are independent (each has its own namespace), so several run at once; each case's two
runs start together, which keeps time-dependent answers (ages, grace periods) comparable.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from hack.fidelity.client import Server
from hack.fidelity.compare import Outcome, differences
from hack.fidelity.normalize import Normalizer, generate_names
from hack.fidelity.paths import lookup
from hack.fidelity.runner import CaseRun, StepResult
from hack.fidelity.steps import Case

ACCOUNT_WAIT = 15.0


@dataclass
class Pair:
    local: Server
    real: Server


def namespace_for(run_id: str, index: int) -> str:
    return f"fid-{run_id}-{index:03d}"


def _prepare(server: Server, namespace: str) -> None:
    """Create the case's namespace and wait (bounded) for its `default` ServiceAccount.

    A real server refuses pods until the controller-manager made the account; waiting for it
    on both sides keeps that race out of the comparison.
    """
    server.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    deadline = time.monotonic() + ACCOUNT_WAIT
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/default"
    while time.monotonic() < deadline:
        if server.request("GET", path).code == 200:
            return
        time.sleep(0.1)


def _run_on(server: Server, case: Case, namespace: str, run_id: str) -> list[StepResult]:
    if case.namespace:
        _prepare(server, namespace)
    return CaseRun(server, case, namespace, run_id).run()


def _normalized(case: Case, results: list[StepResult]) -> list[object]:
    names = generate_names([s.body for s in case.steps])
    norm = Normalizer(names)
    out: list[object] = []
    for r in results:
        if not r.step.compare:
            # Unscored answers (say, a list of every namespace's objects taken for its
            # resourceVersion) would only shift the placeholders' numbering.
            out.append(None)
            continue
        # Normalize the whole answer, then pick: a picked ListMeta is still known as one.
        body = norm.normalize(r.response.body)
        if r.step.pick:
            body = {p: lookup(body, p) for p in r.step.pick}
        entry: dict[str, object] = {"code": r.response.code, "body": body}
        for header in r.step.headers:
            entry[header] = norm.normalize(r.response.headers.get(header))
        if r.timed_out:
            entry["timed_out"] = True
        out.append(entry)
    return out


def run_case(pair: Pair, case: Case, index: int, run_id: str) -> list[Outcome]:
    namespace = namespace_for(run_id, index)
    with ThreadPoolExecutor(max_workers=2) as pool:
        local_future = pool.submit(_run_on, pair.local, case, namespace, run_id)
        real_future = pool.submit(_run_on, pair.real, case, namespace, run_id)
        local, real = local_future.result(), real_future.result()
    local_n, real_n = _normalized(case, local), _normalized(case, real)
    outcomes = []
    for i, step in enumerate(case.steps):
        if not step.compare:
            continue
        diffs = differences(local_n[i], real_n[i])
        outcomes.append(Outcome(case.name, i + 1, step.describe(), not diffs, diffs))
    return outcomes


def run_all(pair: Pair, cases: list[Case], run_id: str, workers: int) -> list[list[Outcome]]:
    """Every case's outcomes, in corpus order."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_case, pair, c, i, run_id) for i, c in enumerate(cases)]
        return [f.result() for f in futures]
