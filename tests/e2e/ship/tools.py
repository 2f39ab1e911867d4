"""Helpers for the ship e2e tests: find real tools, free ports, HTTP, the controller process."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families


def require_binary(name: str, hint: str) -> str:
    """The tool's path; outside CI a missing tool skips with a reason, in CI it fails."""
    found = shutil.which(name)
    if found:
        return found
    message = f"{name} not found on PATH ({hint})"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_get(url: str, timeout: float = 10.0) -> tuple[int, str]:
    """(status, body); connection errors come back as status 0 so callers can poll."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, ""


class ControllerProcess:
    """`ascendjob-controller run` as a subprocess (the console script), with its own ports.

    stdout (the JSON logs) and stderr go to files so a chatty process never blocks on a full
    pipe; `stop()` is idempotent and always leaves no process behind.
    """

    def __init__(self, kubeconfig: str, workdir: Path, *extra: str, name: str = "ctl") -> None:
        self.metrics_port = free_port()
        self.probe_port = free_port()
        self.stdout_path = workdir / f"{name}.stdout"
        self.stderr_path = workdir / f"{name}.stderr"
        script = Path(sys.executable).with_name("ascendjob-controller")
        argv = [
            str(script), "run",
            "--kubeconfig", kubeconfig,
            "--metrics-bind-address", f"127.0.0.1:{self.metrics_port}",
            "--health-probe-bind-address", f"127.0.0.1:{self.probe_port}",
            "--log-format", "json",
            *extra,
        ]  # fmt: skip
        with self.stdout_path.open("w") as out, self.stderr_path.open("w") as err:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=err)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def probe(self, path: str) -> tuple[int, str]:
        return http_get(f"http://127.0.0.1:{self.probe_port}{path}")

    def wait_for(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"controller exited ({self.proc.returncode}): {self.logs()}")
            time.sleep(0.1)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}: {self.logs()}")

    def wait_ready(self, timeout: float = 90.0) -> None:
        self.wait_for(lambda: self.probe("/readyz")[0] == 200, timeout, "/readyz 200")

    def signal(self, signum: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signum)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def log_lines(self) -> list[str]:
        return self.stdout_path.read_text().splitlines()

    def logs(self) -> str:
        tail = "\n".join(self.log_lines()[-20:])
        return f"\n--- stdout (tail) ---\n{tail}\n--- stderr ---\n{self.stderr_path.read_text()}"

    def metric_sum(self, name: str, **labels: str) -> float:
        """Sum of the samples of `name` whose labels include `labels` (0 when absent)."""
        status, body = http_get(self.metrics_url)
        assert status == 200, status
        total = 0.0
        for family in text_string_to_metric_families(body):
            for sample in family.samples:
                if sample.name == name and labels.items() <= sample.labels.items():
                    total += sample.value
        return total

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


def get_job(cluster: Any, name: str, namespace: str = "default") -> dict[str, Any]:
    from kubernetes import client as k8s

    api = k8s.CustomObjectsApi(cluster.api_client())
    job: dict[str, Any] = api.get_namespaced_custom_object(
        "mindxdl.gitee.com", "v1", namespace, "ascendjobs", name
    )
    return job


def job_state(job: dict[str, Any]) -> str | None:
    conditions = (job.get("status") or {}).get("conditions") or []
    return str(conditions[-1]["type"]) if conditions else None


def wait_job(
    cluster: Any,
    name: str,
    states: tuple[str, ...],
    timeout: float = 120.0,
    namespace: str = "default",
) -> dict[str, Any]:
    """Poll until the job's state is one of `states`; the job on success, else AssertionError."""
    deadline = time.monotonic() + timeout
    job: dict[str, Any] = {}
    while time.monotonic() < deadline:
        job = get_job(cluster, name, namespace)
        if job_state(job) in states:
            return job
        time.sleep(0.25)
    raise AssertionError(f"{name} never reached {states}: {job.get('status')}")


def kubectl_apply(kubectl_bin: str, cluster: Any, *args: str, stdin: str | None = None) -> str:
    out = subprocess.run(
        [kubectl_bin, "--kubeconfig", str(cluster.kubeconfig_path), "apply", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def small_job(name: str, run_seconds: int) -> str:
    """A pytorch job (Master + 1 Worker, no NPUs) whose pods run `run_seconds` and succeed."""
    replica = """
    {rtype}:
      replicas: 1
      restartPolicy: Never
      template:
        metadata:
          annotations:
            sim.acjob.local/run-seconds: "{seconds}"
        spec:
          containers:
            - name: ascend
              image: busybox:1.36"""
    return (
        "apiVersion: mindxdl.gitee.com/v1\nkind: AscendJob\n"
        f"metadata:\n  name: {name}\n  labels:\n    framework: pytorch\n"
        "spec:\n  runPolicy:\n    cleanPodPolicy: Running\n  replicaSpecs:"
        + replica.format(rtype="Master", seconds=run_seconds)
        + replica.format(rtype="Worker", seconds=run_seconds)
        + "\n"
    )
