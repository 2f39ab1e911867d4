"""End to end: the real kubectl, the local cluster's simulated kubelet, our controller.

The samples in manifests/samples/ are applied with `kubectl apply` (the simulated run time
shortened to keep the suite quick) and followed with `kubectl get acjob`, the way a user
would watch them. The controller runs in-process against the cluster's kubeconfig.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ascendjob_controller.controller import AscendJobController, ControllerOptions
from ascendjob_controller.kube.client import KubeClient
from ascendjob_controller.localcluster.cluster import LocalCluster
from tests import identity
from tests.conftest import start_cluster

pytestmark = pytest.mark.e2e

SAMPLES = Path(__file__).resolve().parents[3] / "manifests" / "samples"
SEED = "pytorch_multinodes_acjob_910b.yaml"  # applied exactly as shipped
FRAMEWORK_SAMPLES = ("acjob_pytorch.yaml", "acjob_mindspore.yaml", "acjob_tensorflow.yaml")
EXITCODE_SAMPLE = "acjob_restart_exitcode.yaml"  # a Worker scripted "137,0"
RUN_SECONDS = "2"  # long enough for `kubectl get` to catch the job before it finishes
WAIT = 120.0
TERMINAL = ("Succeeded", "Failed")

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Two simulated nodes (16 NPUs): the samples applied together need 11, and a pod the
    device plugin cannot serve would leave its job's rank table initializing."""
    cluster = start_cluster(tmp_path_factory.mktemp("lc") / "kubeconfig", kubelet=True, nodes=2)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def controller(
    local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AscendJobController]:
    """The controller, as the ServiceAccount of manifests/ on a real cluster.

    Every test of the module must get by with the RBAC we ship: a single 403 fails it.
    """
    kubeconfig = identity.controller_kubeconfig(local_cluster, tmp_path_factory.mktemp("id"))
    forbidden_before = identity.forbidden_responses()
    client = KubeClient.from_kubeconfig(str(kubeconfig))
    ctl = AscendJobController(client, ControllerOptions(workers=4))
    ctl.start()
    yield ctl
    ctl.stop(10.0)
    forbidden = identity.forbidden_responses() - forbidden_before
    assert forbidden == 0, f"the controller got {forbidden:.0f} 403 responses"


@pytest.fixture(scope="module")
def kubectl(local_cluster: LocalCluster, kubectl_bin: str) -> Kubectl:
    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        cmd = [kubectl_bin, "--kubeconfig", str(local_cluster.kubeconfig_path), *args]
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    return run


def _shortened(doc: dict[str, Any]) -> dict[str, Any]:
    """The sample with every simulated run shortened; exit-code scripts are kept."""
    for spec in doc["spec"]["replicaSpecs"].values():
        meta = spec["template"].setdefault("metadata", {})
        meta.setdefault("annotations", {})["sim.acjob.local/run-seconds"] = RUN_SECONDS
    return doc


def _load(name: str, *, shorten: bool = True) -> dict[str, Any]:
    doc = yaml.safe_load((SAMPLES / name).read_text())
    assert isinstance(doc, dict) and doc["kind"] == "AscendJob", name
    return _shortened(doc) if shorten else doc


def _table(kubectl: Kubectl, ns: str) -> dict[str, list[str]]:
    """`kubectl get acjob` rows by name: [STATUS, AGE, RESTARTS] as printed.

    Cells are cut at the header's column positions (kubectl aligns them), so an empty STATUS
    (a job whose status is not written yet: a real server prints nothing there, the local one
    `<none>`) reads as "<none>" instead of shifting AGE into its place.
    """
    lines = kubectl("get", "acjob", "-n", ns).stdout.splitlines()
    if not lines:
        return {}
    header = lines[0]
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")]
    rows: dict[str, list[str]] = {}
    for line in lines[1:]:
        bounds = zip(starts, [*starts[1:], None], strict=True)
        cells = [line[a:b].strip() or "<none>" for a, b in bounds]
        rows[cells[0]] = cells[1:]
    return rows


