"""Benchmark the rank table generator: computing and serialising hccl.json (docs/ranktable.md).

Issue 9's goal: a 1,000-pod table is computed in well under 50 ms, so that the reconciler can
recompute it on every sync of a large job without a cache. Each variant builds a job and its
pods once, in this process (the controller's own pod bodies from desired.py, allocated the way
the device plugin annotates them), then times `rank_table` + `dumps` REPEATS times and prints
the median and p99 of each part and of both together.

  v1.0-125x8     pytorch, Master + 124 Workers, 8 devices each (1,000 ranks)
  v1.0-1000x8    pytorch, Master + 999 Workers, 8 devices each (8,000 ranks)
  v1.2-1000x8    the same with sp-block 64 and super_device_ids (super_pod_list of 125)
  v2.0-1000x8    huawei.com/npu, each device with a four-level level_list
  init-1000x8    v1.0-1000x8 with the last pod's annotation missing (the longest way to
                 "initializing": every other pod is read first)

No processes, no network. `--quick` shrinks the repeats so the smoke test finishes at once;
its figures mean little. Nothing here asserts a time: the figures are for docs/ranktable.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ascendjob_controller.job.desired import desired_pod
from ascendjob_controller.job.ranktable import (
    ANNOTATION_DEVICES,
    clear_annotation_cache,
    dumps,
    rank_table,
)
from ascendjob_controller.job.types import parse_job

UID = "bench-0000-0000-0000-000000000000"
GOAL_MS = 50.0


def ascend_job(workers: int, resource: str, annotations: dict[str, str]) -> dict[str, Any]:
    """A pytorch AscendJob whose Master and Workers each request 8 of `resource`."""

    def spec(replicas: int) -> dict[str, Any]:
        npus = {resource: 8}
        # Requests and an equal limit, as kube-apiserver (and our validation) demand for an
        # extended resource; with requests alone the job is invalid and the table initializing.
        resources = {"requests": dict(npus), "limits": dict(npus)}
        main = {"name": "ascend", "image": "train", "resources": resources}
        return {"replicas": replicas, "template": {"spec": {"containers": [main]}}}

    return {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {
            "name": "bench",
            "namespace": "bench",
            "uid": UID,
            "labels": {"framework": "pytorch"},
            "annotations": annotations,
        },
        "spec": {"replicaSpecs": {"Master": spec(1), "Worker": spec(workers)}},
    }


def level_list(node: int, device: int) -> list[dict[str, Any]]:
    """Four levels with RoCE and UBoE elements, shaped as MindCluster's LevelElement."""
    return [
        {
            "level": level,
            "info": {
                port: {
                    "net_layer": level,
                    "net_instance_id": f"sp{node // 16}",
                    "net_type": "CLOS",
                    "net_attr": "",
                    "rank_addr_list": [
                        {"addr_type": "IP", "addr": f"10.{level}.{node % 250}.{device}"}
                    ],
                }
                for port in ("ROCE", "UBOE")
            },
        }
        for level in range(4)
    ]


def device_annotation(node: int, version: str) -> str:
    """The device plugin's annotation for a pod on node `node` holding 8 devices."""
    host = f"10.{node // 250}.{node % 250}.1"
    devices: list[dict[str, Any]] = []
    for i in range(8):
        device: dict[str, Any] = {"device_id": str(i), "device_ip": f"192.168.{i}.{node % 250}"}
        if version == "1.2":
            device["super_device_id"] = str(8 * node + i)
        if version == "2.0":
            device["level_list"] = level_list(node, i)
        devices.append(device)
    info = {"pod_name": f"pod-{node}", "server_id": host, "host_ip": host, "devices": devices}
    return json.dumps(info)


def allocated_pods(job: dict[str, Any], version: str) -> list[dict[str, Any]]:
    """The controller's pod bodies, scheduled one per node and annotated."""
    view = parse_job(job)
    pods = []
    replicas = [(spec.rtype, i) for spec in view.replicas for i in range(spec.replicas)]
    for node, (rtype, index) in enumerate(replicas):
        body = desired_pod(view, rtype, index, "10.96.0.10", gang=False)
        body["metadata"]["uid"] = f"uid-{node}"
        body["metadata"]["annotations"][ANNOTATION_DEVICES] = device_annotation(node, version)
        body["status"] = {
            "phase": "Running",
            "podIP": f"172.{16 + node // 250}.{node % 250}.5",
            "hostIP": f"10.{node // 250}.{node % 250}.1",
        }
        pods.append(body)
    return pods


@dataclass
class Variant:
    name: str
    job: dict[str, Any]
    pods: list[dict[str, Any]]


