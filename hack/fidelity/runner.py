"""Run one case against one server: fill in templates, send each step, keep what it saves.

Each server runs a case on its own thread with its own variables; the two result lists are
compared afterwards, step by step.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

import requests

from hack.fidelity.client import Response, Server, Watch
from hack.fidelity.paths import MISSING, lookup
from hack.fidelity.steps import Case, Step, Until

_VAR = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


@dataclass
class StepResult:
    step: Step
    response: Response
    timed_out: bool = False


def fill(template: Any, variables: dict[str, str]) -> Any:
    """Substitute `{var}` in every string of a JSON-like value (unknown names stay as they are)."""
    if isinstance(template, str):
        return _VAR.sub(lambda m: str(variables.get(m.group(1), m.group(0))), template)
    if isinstance(template, list):
        return [fill(v, variables) for v in template]
    if isinstance(template, dict):
        return {fill(k, variables): fill(v, variables) for k, v in template.items()}
    return template


def _holds(until: Until, response: Response) -> bool:
    if until.code is not None and response.code != until.code:
        return False
    if until.has and lookup(response.body, until.has) is MISSING:
        return False
    if until.lacks and lookup(response.body, until.lacks) is not MISSING:
        return False
    if until.equals is not None:
        path, value = until.equals
        if lookup(response.body, path) != value:
            return False
    return True


class CaseRun:
    """The state of one case on one server: its variables and open watches."""

    def __init__(self, server: Server, case: Case, namespace: str, run_id: str) -> None:
        self.server = server
        self.case = case
        self.vars: dict[str, str] = {"ns": namespace, "run": run_id}
        self.watches: dict[str, Watch] = {}

    def run(self) -> list[StepResult]:
        results = []
        try:
            for step in self.case.steps:
                results.append(self._step(step))
        finally:
            for w in self.watches.values():
                w.close()
        return results

    def _step(self, step: Step) -> StepResult:
        try:
            result = self._send(step)
        except requests.RequestException as err:
            result = StepResult(step, Response(0, f"request failed: {type(err).__name__}"))
        for var, path in step.save.items():
            value = lookup(result.response.body, path)
            if value is not MISSING:
                self.vars[var] = value if isinstance(value, str) else json.dumps(value)
        return result

    def _send(self, step: Step) -> StepResult:
        path = fill(step.path, self.vars)
        if step.method == "SLEEP":
            time.sleep(step.wait)
            return StepResult(step, Response(0, None))
        if step.method == "WATCH":
            self.watches[step.watch] = self.server.watch(path, step.accept)
            return StepResult(step, Response(0, None))
        if step.method == "COLLECT":
            w = self.watches.pop(step.watch)
            return StepResult(step, w.collect(step.count, step.wait))
        body = fill(step.body, self.vars)
        raw = None
        if step.raw is not None:  # bytes that are no UTF-8 (a case of their own) pass unchanged
            text = step.raw.decode("utf-8", "surrogateescape")
            raw = fill(text, self.vars).encode("utf-8", "surrogateescape")
        if step.until is None:
            return StepResult(step, self._request(step, path, body, raw))
        deadline = time.monotonic() + step.until.timeout
        while True:
            response = self._request(step, path, body, raw)
            if _holds(step.until, response):
                return StepResult(step, response)
            if time.monotonic() > deadline:
                return StepResult(step, response, timed_out=True)
            time.sleep(0.25)

    def _request(self, step: Step, path: str, body: Any, raw: bytes | None) -> Response:
        if step.content_type.startswith("application/apply-patch") and body is not None:
            raw = json.dumps(body).encode()  # YAML is a superset of JSON
        return self.server.request(step.method, path, body, step.content_type, step.accept, raw)
