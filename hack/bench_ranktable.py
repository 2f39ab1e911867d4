"""Benchmark the rank table generator: computing hccl.json, cold and warm (docs/ranktable.md).

Issue 9's goal: a 1,000-pod table is computed in well under 50 ms, so that the reconciler can
recompute it on every sync of a large job. Each variant is a job and its pods, built in the
measuring process (the controller's own pod bodies from desired.py, allocated the way the
device plugin annotates them):

  v1.0-125x8     pytorch, Master + 124 Workers, 8 devices each (1,000 ranks)
  v1.0-1000x8    pytorch, Master + 999 Workers, 8 devices each (8,000 ranks)
  v1.2-1000x8    the same with sp-block 64 and super_device_ids (super_pod_list of 125)
  v2.0-1000x8    huawei.com/npu, each device with a four-level level_list
  init-1000x8    v1.0-1000x8 with the last pod's annotation missing (the longest way to
                 "initializing": every other pod is read first)

Two paths are timed, each from the pods to the hccl.json text:
  text   rank_table_text(job, pods), the text the writer stores
  dict   dumps(rank_table(job, pods)), the table as dicts, then encoded

Cold is the first call in a fresh process: a child process imports everything, builds the
variant, collects garbage, and only then times its one call, so neither imports nor building
the pods are counted, and every memo starts empty, as after a controller restart. Warm is the
same process calling again, as on every sync after the first: REPEATS runs after one untimed
call. Times are CPU milliseconds of the measuring process (and wall-clock, which neighbours on
a shared machine inflate), p50 / p99 by nearest rank: of the default 20 cold runs, the p99 is
the slowest. The floor of a cold table, timed the same way, is json.loads of every pod's
device annotation, which no cold table can skip. Each table's size is checked against the
1 MiB a ConfigMap's data may hold.

No network. `--quick` shrinks the runs so a smoke test finishes at once; its figures mean
little. Nothing here asserts a time: the figures are for docs/ranktable.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ascendjob_controller.job import ranktable
from ascendjob_controller.job.desired import desired_pod
from ascendjob_controller.job.ranktable import ANNOTATION_DEVICES
from ascendjob_controller.job.types import parse_job

UID = "bench-0000-0000-0000-000000000000"
GOAL_MS = 50.0
#: A `version` value as the writer stores it beside hccl.json (ten digits of Unix time).
VERSION_STAMP = "1767225600"
#: Fresh processes that time the decoding floor (a median is enough for a floor).
FLOOR_RUNS = 5


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


def timed(work: Callable[[], Any]) -> tuple[float, float]:
    """(CPU ms, wall ms) of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    work()
    return (time.process_time() - cpu) * 1e3, (time.perf_counter() - wall) * 1e3


#: The timed paths, each from the pods to the hccl.json text (see the module docstring).
PATHS: dict[str, Callable[[Variant], str]] = {
    "text": lambda v: ranktable.rank_table_text(v.job, v.pods),
    "dict": lambda v: ranktable.dumps(ranktable.rank_table(v.job, v.pods)),
}


@dataclass
class Times:
    """CPU and wall milliseconds of a series of runs."""

    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)

    def add(self, cpu: float, wall: float) -> None:
        self.cpu.append(cpu)
        self.wall.append(wall)

    def cells(self) -> str:
        def pair(values: list[float]) -> str:
            return f"{percentile(values, 50):7.1f} /{percentile(values, 99):6.1f}"

        return f"{pair(self.cpu)}  {pair(self.wall)}"


def warm(variant: Variant, path: str, repeats: int) -> Times:
    """`repeats` calls after an untimed first one, in this process (the memo filled)."""
    run = PATHS[path]
    run(variant)
    times = Times()
    for _ in range(repeats):
        times.add(*timed(lambda: run(variant)))
    return times


def decode(variant: Variant) -> int:
    """json.loads of every pod's device annotation, each dropped at once as a table does: the
    floor of a cold table, which must decode them all. Returns how many."""
    notes = [pod["metadata"]["annotations"].get(ANNOTATION_DEVICES) for pod in variant.pods]
    decoded = 0
    for text in notes:
        if text:
            json.loads(text)
            decoded += 1
    return decoded


