"""The rank table (hccl.json) against the API server: ConfigMap and file mode, end to end.

The test plays the device plugin and kubelet: it writes each pod's device annotation, podIP and
hostIP as they would, and reads back what the controller stored. No kubelet runs, so nothing
else touches the pods.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller import metrics
from ascendjob_controller.controller import AscendJobController, ControllerOptions
from ascendjob_controller.kube.client import ASCENDJOBS, CONFIGMAPS, PODS, ApiError, KubeClient
from tests.integration.controller.helpers import (
    Kubelet,
    fresh_namespace,
    job_events,
    make_client,
    pytorch_job,
    wait_event,
    wait_for,
    wait_pods,
    wait_state,
)

pytestmark = pytest.mark.integration

DEVICES = "ascend.kubectl.kubernetes.io/ascend-910-configuration"
NPUS = 8


@pytest.fixture(scope="module")
def ranktable_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ranktable")


@pytest.fixture(scope="module")
def controller(bare_cluster: Any, ranktable_dir: Path) -> Iterator[AscendJobController]:
    ctl = AscendJobController(
        make_client(bare_cluster),
        ControllerOptions(workers=4, gang_scheduling=False, ranktable_dir=str(ranktable_dir)),
    )
    ctl.start()
    yield ctl
    ctl.stop(10.0)


def npu_job(name: str, volume: dict[str, Any], *, policy: str = "ExitCode") -> dict[str, Any]:
    """Master + 2 Workers with 8 NPUs each, every replica mounting `volume`."""
    job = pytorch_job(name, workers=2, policy=policy)
    for spec in job["spec"]["replicaSpecs"].values():
        pod_spec = spec["template"]["spec"]
        container = pod_spec["containers"][0]
        container["resources"] = {"limits": {"huawei.com/Ascend910": NPUS}}
        container["volumeMounts"] = [{"name": volume["name"], "mountPath": "/user/config"}]
        pod_spec["volumes"] = [volume]
    return job


def configmap_volume(job: str) -> dict[str, Any]:
    return {"name": "ascend-910-config", "configMap": {"name": f"rings-config-{job}"}}


def allocate(kube: KubeClient, kubelet: Kubelet, pod: dict[str, Any], node: int) -> None:
    """What the kubelet and device plugin write: Running on node `node`, 8 of its devices.

    The annotation goes last: it completes the allocation, so no table is ever built from
    the placeholder addresses `Kubelet.running` writes first.
    """
    host = f"10.0.0.{node}"
    meta = pod["metadata"]
    kubelet.running(pod)
    kube.patch(
        PODS,
        meta["namespace"],
        meta["name"],
        {"status": {"podIP": f"172.16.{node}.5", "hostIP": host}},
        subresource="status",
    )
    devices = [{"device_id": str(i), "device_ip": f"192.168.{i}.{node}"} for i in range(NPUS)]
    value = {"pod_name": meta["name"], "server_id": host, "devices": devices}
    kube.patch(
        PODS,
        meta["namespace"],
        meta["name"],
        {"metadata": {"annotations": {DEVICES: json.dumps(value)}}},
    )


def configmap_writes(result: str = "success") -> float:
    return (
        metrics.REGISTRY.get_sample_value(
            "ascendjob_ranktable_writes_total", {"target": "configmap", "result": result}
        )
        or 0.0
    )


def stored_table(kube: KubeClient, ns: str, name: str) -> dict[str, Any] | None:
    try:
        cm = kube.get(CONFIGMAPS, ns, f"rings-config-{name}")
    except Exception:
        return None
    data = cm.get("data") or {}
    return {"table": json.loads(data["hccl.json"]), "version": data.get("version")}


def wait_table(kube: KubeClient, ns: str, name: str, status: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        stored = stored_table(kube, ns, name)
        return stored if stored and stored["table"].get("status") == status else None

    return wait_for(check, f"rank table of {name} {status}")


def expected_server(node: int, first_rank: int) -> dict[str, Any]:
    return {
        "device": [
            {
                "device_id": str(i),
                "device_ip": f"192.168.{i}.{node}",
                "rank_id": str(first_rank + i),
            }
            for i in range(NPUS)
        ],
        "server_id": f"10.0.0.{node}",
        "host_ip": f"10.0.0.{node}",
        "container_ip": f"172.16.{node}.5",
    }


def test_configmap_is_created_first_then_completed_and_follows_a_replacement(
    bare_cluster: Any, controller: AscendJobController, kubelet: Kubelet
) -> None:
    kube = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    writes_before = configmap_writes()
    kube.create(ASCENDJOBS, ns, npu_job("rt", configmap_volume("rt")))
    pods = wait_pods(kube, ns, "rt", 3)

    # Created by the controller, owned by the job, before any pod (etcd revisions are ordered).
    cm = kube.get(CONFIGMAPS, ns, "rings-config-rt")
    assert json.loads(cm["data"]["hccl.json"]) == {"status": "initializing"}
    assert [r["kind"] for r in cm["metadata"]["ownerReferences"]] == ["AscendJob"]
    first_pod_rv = min(int(p["metadata"]["resourceVersion"]) for p in pods.values())
    assert int(cm["metadata"]["resourceVersion"]) < first_pod_rv

    # Nodes in an order unlike the ranks: the table is sorted by rank, not by arrival.
    for node, pod_name in ((13, "rt-worker-1"), (11, "rt-master-0"), (12, "rt-worker-0")):
        allocate(kube, kubelet, pods[pod_name], node)
    done = wait_table(kube, ns, "rt", "completed")
    assert done["table"] == {
        "status": "completed",
        "server_list": [expected_server(11, 0), expected_server(12, 8), expected_server(13, 16)],
        "server_count": "3",
        "version": "1.0",
    }
    assert int(done["version"]) > 0
    # Once per change, not once per pod event: the create, then the completed table, though
    # the pods were written nine times meanwhile. The counter is raised after the server
    # answers, so the table can be read a moment before its write is counted: wait for the
    # count to reach 2, then require exactly 2 (every pod event preceded the completed table).
    wait_for(lambda: configmap_writes() - writes_before >= 2 or None, "two ConfigMap writes")
    assert configmap_writes() - writes_before == 2

    # Worker 1 is killed (137 under ExitCode): initializing while it is replaced...
    kubelet.failed(pods["rt-worker-1"], 137)
    wait_table(kube, ns, "rt", "initializing")

    def replaced() -> dict[str, Any] | None:
        pod = wait_pods(kube, ns, "rt", 3).get("rt-worker-1")
        same = pod is None or pod["metadata"]["uid"] == pods["rt-worker-1"]["metadata"]["uid"]
        return None if same else pod

    # ...then completed again with the new pod's address.
    allocate(kube, kubelet, wait_for(replaced, "a new rt-worker-1"), 14)
    again = wait_table(kube, ns, "rt", "completed")
    assert again["table"]["server_list"][2] == expected_server(14, 16)
    assert again["table"]["server_list"][:2] == done["table"]["server_list"][:2]
    assert int(again["version"]) >= int(done["version"])


def test_a_user_created_configmap_is_updated_and_not_taken_over(
    bare_cluster: Any, controller: AscendJobController, kubelet: Kubelet
) -> None:
    kube = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    kube.create(
        CONFIGMAPS,
        ns,
        {
            "metadata": {"name": "rings-config-mine"},
            "data": {"hccl.json": '{"status":"initializing"}', "extra": "kept"},
        },
    )
    kube.create(ASCENDJOBS, ns, npu_job("mine", configmap_volume("mine")))
    pods = wait_pods(kube, ns, "mine", 3)
    for node, pod in enumerate(sorted(pods), start=21):
        allocate(kube, kubelet, pods[pod], node)
    wait_table(kube, ns, "mine", "completed")
    cm = kube.get(CONFIGMAPS, ns, "rings-config-mine")
    assert cm["data"]["extra"] == "kept"
    assert not cm["metadata"].get("ownerReferences")


def test_file_mode_writes_atomically_and_removes_the_directory_with_the_job(
    bare_cluster: Any, controller: AscendJobController, kubelet: Kubelet, ranktable_dir: Path
) -> None:
    kube = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    volume = {"name": "ranktable", "hostPath": {"path": f"/user/mindx-dl/ranktable/{ns}.file"}}
    kube.create(ASCENDJOBS, ns, npu_job("file", volume))
    directory = ranktable_dir / f"{ns}.file"
    hccl = directory / "hccl.json"
    wait_for(lambda: hccl.exists(), "hccl.json written")
    assert json.loads(hccl.read_text()) == {"status": "initializing"}
    assert stat.S_IMODE(hccl.stat().st_mode) == 0o644
    assert stat.S_IMODE(directory.stat().st_mode) == 0o744
    # No ConfigMap is created when no template mounts one.
    assert stored_table(kube, ns, "file") is None

    pods = wait_pods(kube, ns, "file", 3)
    for node, pod in enumerate(sorted(pods), start=31):
        allocate(kube, kubelet, pods[pod], node)
    wait_for(
        lambda: json.loads(hccl.read_text()).get("status") == "completed", "file table completed"
    )
    # hccl.json is replaced before version, so a listing taken right now may catch the
    # version's temporary file in flight; what must hold is that none is ever left behind.
    wait_for(
        lambda: sorted(p.name for p in directory.iterdir()) == ["hccl.json", "version"],
        "only hccl.json and version in the directory (no temporary file left)",
    )
    assert int((directory / "version").read_text()) > 0

    kube.delete(ASCENDJOBS, ns, "file")
    wait_for(lambda: not directory.exists(), "rank-table directory removed")


@pytest.mark.parametrize(
    "annotation",
    [
        "not json",
        "[]",
        '{"server_id": "10.0.0.1", "devices": "0,1"}',
        '{"server_id": 7, "devices": [{"device_id": "0", "device_ip": "1.1.1.1"}]}',
        '{"devices": [{"device_id": "0", "device_ip": "-1"}]}',
        "{" * 5000,
    ],
)
def test_bad_device_annotations_keep_the_table_initializing_and_the_job_going(
    bare_cluster: Any, controller: AscendJobController, kubelet: Kubelet, annotation: str
) -> None:
    kube = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    kube.create(ASCENDJOBS, ns, npu_job("bad", configmap_volume("bad"), policy="Never"))
    pods = wait_pods(kube, ns, "bad", 3)
    for node, name in enumerate(sorted(pods), start=41):
        allocate(kube, kubelet, pods[name], node)
    victim = pods["bad-worker-0"]["metadata"]
    kube.patch(PODS, ns, victim["name"], {"metadata": {"annotations": {DEVICES: annotation}}})
    # The job still runs; its table waits for a readable annotation, and never crashed anything:
    # a good job started afterwards gets its completed table.
    wait_state(kube, ns, "bad", "Running")
    wait_table(kube, ns, "bad", "initializing")
    kube.create(ASCENDJOBS, ns, npu_job("good", configmap_volume("good"), policy="Never"))
    good = wait_pods(kube, ns, "good", 3)
    for node, name in enumerate(sorted(good), start=51):
        allocate(kube, kubelet, good[name], node)
    wait_table(kube, ns, "good", "completed")
    assert stored_table(kube, ns, "bad") is not None
    assert stored_table(kube, ns, "bad")["table"] == {"status": "initializing"}  # type: ignore[index]


def test_a_failed_write_is_a_warning_event_and_is_retried(
    bare_cluster: Any, controller: AscendJobController, kubelet: Kubelet, mocker: MockerFixture
) -> None:
    kube = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    kube.create(ASCENDJOBS, ns, npu_job("flaky", configmap_volume("flaky"), policy="Never"))
    pods = wait_pods(kube, ns, "flaky", 3)
    real_patch = KubeClient.patch
    failures = {"left": 2}

    def patch(self: KubeClient, res: Any, namespace: Any, name: str, *args: Any, **kw: Any) -> Any:
        if res is CONFIGMAPS and namespace == ns and failures["left"] > 0:
            failures["left"] -= 1
            raise ApiError(500, "InternalError", "etcd is down")
        return real_patch(self, res, namespace, name, *args, **kw)

    errors_before = configmap_writes("error")
    mocker.patch.object(KubeClient, "patch", patch)
    for node, name in enumerate(sorted(pods), start=61):
        allocate(kube, kubelet, pods[name], node)
    event = wait_event(kube, ns, "flaky", "RankTableWriteFailed")
    assert event["type"] == "Warning"
    assert "etcd is down" in event["message"]
    wait_table(kube, ns, "flaky", "completed")  # the back-off retry got through
    assert failures["left"] == 0
    # Each failed write was counted (before its reconcile ended, so before the retry that
    # stored the table): only this namespace's patches fail, so exactly these two.
    assert configmap_writes("error") - errors_before == 2


def test_a_table_too_large_for_its_configmap_is_one_warning_and_not_retried(
    bare_cluster: Any, controller: AscendJobController, kubelet: Kubelet, mocker: MockerFixture
) -> None:
    """Past 1 MiB (a v2.0 table of ~300 pods), retrying can only repeat the refusal."""
    from ascendjob_controller.job import ranktable

    fits = ranktable.configmap_fits

    def completed_never_fits(content: str, version: str = "") -> bool:
        return '"completed"' not in content and fits(content, version)

    mocker.patch.object(ranktable, "configmap_fits", completed_never_fits)
    kube = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    kube.create(ASCENDJOBS, ns, npu_job("huge", configmap_volume("huge"), policy="Never"))
    pods = wait_pods(kube, ns, "huge", 3)
    too_large_before = configmap_writes("too_large")
    for node, name in enumerate(sorted(pods), start=71):
        allocate(kube, kubelet, pods[name], node)
    event = wait_event(kube, ns, "huge", "RankTableTooLarge")
    assert event["type"] == "Warning"
    assert "file mode" in event["message"], event["message"]
    # The job goes on (allocate ran its pods); more pod events re-plan it, and the same
    # table is not reported again.
    wait_state(kube, ns, "huge", "Running")
    for pod in pods.values():
        kubelet.succeeded(pod)
    wait_state(kube, ns, "huge", "Succeeded")
    controller.recorder.flush(10.0)
    reports = [e for e in job_events(kube, ns, "huge") if e["reason"] == "RankTableTooLarge"]
    assert [int(e.get("count") or 1) for e in reports] == [1]
    assert configmap_writes("too_large") - too_large_before == 1
    assert not [e for e in job_events(kube, ns, "huge") if e["reason"] == "RankTableWriteFailed"]
    stored = stored_table(kube, ns, "huge")
    assert stored is not None and stored["table"] == {"status": "initializing"}
