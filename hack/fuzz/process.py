"""`ascendjob-controller run` as a subprocess, as the e2e tests start it (tests/e2e/ship/tools.py).

Its own copy rather than an import: hack/ must run without pytest. The JSON log goes to a
file, so a chatty controller never blocks on a pipe, and the fuzzer reads it at the end for
the reconcile errors of each job.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hack.fuzz.wire import Endpoint

STOP_TIMEOUT = 40.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Controller:
    """One controller process with its own metrics and probe ports."""

    def __init__(self, kubeconfig: Path, workdir: Path, *extra: str) -> None:
        self.metrics_port = free_port()
        self.probe_port = free_port()
        self.stdout_path = workdir / "controller.log"
        self.stderr_path = workdir / "controller.stderr"
        script = Path(sys.executable).with_name("ascendjob-controller")
        self.argv = [
            str(script), "run",
            "--kubeconfig", str(kubeconfig),
            "--metrics-bind-address", f"127.0.0.1:{self.metrics_port}",
            "--health-probe-bind-address", f"127.0.0.1:{self.probe_port}",
            "--log-format", "json",
            *extra,
        ]  # fmt: skip
        with self.stdout_path.open("w") as out, self.stderr_path.open("w") as err:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=err)
        self.pid = self.proc.pid

    @property
    def probe_url(self) -> str:
        return f"http://127.0.0.1:{self.probe_port}"

    def alive(self) -> bool:
        """Still the process we started (a restart would be a new pid; we never restart it)."""
        return self.proc.poll() is None and Path(f"/proc/{self.pid}").exists()

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        endpoint = Endpoint(self.probe_url)
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"controller exited ({self.proc.returncode}): {self.tail()}")
            try:
                conn = endpoint.connect(timeout=2.0)
                conn.request("GET", "/readyz")
                resp = conn.getresponse()
                resp.read()  # read to the end: a close with data unread resets the connection
                conn.close()
                if resp.status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"controller not ready in {timeout:.0f}s: {self.tail()}")

    def metric_sums(self) -> dict[str, float]:
        """Sample name -> sum over its labels, from /metrics ({} when it does not answer)."""
        from prometheus_client.parser import text_string_to_metric_families

        endpoint = Endpoint(f"http://127.0.0.1:{self.metrics_port}")
        try:
            conn = endpoint.connect(timeout=10.0)
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
            conn.close()
        except OSError:
            return {}
        sums: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                sums[sample.name] = sums.get(sample.name, 0.0) + sample.value
        return sums

    def cpu_seconds(self) -> float:
        """User + system CPU of the controller so far (0 once it is gone)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL; the exit status (None if it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
                return None
        return self.proc.returncode

    def log_records(self) -> list[dict[str, Any]]:
        records = []
        for line in self.stdout_path.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                record = {"level": "unparsed", "event": line[:200]}
            if isinstance(record, dict):
                records.append(record)
        return records

    def tail(self, lines: int = 15) -> str:
        out = "\n".join(self.stdout_path.read_text(errors="replace").splitlines()[-lines:])
        return f"\n--- log (tail) ---\n{out}\n--- stderr ---\n{self.stderr_path.read_text()}"


#: Exceptions that carry an API server's answer (a 409, a 422 pod, a 500): retried with
#: back-off by design. Anything else in an error line was raised by the controller's own code.
API_ERRORS = frozenset({"ReconcileError", "ApiError", "ApiConnectionError", "WatchTimeoutError"})


@dataclass(frozen=True)
class Failure:
    """One kind of error line: what failed, where (job key or informer), with what."""

    event: str
    where: str
    exc_type: str
    message: str

    @property
    def from_api(self) -> bool:
        return self.exc_type in API_ERRORS


def failures(records: list[dict[str, Any]]) -> Counter[Failure]:
    """Every error line that carries an exception, by kind, so a loop shows as a high count."""
    found: Counter[Failure] = Counter()
    for r in records:
        chain = r.get("exception")
        if r.get("level") != "error" or not isinstance(chain, list) or not chain:
            continue
        last = chain[-1] if isinstance(chain[-1], dict) else {}
        where = r.get("key") or r.get("informer") or f"{r.get('namespace')}/{r.get('name')}"
        message = str(last.get("exc_value", "")).split("\n")[0][:160]
        found[Failure(str(r.get("event")), str(where), str(last.get("exc_type")), message)] += 1
    return found


def levels(records: list[dict[str, Any]]) -> Counter[str]:
    return Counter(str(r.get("level")) for r in records)
