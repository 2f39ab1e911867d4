"""`ascendjob-controller demo` (`make run`): local cluster + controller + a sample job.

The controller runs in the main thread through the same `controller.run(config)` that a
deployment uses, so signals (Ctrl-C) stop it the same way; a second thread applies the sample
job and prints each change of its state. The controller's own logs go to a file, so the
terminal shows only the story of the job.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO, cast

import yaml

from ascendjob_controller import logging as logs
from ascendjob_controller.config import Config, split_bind_address

GROUP, VERSION, PLURAL = "mindxdl.gitee.com", "v1", "ascendjobs"
SEED_SAMPLE = Path("manifests/samples/pytorch_multinodes_acjob_910b.yaml")
DEFAULT_KUBECONFIG = "kubeconfig.local"
LOG_FILE = Path(".local/demo.log")
TERMINAL = ("Succeeded", "Failed")
POLL_SECONDS = 0.25
#: The seed sample's pods keep apart (required anti-affinity), so the demo needs two nodes.
DEMO_NODES = 2


# --- functional core ---------------------------------------------------------------------------


def job_state(job: Mapping[str, Any]) -> str | None:
    """The state `kubectl get acjob` prints: the type of the last condition."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return str(conditions[-1].get("type")) if conditions else None


def new_states(job: Mapping[str, Any], seen: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """(state, lastTransitionTime) of True conditions not seen yet, oldest first.

    A poll can miss a state the job passed through between two polls (Created -> Running in
    under a second); the conditions keep it, and a condition that becomes True moves to the end
    of the list, so list order is the order of the transitions.
    """
    found = []
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("status") != "True":
            continue
        mark = (str(condition.get("type")), str(condition.get("lastTransitionTime") or ""))
        if mark not in seen:
            found.append(mark)
    return found


def local_time(timestamp: str, fallback: datetime) -> datetime:
    """An RFC 3339 UTC timestamp from the API server, in the terminal's local time."""
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone()
    except ValueError:
        return fallback


def restarts(job: Mapping[str, Any]) -> int:
    return int((job.get("status") or {}).get("restartCount") or 0)


def transition_line(
    when: datetime, key: str, old: str | None, new: str, restart_count: int = 0
) -> str:
    change = new if old in (None, new) else f"{old} -> {new}"
    suffix = f"  (restarts: {restart_count})" if restart_count else ""
    return f"{when:%H:%M:%S}  {key}  {change}{suffix}"


def ranktable_status(configmap: Mapping[str, Any] | None) -> tuple[str, int] | None:
    """(status, servers) of a `rings-config-<job>` ConfigMap's hccl.json; None if unreadable."""
    data = (configmap or {}).get("data") or {}
    try:
        table = json.loads(data.get("hccl.json") or "")
    except ValueError:
        return None
    if not isinstance(table, dict) or not isinstance(table.get("status"), str):
        return None
    servers = table.get("server_list") or table.get("rank_list") or []
    return table["status"], len(servers) if isinstance(servers, list) else 0


def ranktable_line(when: datetime, namespace: str, name: str, status: str, servers: int) -> str:
    detail = f" ({servers} servers)" if status == "completed" else ""
    return f"{when:%H:%M:%S}  {namespace}/rings-config-{name}  hccl.json {status}{detail}"


def kubectl_hint(kubeconfig: Path, namespace: str, name: str, metrics_url: str | None) -> str:
    lines = [
        "",
        "The local cluster keeps serving; in another terminal:",
        f"  export KUBECONFIG={kubeconfig}",
        "  kubectl get acjob",
        f"  kubectl describe acjob {name} -n {namespace}",
        f"  kubectl get cm rings-config-{name} -n {namespace} -o jsonpath='{{.data.hccl\\.json}}'",
        "  kubectl get pods,svc,events",
        "  kubectl apply -f manifests/samples/     # every sample job",
    ]
    if metrics_url:
        lines.append(f"  curl -s {metrics_url}/metrics | grep ascendjob_")
    lines += ["Press Ctrl-C to stop.", ""]
    return "\n".join(lines)


def find_sample(explicit: str | None, package_dir: Path) -> Path:
    """The manifest to apply: the one asked for, else the seed sample of this checkout."""
    if explicit:
        return Path(explicit)
    for root in (package_dir.parent, Path.cwd()):
        candidate = root / SEED_SAMPLE
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"{SEED_SAMPLE} not found: run the demo from a checkout, or --sample")


def usable_address(address: str, can_bind: Callable[[str, int], bool]) -> str:
    """`address`, or `0` (disabled) when its port is taken: a busy :8080 must not stop a demo."""
    bind = split_bind_address(address)
    if bind is None or bind[1] == 0 or can_bind(*bind):
        return address
    return "0"


# --- imperative shell -------------------------------------------------------------------------


