"""`ascendjob-controller local-cluster`: serve until SIGINT/SIGTERM."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from ascendjob_controller.localcluster.cluster import LocalCluster


def serve_forever(port: int, kubeconfig: str, kubelet: bool) -> int:
    """Print `ready <url>` once serving (scripts wait for that line), exit 0 on a signal."""
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    cluster = LocalCluster(kubeconfig_path=Path(kubeconfig), kubelet=kubelet, port=port)
    try:
        cluster.start()
    except OSError as err:
        print(f"local-cluster: cannot serve on port {port}: {err}", file=sys.stderr)
        return 1
    print(f"ready {cluster.url}", flush=True)
    print(
        f"local-cluster: kubeconfig written to {kubeconfig}; "
        f"try: kubectl --kubeconfig {kubeconfig} get pods",
        file=sys.stderr,
        flush=True,
    )
    try:
        while not done.wait(0.5):
            pass
    finally:
        cluster.stop()
    return 0