def cold_child(name: str, path: str) -> None:
    """In a fresh process: build the variant, then time the first call only (printed as JSON).

    `path` "decode" times `decode` instead, in the same conditions."""
    variant = build(name)
    work: Callable[[Variant], object] = decode if path == "decode" else PATHS[path]
    gc.collect()
    cpu, wall = timed(lambda: work(variant))
    print(json.dumps({"cpu": cpu, "wall": wall}))


def cold(name: str, path: str, runs: int) -> Times:
    """The first call of `runs` fresh processes."""
    times = Times()
    for _ in range(runs):
        command = [sys.executable, __file__, "--cold-child", name, "--path", path]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        result = json.loads(out.splitlines()[-1])
        times.add(result["cpu"], result["wall"])
    return times


def describe(variant: Variant) -> str:
    """Pods, ranks, status and size of the variant's table, and whether a ConfigMap holds it."""
    text = ranktable.rank_table_text(variant.job, variant.pods)
    table = json.loads(text)
    ranks = table.get("rank_count") or sum(len(s["device"]) for s in table.get("server_list", []))
    fits = "fits" if ranktable.configmap_fits(text, VERSION_STAMP) else "TOO LARGE for"
    return (
        f"{variant.name:<12} {len(variant.pods):>5} pods {ranks:>5} ranks  {table['status']:<12}"
        f" {len(text):>10,} bytes  {fits} a ConfigMap (1 MiB)"
    )


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def measure_variant(name: str, paths: list[str], repeats: int, runs: int) -> list[str]:
    """Print one row per path; return the description and goal verdict lines."""
    variant = build(name)
    lines = [describe(variant)]
    floor = percentile(cold(name, "decode", min(runs, FLOOR_RUNS)).cpu, 50)
    for path in paths:
        warm_times = warm(variant, path, repeats)
        ranktable.clear_annotation_cache()
        cold_times = cold(name, path, runs)
        print(f"{name:<12} {path:<5} {cold_times.cells()}   {warm_times.cells()}", flush=True)
        worst = max(percentile(cold_times.cpu, 99), percentile(warm_times.cpu, 99))
        verdict = "within" if worst < GOAL_MS else "OVER"
        lines.append(
            f"  {name} {path}: p99 CPU cold {percentile(cold_times.cpu, 99):.1f} ms, warm "
            f"{percentile(warm_times.cpu, 99):.1f} ms: {verdict} the {GOAL_MS:g} ms goal"
            f" (decoding the annotations alone, cold: {floor:.1f} ms)"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="warm runs per variant")
    parser.add_argument("--cold", type=int, default=20, help="fresh processes per variant")
    parser.add_argument("--quick", action="store_true", help="3 warm runs and 2 cold ones")
    parser.add_argument("--only", action="append", choices=sorted(VARIANTS), help="variant")
    parser.add_argument("--path", action="append", choices=[*PATHS, "decode"], help="timed")
    parser.add_argument("--cold-child", metavar="VARIANT", help=argparse.SUPPRESS)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    paths = [p for p in args.path or PATHS if p != "decode"]
    if args.cold_child:
        cold_child(args.cold_child, args.path[0])
        return 0
    repeats, runs = (3, 2) if args.quick else (max(1, args.repeats), max(1, args.cold))
    print(f"machine: {os.cpu_count()} CPUs, load {load()}, Python {sys.version.split()[0]}")
    print(
        f"milliseconds, p50 / p99: cold = the first call of {runs} fresh processes, warm = "
        f"{repeats} calls after the first in one process; CPU of the measuring process, then "
        "wall-clock (inflated when the machine is shared)"
    )
    print(f"{'variant':<12} {'path':<5} {'cold CPU':>15}  {'cold wall':>15}   ", end="")
    print(f"{'warm CPU':>15}  {'warm wall':>15}")
    lines: list[str] = []
    for name in args.only or list(VARIANTS):
        lines += measure_variant(name, paths, repeats, runs)
        ranktable.clear_annotation_cache()
    print("\n".join(lines))
    print(f"load after the run: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