def _can_bind(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _local_url(address: str) -> str | None:
    bind = split_bind_address(address)
    if bind is None or bind[1] == 0:
        return None  # disabled, or a port only the server knows
    host = bind[0] if bind[0] not in ("", "0.0.0.0", "::") else "127.0.0.1"
    return f"http://{f'[{host}]' if ':' in host else host}:{bind[1]}"


class _Watcher:
    """Applies the sample and prints its state changes until it finishes or `stop` is set."""

    def __init__(self, api_client: Any, job: dict[str, Any], out: TextIO) -> None:
        from kubernetes import client as k8s

        self.api = k8s.CustomObjectsApi(api_client)
        self.core = k8s.CoreV1Api(api_client)
        self.ranktable: str | None = None  # the last status printed
        self.job = job
        self.namespace = job["metadata"].get("namespace") or "default"
        self.name = job["metadata"]["name"]
        self.out = out
        self.stop = threading.Event()
        self.final_state: str | None = None

    def apply(self) -> None:
        self.api.create_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, self.job)
        self._print(transition_line(datetime.now(), self.key, None, "applied"))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def _print(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def watch(self) -> str | None:
        state: str | None = None
        seen_restarts = 0
        seen: set[tuple[str, str]] = set()
        while not self.stop.wait(POLL_SECONDS):
            try:
                job = cast(
                    "dict[str, Any]",
                    self.api.get_namespaced_custom_object(
                        GROUP, VERSION, self.namespace, PLURAL, self.name
                    ),
                )
            except Exception as err:  # the cluster is stopping, or a transient error
                if self.stop.is_set():
                    break
                logs.get_logger(__name__).warning("demo_poll_failed", error=str(err))
                continue
            count = restarts(job)
            for new, since in new_states(job, seen):
                seen.add((new, since))
                when = local_time(since, datetime.now())
                self._print(transition_line(when, self.key, state, new, count))
                state, seen_restarts = new, count
            if count != seen_restarts and state is not None:
                self._print(transition_line(datetime.now(), self.key, state, state, count))
                seen_restarts = count
            self._ranktable()
            state = job_state(job) or state
            if state in TERMINAL:
                self.final_state = state
                return state
        return state

    def _ranktable(self) -> None:
        """Print the rank table's status when it changes (the job mounts one, or not)."""
        found = ranktable_status(
            _poll_configmap(self.core, self.namespace, f"rings-config-{self.name}")
        )
        if found is None or found[0] == self.ranktable:
            return
        self.ranktable = found[0]
        self._print(ranktable_line(datetime.now(), self.namespace, self.name, *found))


def _poll_configmap(core: Any, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return cast("dict[str, Any]", core.read_namespaced_config_map(name, namespace).to_dict())
    except Exception:
        return None  # not created yet, or the cluster is stopping


def main(
    config: Config,
    sample: str | None = None,
    *,
    exit_when_done: bool = False,
    out: TextIO | None = None,
) -> int:
    """Run the demo; returns 0 when the sample job Succeeded (or on Ctrl-C after it did)."""
    out = out or sys.stdout
    from ascendjob_controller.localcluster.cluster import LocalCluster

    try:
        manifest = find_sample(sample, Path(__file__).resolve().parent)
        job = yaml.safe_load(manifest.read_text())
    except (OSError, yaml.YAMLError) as err:
        sys.stderr.write(f"ascendjob-controller: error: demo: {err}\n")
        return 1
    kubeconfig = Path(config.kubeconfig or DEFAULT_KUBECONFIG).resolve()
    LOG_FILE.parent.mkdir(parents=True, exist_ok=True)
    with LOG_FILE.open("a", encoding="utf-8") as log_stream:
        logs.configure(config.log_format, config.log_level, stream=log_stream)
        cluster = LocalCluster(kubeconfig_path=kubeconfig, kubelet=True, nodes=DEMO_NODES)
        cluster.start()
        try:
            return _with_cluster(cluster, config, job, manifest, exit_when_done, out)
        finally:
            cluster.stop()
            logs.configure(config.log_format, config.log_level)  # the file is closing


def _with_cluster(
    cluster: Any,
    config: Config,
    job: dict[str, Any],
    manifest: Path,
    exit_when_done: bool,
    out: TextIO,
) -> int:
    kubeconfig = Path(cluster.kubeconfig_path)
    settings = dataclasses.replace(
        config,
        kubeconfig=str(kubeconfig),
        metrics_bind_address=usable_address(config.metrics_bind_address, _can_bind),
        health_probe_bind_address=usable_address(config.health_probe_bind_address, _can_bind),
    )
    metrics_url = _local_url(settings.metrics_bind_address)
    out.write(
        f"local cluster   {cluster.url}\n"
        f"kubeconfig      {kubeconfig}\n"
        f"controller log  {LOG_FILE.resolve()}\n"
        f"sample job      {manifest}\n"
        + (f"metrics         {metrics_url}/metrics\n" if metrics_url else "")
        + "\n"
    )
    out.flush()
    watcher = _Watcher(cluster.api_client(), job, out)

    def follow() -> None:
        try:
            watcher.apply()
        except Exception as err:
            out.write(f"cannot apply {manifest}: {err}\n")
            out.flush()
            return
        state = watcher.watch()
        if state in TERMINAL:
            out.write(kubectl_hint(kubeconfig, watcher.namespace, watcher.name, metrics_url))
            out.flush()
            if exit_when_done:
                os.kill(os.getpid(), signal.SIGTERM)

    if importlib.util.find_spec("ascendjob_controller.controller") is None:
        out.write(
            "The controller is not part of this build yet: serving the local cluster only.\n"
            + kubectl_hint(kubeconfig, "default", job["metadata"]["name"], None)
        )
        out.flush()
        return _serve_until_signal(exit_when_done)

    from ascendjob_controller import controller

    follower = threading.Thread(target=follow, name="demo-follow", daemon=True)
    follower.start()
    try:
        code: int = controller.run(settings)
    finally:
        watcher.stop.set()
        follower.join(timeout=5)
    if code != 0:
        out.write(f"The controller stopped with exit code {code}; see {LOG_FILE}.\n")
        return code
    return 0 if watcher.final_state == "Succeeded" else 1


def _serve_until_signal(exit_now: bool) -> int:
    if exit_now:
        return 1
    done = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        done.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 1