def _follow(kubectl: Kubectl, ns: str, names: list[str]) -> dict[str, list[str]]:
    """Poll `kubectl get acjob` until every job is terminal; the distinct STATUS values seen."""
    seen: dict[str, list[str]] = {name: [] for name in names}
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        rows = _table(kubectl, ns)
        for name in names:
            status = rows.get(name, ["<none>"])[0]
            if status != "<none>" and (not seen[name] or seen[name][-1] != status):
                seen[name].append(status)
        if all(seen[n] and seen[n][-1] in TERMINAL for n in names):
            return seen
        threading.Event().wait(0.2)
    raise AssertionError(f"jobs did not finish in {WAIT}s; STATUS values seen: {seen}")


def test_samples_reach_succeeded_with_status_column_moving(
    kubectl: Kubectl, controller: AscendJobController
) -> None:
    ns = f"e2e-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", ns)
    docs = [_load(SEED, shorten=False)] + [_load(n) for n in FRAMEWORK_SAMPLES]
    docs.append(_load(EXITCODE_SAMPLE))
    names = [d["metadata"]["name"] for d in docs]
    assert {d["metadata"]["labels"]["framework"] for d in docs} == {
        "pytorch",
        "mindspore",
        "tensorflow",
    }
    kubectl("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump_all(docs))

    seen = _follow(kubectl, ns, names)
    print("STATUS values seen:", seen)
    for name in names:
        assert seen[name][-1] == "Succeeded", f"{name}: STATUS values seen {seen[name]}"
        assert len(seen[name]) >= 2, f"{name}: STATUS never moved, saw only {seen[name]}"
        assert set(seen[name][:-1]) <= {"Created", "Running", "Restarting"}, seen[name]
        state = kubectl(
            "get", "acjob", name, "-n", ns, "-o", "jsonpath={.status.conditions[-1:].type}"
        ).stdout
        assert state == "Succeeded", name
        completion = kubectl(
            "get", "acjob", name, "-n", ns, "-o", "jsonpath={.status.completionTime}"
        ).stdout
        assert completion, f"{name} has no completionTime"

    rows = _table(kubectl, ns)
    exitcode_job = _load(EXITCODE_SAMPLE)["metadata"]["name"]
    assert rows[exitcode_job][0] == "Succeeded"
    assert rows[exitcode_job][-1] == "1", f"RESTARTS of {exitcode_job}: {rows[exitcode_job]}"
    for name in names:
        if name != exitcode_job:
            assert rows[name][-1] == "0", f"RESTARTS of {name}: {rows[name]}"

    # The seed mounts rings-config-<job>: the controller created it, and the simulated device
    # plugin's annotations completed it (Master first: it requests NPUs, so it is rank 0).
    seed = docs[0]["metadata"]["name"]
    text = kubectl(
        "get", "cm", f"rings-config-{seed}", "-n", ns, "-o", r"jsonpath={.data.hccl\.json}"
    ).stdout
    table = json.loads(text)
    assert table["status"] == "completed", table
    assert table["version"] == "1.0" and table["server_count"] == "2", table
    ranks = [d["rank_id"] for server in table["server_list"] for d in server["device"]]
    assert ranks == ["0", "1", "2", "3"], table


RANKTABLE_SAMPLES = {
    # sample: (servers, rank_ids in server order)
    "acjob_pytorch_ranktable.yaml": (3, ["0", "1", "2", "3", "4", "5"]),
    "acjob_mindspore_ranktable.yaml": (2, ["0", "1", "2", "3"]),  # the Scheduler is no server
    "acjob_tensorflow_ranktable.yaml": (2, ["0", "1", "2", "3"]),
}


def test_rank_table_samples_complete_their_tables(
    kubectl: Kubectl, controller: AscendJobController
) -> None:
    ns = f"e2e-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", ns)
    docs = {name: _load(name) for name in RANKTABLE_SAMPLES}
    for doc in docs.values():
        # One at a time, so each job's NPUs fit on the module's two nodes whatever else runs:
        # a pod the simulated device plugin cannot serve runs without devices.
        kubectl("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump(doc))
        name = doc["metadata"]["name"]
        seen = _follow(kubectl, ns, [name])
        assert seen[name][-1] == "Succeeded", (name, seen[name])
    for sample, doc in docs.items():
        name = doc["metadata"]["name"]
        text = kubectl(
            "get", "cm", f"rings-config-{name}", "-n", ns, "-o", r"jsonpath={.data.hccl\.json}"
        ).stdout
        table = json.loads(text)
        servers, ranks = RANKTABLE_SAMPLES[sample]
        assert table["status"] == "completed", (name, table)
        assert table["server_count"] == str(servers), (name, table)
        got = [d["rank_id"] for server in table["server_list"] for d in server["device"]]
        assert got == ranks, (name, table)


def _scripted_job(name: str, policy: str, codes: str) -> dict[str, Any]:
    """A small PyTorch job whose Worker exits with `codes`, run after run."""

    def spec(annotations: dict[str, str]) -> dict[str, Any]:
        return {
            "replicas": 1,
            "restartPolicy": policy,
            "template": {
                "metadata": {"annotations": {"sim.acjob.local/run-seconds": "1", **annotations}},
                "spec": {
                    "containers": [
                        {
                            "name": "ascend",
                            "image": "train:latest",
                            "resources": {"limits": {"huawei.com/Ascend910": 1}},
                        }
                    ]
                },
            },
        }

    return {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": name, "labels": {"framework": "pytorch"}},
        "spec": {
            "replicaSpecs": {
                "Master": spec({}),
                "Worker": spec({"sim.acjob.local/exit-code": codes}),
            }
        },
    }


def test_many_restarting_jobs_count_exactly(
    kubectl: Kubectl, controller: AscendJobController
) -> None:
    """Concurrent jobs, each restarting a known number of times: every count is exact."""
    ns = f"e2e-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", ns)
    expected: dict[str, tuple[str, str]] = {}
    docs = []
    for i in range(4):
        for name, policy, codes, restarts, final in (
            (f"ec-{i}", "ExitCode", "137,0", "1", "Succeeded"),
            (f"ec2-{i}", "ExitCode", "143,137,0", "2", "Succeeded"),
            (f"of-{i}", "OnFailure", "1,1,0", "2", "Succeeded"),
            (f"nv-{i}", "Never", "1", "0", "Failed"),
        ):
            docs.append(_scripted_job(name, policy, codes))
            expected[name] = (final, restarts)
    kubectl("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump_all(docs))
    _follow(kubectl, ns, list(expected))
    rows = _table(kubectl, ns)
    got = {name: (rows[name][0], rows[name][-1]) for name in expected}
    assert got == expected


def test_restart_policy_samples_end_as_their_comments_say(
    kubectl: Kubectl, controller: AscendJobController
) -> None:
    ns = f"e2e-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", ns)
    never = _load("acjob_restart_never.yaml")
    onfailure = _load("acjob_restart_onfailure.yaml")
    always = _load("acjob_restart_always.yaml")
    always["spec"]["runPolicy"]["activeDeadlineSeconds"] = 6  # shipped: 60
    for doc in (never, onfailure, always):
        for spec in doc["spec"]["replicaSpecs"].values():
            spec["template"]["metadata"]["annotations"]["sim.acjob.local/run-seconds"] = "1"
    docs = [never, onfailure, always]
    names = [d["metadata"]["name"] for d in docs]
    kubectl("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump_all(docs))
    _follow(kubectl, ns, names)
    rows = _table(kubectl, ns)

    assert rows[never["metadata"]["name"]][0] == "Failed"
    assert rows[never["metadata"]["name"]][-1] == "0"
    assert rows[onfailure["metadata"]["name"]][0] == "Succeeded"
    assert rows[onfailure["metadata"]["name"]][-1] == "1"
    name = always["metadata"]["name"]
    assert rows[name][0] == "Failed"
    assert int(rows[name][-1]) >= 1, "Always restarts in place, and every restart counts"
    reason = kubectl(
        "get", "acjob", name, "-n", ns, "-o", "jsonpath={.status.conditions[-1:].reason}"
    ).stdout
    assert reason == "DeadlineExceeded"
    # cleanPodPolicy Running: no pod of a finished job is left running.
    phases = kubectl(
        "get", "pods", "-n", ns, "-o", "jsonpath={range .items[*]}{.status.phase}{'\\n'}{end}"
    ).stdout.split()
    assert "Running" not in phases and "Pending" not in phases, phases
