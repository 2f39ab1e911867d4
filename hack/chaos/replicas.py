"""Two `ascendjob-controller run --leader-elect` replicas, each behind its own TCP proxy.

Each replica slot ("a", "b") keeps one `ChaosProxy` (proxy.py: the `BlackholeProxy` of
tests/integration/kube/helpers.py with a teardown that loses no request) for the whole run,
and every process started in that slot connects through it. The proxy is what lets the fault
schedule reset a replica's connections mid-stream and partition it silently (open
connections swallow bytes, new ones work), neither of which the local cluster's fault hooks
can do. A slot's process is replaced when it is killed or exits, so two
replicas run at all times, as a Deployment with two replicas would keep them.

The processes are `ControllerProcess` from tests/e2e/ship/tools.py: the console script with
its own metrics and probe ports and JSON logs in files of the run's work directory.
"""

from __future__ import annotations

import json
import signal
import socket
from dataclasses import dataclass, field
from pathlib import Path

from ascendjob_controller.localcluster.cluster import kubeconfig_text
from hack.chaos.jobs import NAMESPACE
from hack.chaos.proxy import ChaosProxy
from tests.e2e.ship.tools import ControllerProcess
from tests.integration.kube.helpers import BlackholeProxy

LEASE_NAME = "ascendjob-chaos"
SLOTS = ("a", "b")


@dataclass(frozen=True)
class LeaderTimes:
    """The lease timing of every replica, as its flags take them."""

    lease: float = 3.0
    renew: float = 2.0
    retry: float = 0.5

    def flags(self) -> tuple[str, ...]:
        return (
            "--leader-elect",
            "--leader-election-namespace", NAMESPACE,
            "--leader-election-id", LEASE_NAME,
            "--leader-election-lease-duration", f"{self.lease:g}s",
            "--leader-election-renew-deadline", f"{self.renew:g}s",
            "--leader-election-retry-period", f"{self.retry:g}s",
        )  # fmt: skip


@dataclass(frozen=True)
class Exit:
    """A replica process that ended without being killed by the run."""

    slot: str
    pid: int
    code: int
    why: str


@dataclass
class Slot:
    name: str
    proxy: BlackholeProxy
    kubeconfig: Path
    proc: ControllerProcess | None = None
    starts: int = 0


def identity_pid(holder: str) -> int | None:
    """The pid in a holder identity `<hostname>_<pid>` (controller.py), None if unreadable."""
    _, _, pid = holder.rpartition("_")
    return int(pid) if pid.isdigit() else None


def exit_reason(proc: ControllerProcess) -> str:
    """The `leader_lost` reason from the log when there is one, else the last log line."""
    lines = proc.log_lines()
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("event") == "leader_lost":
            return f"leader_lost: {record.get('reason', '')}"
    tail = lines[-1] if lines else proc.stderr_path.read_text()[-300:]
    return tail.strip()[:300]


@dataclass
class Replicas:
    """The two slots, their processes, and the exits the run did not cause."""

    workdir: Path
    upstream_port: int
    flags: tuple[str, ...]
    lossy_proxy: bool = False  # the original BlackholeProxy, which loses requests (proxy.py)
    slots: dict[str, Slot] = field(default_factory=dict)
    exits: list[Exit] = field(default_factory=list)
    hostname: str = field(default_factory=socket.gethostname)

    def __post_init__(self) -> None:
        for name in SLOTS:
            kind = BlackholeProxy if self.lossy_proxy else ChaosProxy
            proxy = kind(self.upstream_port)
            kubeconfig = self.workdir / f"kubeconfig-{name}"
            kubeconfig.write_text(kubeconfig_text(proxy.url))
            self.slots[name] = Slot(name, proxy, kubeconfig)

    def start(self, name: str) -> None:
        slot = self.slots[name]
        slot.starts += 1
        slot.proc = ControllerProcess(
            str(slot.kubeconfig), self.workdir, *self.flags, name=f"ctl-{name}-{slot.starts}"
        )

    def start_all(self) -> None:
        for name in self.slots:
            self.start(name)

    def slot_of(self, holder: str) -> str | None:
        """The slot whose current process holds the lease as `holder`."""
        pid = identity_pid(holder)
        for slot in self.slots.values():
            if slot.proc is not None and slot.proc.pid == pid and slot.proc.proc.poll() is None:
                return slot.name
        return None

    def other(self, name: str) -> str:
        return next(s for s in self.slots if s != name)

    def healthy(self, name: str) -> bool:
        proc = self.slots[name].proc
        return proc is not None and proc.proc.poll() is None and proc.probe("/healthz")[0] == 200

    def kill(self, name: str) -> None:
        """SIGKILL the slot's process (no lease release, nothing graceful), start a new one.

        The replacement starts at once, as a Deployment's would: it cannot win the lease from
        the standby, which has been watching the record for longer than it.
        """
        proc = self.slots[name].proc
        if proc is not None:
            proc.signal(signal.SIGKILL)
            proc.wait(timeout=30)
        self.start(name)

    def reap(self) -> list[Exit]:
        """Restart every slot whose process ended on its own; return those exits."""
        found = []
        for slot in self.slots.values():
            proc = slot.proc
            if proc is None or proc.proc.poll() is None:
                continue
            found.append(Exit(slot.name, proc.pid, int(proc.proc.returncode), exit_reason(proc)))
            self.start(slot.name)
        self.exits += found
        return found

    def stop(self) -> None:
        """SIGTERM every process (SIGKILL after 60 s), then close the proxies."""
        for slot in self.slots.values():
            if slot.proc is not None:
                slot.proc.stop()
        for slot in self.slots.values():
            slot.proxy.close()
