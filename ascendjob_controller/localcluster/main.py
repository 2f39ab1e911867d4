"""`ascendjob-controller local-cluster`: serve until SIGINT/SIGTERM."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from ascendjob_controller.kube.fullgc import FullCollector, Schedule
from ascendjob_controller.localcluster.cluster import LocalCluster

#: The bed has no work queue to wait on: every second it freezes what survived the young
#: collections, so no collection walks the store. CPython's own full collections walked
#: the whole store and held the server 300-500 ms apiece while a benchmark created its
#: 1,000 jobs (hack/bench_latency.py, timed with gc.callbacks); collecting before each
#: freeze still cost 130-147 ms of a peers run's 3.5 s and freed nothing (gc.callbacks,
#: 11-13 collections), so the freeze goes alone and the half-hourly thaw collects.
BED_GC = Schedule(interval=1.0, max_interval=1.0, collect=False)


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
    collector = FullCollector(idle=lambda: True, synced=lambda: True, schedule=BED_GC)
    collector.start()
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
    # The collector is left to end with the process: stopping it thaws the store, which only
    # buys one long collection on the way out.
    return 0
