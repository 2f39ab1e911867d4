"""Where a job's rank table goes, decided from the job alone."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.job.ranktable_targets import NONE, RankTableTargets, targets_of


def job(*templates: dict[str, Any], name: str = "j", namespace: str = "ns") -> dict[str, Any]:
    specs = {f"R{i}": {"replicas": 1, "template": t} for i, t in enumerate(templates)}
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"replicaSpecs": specs}}


def template(volumes: list[Any] | None = None, npus: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "ascend", "image": "x"}
    if npus:
        container["resources"] = {"limits": {"huawei.com/Ascend910": npus}}
    spec: dict[str, Any] = {"containers": [container]}
    if volumes is not None:
        spec["volumes"] = volumes
    return {"spec": spec}


CM = {"name": "cfg", "configMap": {"name": "rings-config-j"}}
OTHER_CM = {"name": "cfg", "configMap": {"name": "rings-config-other"}}
FILE = {"name": "ranktable", "hostPath": {"path": "/user/mindx-dl/ranktable/ns.j"}}


@pytest.mark.parametrize(
    ("the_job", "expected"),
    [
        # CPU-only, nothing mounted: no rank table at all.
        (job(template()), NONE),
        # NPUs but no volume: nobody reads a table, none is written.
        (job(template(npus=8)), NONE),
        # The template mounts the ConfigMap: created before the pods when missing.
        (job(template([CM])), RankTableTargets("rings-config-j", True, None)),
        # Only one replica type mounts it: that is enough.
        (job(template(npus=8), template([CM])), RankTableTargets("rings-config-j", True, None)),
        # Another job's ConfigMap is not ours to create.
        (job(template([OTHER_CM])), NONE),
        # File mode, by the volume's exact name.
        (job(template([FILE])), RankTableTargets(None, False, "ns.j")),
        (job(template([{**FILE, "name": "RankTable"}])), NONE),
        (job(template([CM, FILE], npus=8)), RankTableTargets("rings-config-j", True, "ns.j")),
    ],
)
def test_targets(the_job: dict[str, Any], expected: RankTableTargets) -> None:
    assert targets_of(the_job) == expected


@pytest.mark.parametrize(
    "broken",
    [
        {},
        {"metadata": "x"},
        {"metadata": {"name": "", "namespace": "ns"}},
        {"metadata": {"name": "j"}},
        {"metadata": {"name": "j", "namespace": "ns"}, "spec": []},
        {"metadata": {"name": "j", "namespace": "ns"}, "spec": {"replicaSpecs": {"W": 3}}},
        job({"spec": {"volumes": "ranktable", "containers": "x"}}),
        job({"spec": {"volumes": [None, 1, {"configMap": "rings-config-j"}]}}),
    ],
)
def test_malformed_jobs_have_no_targets_and_never_raise(broken: dict[str, Any]) -> None:
    assert targets_of(broken) == NONE
