"""Start the two servers the suite compares, each as its own process, and stop them.

Both are started through their command-line contract (`... --port P --kubeconfig F
--no-kubelet` prints `ready <url>`), so the suite sees them exactly as a user or a test
fixture would; nothing drives pods on either side.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def random_port() -> int:
    """A port in 20000-29999 (other engineers' runs pick from the same machine)."""
    return random.randint(20000, 29999)


class ServerProcess:
    """One server process, started in its own session so stop() ends all it spawned."""

    def __init__(self, name: str, argv: list[str], kubeconfig: Path, env: dict[str, str]) -> None:
        self.name = name
        self.argv = argv
        self.kubeconfig = kubeconfig
        self.env = env
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self, timeout: float) -> None:
        self.proc = subprocess.Popen(
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
            env=self.env,
            cwd=REPO,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} server exited with {self.proc.returncode}")
            ready, _, _ = select.select([self.proc.stdout], [], [], 1.0)
            if ready:
                line = self.proc.stdout.readline()
                if line.startswith("ready "):
                    self.url = line.split(None, 1)[1].strip()
                    return
        self.stop()
        raise RuntimeError(f"{self.name} server not ready after {timeout:.0f} s")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL for the whole process group if it does not end in 30 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


def local_server(workdir: Path) -> ServerProcess:
    kubeconfig = workdir / "local.kubeconfig"
    cli = Path(sys.executable).with_name("ascendjob-controller")
    argv = [str(cli), "local-cluster", "--port", str(random_port())]
    argv += ["--kubeconfig", str(kubeconfig), "--no-kubelet"]
    return ServerProcess("local", argv, kubeconfig, dict(os.environ))


def real_server(workdir: Path) -> ServerProcess:
    kubeconfig = workdir / "real.kubeconfig"
    argv = [str(REPO / "hack/realcluster/run"), "--port", str(random_port())]
    argv += ["--kubeconfig", str(kubeconfig), "--no-kubelet"]
    env = {**os.environ, "PYTHON": sys.executable}
    return ServerProcess("real", argv, kubeconfig, env)