#: name -> (Workers, NPU resource, job annotations, annotation format)
VARIANTS: dict[str, tuple[int, str, dict[str, str], str]] = {
    "v1.0-125x8": (124, "huawei.com/Ascend910", {}, "1.0"),
    "v1.0-1000x8": (999, "huawei.com/Ascend910", {}, "1.0"),
    "v1.2-1000x8": (999, "huawei.com/Ascend910", {"sp-block": "64"}, "1.2"),
    "v2.0-1000x8": (999, "huawei.com/npu", {}, "2.0"),
    "init-1000x8": (999, "huawei.com/Ascend910", {}, "1.0"),
}


def build(name: str) -> Variant:
    """One variant. Built just before it is measured and dropped after, so the heap the
    garbage collector walks holds one job's pods, as a controller's would."""
    workers, resource, notes, version = VARIANTS[name]
    job = ascend_job(workers, resource, notes)
    pods = allocated_pods(job, version)
    if name.startswith("init"):
        del pods[-1]["metadata"]["annotations"][ANNOTATION_DEVICES]
    return Variant(name, job, pods)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = min(len(ordered), max(1, math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


def timed(work: Callable[[], Any]) -> tuple[float, float, Any]:
    """(CPU ms, wall ms, result) of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = work()
    return (time.process_time() - cpu) * 1e3, (time.perf_counter() - wall) * 1e3, result


def measure(variant: Variant, repeats: int, cold: bool, paused: bool) -> dict[str, list[float]]:
    """CPU milliseconds per repeat for compute, serialise and both, and wall ms of both.

    Warm: the parsed annotations are cached, as on every sync after the first that saw the
    pods. Cold: the cache is emptied before each run, as on that first sync. Paused: the
    garbage collector is disabled while timing, which separates the generator's own cost
    from the collector's occasional full passes (the p99 outliers). One untimed run first.
    """
    dumps(rank_table(variant.job, variant.pods))
    times: dict[str, list[float]] = {"compute": [], "serialise": [], "total": [], "wall": []}
    gc.collect()
    if paused:
        gc.disable()
    for _ in range(repeats):
        if cold:
            clear_annotation_cache()
        compute, wall_compute, table = timed(lambda: rank_table(variant.job, variant.pods))
        serialise, wall_serialise, _text = timed(lambda table=table: dumps(table))
        times["compute"].append(compute)
        times["serialise"].append(serialise)
        times["total"].append(compute + serialise)
        times["wall"].append(wall_compute + wall_serialise)
    gc.enable()
    return times


def describe(variant: Variant) -> str:
    table = rank_table(variant.job, variant.pods)
    size = len(dumps(table))
    ranks = table.get("rank_count") or sum(len(s["device"]) for s in table.get("server_list", []))
    return f"{len(variant.pods)} pods, {ranks} ranks, status {table['status']}, {size:,} bytes"


PARTS = ("compute", "serialise", "total", "wall")


def report(variant: Variant, repeats: int, cold: bool, paused: bool = False) -> float:
    """Print one line; return the p99 of the total CPU time."""
    times = measure(variant, repeats, cold, paused)
    cells = [
        f"{statistics.median(times[part]):7.2f} / {percentile(times[part], 99):6.1f}"
        for part in PARTS
    ]
    kind = ("cold" if cold else "warm") + ("-nogc" if paused else "")
    print(f"{variant.name:<12} {kind:<10}" + "".join(f"{cell:>17}" for cell in cells), flush=True)
    return percentile(times["total"], 99)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed runs per variant")
    parser.add_argument("--quick", action="store_true", help="3 repeats, for the smoke test")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    repeats = 3 if args.quick else max(1, args.repeats)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load {load}, Python {sys.version.split()[0]}")
    print(
        f"{repeats} runs each; milliseconds, median / p99; CPU time of this process, and "
        "wall-clock time of compute + serialise (inflated when the machine is shared)"
    )
    print(f"{'variant':<12} {'':<10}" + "".join(f"{part:>17}" for part in PARTS))
    goal: dict[str, float] = {}
    tables: list[str] = []
    for name in VARIANTS:
        variant = build(name)
        tables.append(f"  {name:<12} {describe(variant)}")
        for cold in (False, True):
            p99 = report(variant, repeats, cold)
            if not cold:
                goal[variant.name] = p99
        if name == "v1.0-1000x8":
            report(variant, repeats, cold=False, paused=True)
        del variant
        clear_annotation_cache()
    print("\n".join(tables))
    for name in ("v1.0-125x8", "v1.0-1000x8"):
        verdict = "within" if goal[name] < GOAL_MS else "OVER"
        print(f"{name}: warm p99 total CPU {goal[name]:.1f} ms, {verdict} the {GOAL_MS:g} ms goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
