"""The real kubectl against the local cluster: everything issue 2 asks kubectl to do."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ascendjob_controller.localcluster.cluster import LocalCluster
from tests.e2e.localcluster.conftest import Kubectl

pytestmark = pytest.mark.e2e
SAMPLE = "manifests/samples/pytorch_multinodes_acjob_910b.yaml"
SAMPLE_NAME = "default-test-pytorch"


def _sample(name: str | None = None, replicas: Any = None) -> str:
    doc = yaml.safe_load(Path(SAMPLE).read_text()) if Path(SAMPLE).exists() else None
    assert doc is not None
    if name:
        doc["metadata"]["name"] = name
    if replicas is not None:
        doc["spec"]["replicaSpecs"]["Master"]["replicas"] = replicas
    return yaml.safe_dump(doc)


def _eventually(check: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def test_apply_crds_then_samples_with_default_validation(kubectl: Kubectl, repo_root: Path) -> None:
    out = kubectl("apply", "-f", "manifests/crd/")
    # preloaded as if kubectl-applied: unchanged, and no missing-annotation warning
    assert (
        "customresourcedefinition.apiextensions.k8s.io/ascendjobs.mindxdl.gitee.com unchanged"
        in (out.stdout)
    )
    assert "Warning" not in out.stderr
    out = kubectl("apply", "-f", "manifests/samples/")
    samples = sorted((repo_root / "manifests" / "samples").glob("*.yaml"))
    assert samples
    assert out.stdout.count(" created") >= len(samples), out.stdout
    out = kubectl(
        "wait",
        "--for",
        "condition=established",
        "--timeout=30s",
        "crd/ascendjobs.mindxdl.gitee.com",
    )
    assert "condition met" in out.stdout


def test_get_acjob_prints_the_printer_columns(kubectl: Kubectl, ns: str) -> None:
    kubectl("apply", "-n", ns, "-f", "-", stdin=_sample())
    out = kubectl("get", "acjob", "-n", ns)
    header, *rows = out.stdout.strip().splitlines()
    assert header.split() == ["NAME", "STATUS", "AGE", "RESTARTS"]
    assert rows and rows[0].split()[0] == SAMPLE_NAME


def test_get_acjob_yaml_round_trips(kubectl: Kubectl, ns: str) -> None:
    # `create`, not `apply`: replace would refresh apply's last-applied annotation.
    kubectl("create", "-n", ns, "-f", "-", stdin=_sample())
    first = kubectl("get", "acjob", SAMPLE_NAME, "-n", ns, "-o", "yaml").stdout
    doc = yaml.safe_load(first)
    assert doc["kind"] == "AscendJob"
    assert doc["spec"] == yaml.safe_load(_sample())["spec"]
    kubectl("replace", "-f", "-", stdin=first)
    again = yaml.safe_load(kubectl("get", "acjob", SAMPLE_NAME, "-n", ns, "-o", "yaml").stdout)
    assert again == doc  # replacing with what we read changes nothing, not even the RV


def test_apply_twice_is_a_no_op_then_a_change_is_applied(kubectl: Kubectl, ns: str) -> None:
    assert "created" in kubectl("apply", "-n", ns, "-f", "-", stdin=_sample()).stdout
    rv = kubectl(
        "get", "acjob", SAMPLE_NAME, "-n", ns, "-o", "jsonpath={.metadata.resourceVersion}"
    ).stdout
    assert "unchanged" in kubectl("apply", "-n", ns, "-f", "-", stdin=_sample()).stdout
    assert (
        kubectl(
            "get", "acjob", SAMPLE_NAME, "-n", ns, "-o", "jsonpath={.metadata.resourceVersion}"
        ).stdout
        == rv
    )
    out = kubectl("apply", "-n", ns, "-f", "-", stdin=_sample(replicas=3))
    assert "configured" in out.stdout
    got = kubectl(
        "get",
        "acjob",
        SAMPLE_NAME,
        "-n",
        ns,
        "-o",
        "jsonpath={.spec.replicaSpecs.Master.replicas} {.metadata.generation}",
    ).stdout
    assert got == "3 2"


def test_apply_server_side(kubectl: Kubectl, ns: str) -> None:
    out = kubectl("apply", "--server-side", "-n", ns, "-f", "-", stdin=_sample())
    assert "serverside-applied" in out.stdout
    rv = kubectl(
        "get", "acjob", SAMPLE_NAME, "-n", ns, "-o", "jsonpath={.metadata.resourceVersion}"
    ).stdout
    time.sleep(1.1)  # a later apply of the same configuration is still a no-op
    kubectl("apply", "--server-side", "-n", ns, "-f", "-", stdin=_sample())
    assert (
        kubectl(
            "get", "acjob", SAMPLE_NAME, "-n", ns, "-o", "jsonpath={.metadata.resourceVersion}"
        ).stdout
        == rv
    )
    out = kubectl("apply", "--server-side", "-n", ns, "-f", "-", stdin=_sample(replicas=2))
    assert "serverside-applied" in out.stdout
    obj = json.loads(
        kubectl("get", "acjob", SAMPLE_NAME, "-n", ns, "-o", "json", "--show-managed-fields").stdout
    )
    assert obj["spec"]["replicaSpecs"]["Master"]["replicas"] == 2
    managers = [m["manager"] for m in obj["metadata"].get("managedFields", [])]
    assert "kubectl" in managers


def test_patch_pod_status_subresource(kubectl: Kubectl, ns: str) -> None:
    kubectl("run", "p1", "-n", ns, "--image=busybox:1.36", "--restart=Never")
    out = kubectl(
        "patch",
        "pod",
        "p1",
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Running","podIP":"10.244.0.9"}}',
    )
    assert "patched" in out.stdout
    got = kubectl(
        "get", "pod", "p1", "-n", ns, "-o", "jsonpath={.status.phase} {.status.podIP}"
    ).stdout
    assert got == "Running 10.244.0.9"


def test_delete_acjob_garbage_collects_owned_pods(kubectl: Kubectl, ns: str) -> None:
    kubectl("apply", "-n", ns, "-f", "-", stdin=_sample())
    uid = kubectl("get", "acjob", SAMPLE_NAME, "-n", ns, "-o", "jsonpath={.metadata.uid}").stdout
    ref = {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "name": SAMPLE_NAME,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    for i in range(2):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{SAMPLE_NAME}-worker-{i}", "ownerReferences": [ref]},
            "spec": {"containers": [{"name": "ascend", "image": "pytorch-test:latest"}]},
        }
        kubectl("create", "-n", ns, "-f", "-", stdin=json.dumps(pod))
    assert len(kubectl("get", "pods", "-n", ns, "-o", "name").stdout.split()) == 2
    out = kubectl("delete", "acjob", SAMPLE_NAME, "-n", ns)
    assert f'"{SAMPLE_NAME}" deleted' in out.stdout
    assert _eventually(lambda: kubectl("get", "pods", "-n", ns, "-o", "name").stdout == "")


def test_get_pods_watch_streams_changes(
    bare_cluster: LocalCluster, kubectl_bin: str, kubectl: Kubectl, ns: str
) -> None:
    proc = subprocess.Popen(
        [
            kubectl_bin,
            "--kubeconfig",
            str(bare_cluster.kubeconfig_path),
            "get",
            "pods",
            "-w",
            "-n",
            ns,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        time.sleep(1.0)  # let the watch open
        kubectl("run", "watched", "-n", ns, "--image=busybox:1.36", "--restart=Never")
        assert _eventually(lambda: any(line.startswith("watched") for line in lines))
        kubectl(
            "patch",
            "pod",
            "watched",
            "-n",
            ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            '{"status":{"phase":"Running"}}',
        )
        assert _eventually(lambda: any("Running" in line for line in lines)), lines
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert lines[0].split()[:3] == ["NAME", "READY", "STATUS"]


def test_invalid_job_is_rejected_with_invalid_value(kubectl: Kubectl, ns: str) -> None:
    out = kubectl(
        "apply", "-n", ns, "-f", "-", stdin=_sample(name="bad", replicas="two"), check=False
    )
    assert out.returncode != 0
    assert "Invalid value" in out.stderr
    assert "spec.replicaSpecs.Master.replicas" in out.stderr
    missing = kubectl("get", "acjob", "bad", "-n", ns, check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr


def test_unknown_field_is_rejected_by_strict_validation(kubectl: Kubectl, ns: str) -> None:
    doc = yaml.safe_load(_sample(name="strict"))
    doc["spec"]["notAField"] = 1
    out = kubectl("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump(doc), check=False)
    assert out.returncode != 0
    assert 'unknown field "spec.notAField"' in out.stderr


def test_a_built_in_kinds_unknown_field_is_refused_or_warned_about(
    kubectl: Kubectl, ns: str
) -> None:
    """kubectl asks for Strict by default, and Warn with --validate=warn; the field is
    dropped as kube-apiserver drops it (builtin_fields.py)."""
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "typo"},
        "data": {"a": "1"},
        "dta": {"b": "2"},
    }
    out = kubectl("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump(doc), check=False)
    assert out.returncode != 0
    assert 'strict decoding error: unknown field "dta"' in out.stderr
    out = kubectl("apply", "-n", ns, "--validate=warn", "-f", "-", stdin=yaml.safe_dump(doc))
    assert 'Warning: unknown field "dta"' in out.stderr
    stored = json.loads(kubectl("get", "configmap", "typo", "-n", ns, "-o", "json").stdout)
    assert stored["data"] == {"a": "1"} and "dta" not in stored


def test_api_resources_lists_short_names(kubectl: Kubectl) -> None:
    out = kubectl("api-resources").stdout
    line = next(row for row in out.splitlines() if row.startswith("ascendjobs"))
    assert "acjob" in line.split()


def test_typed_create_commands_send_protobuf_and_work(kubectl: Kubectl, ns: str) -> None:
    kubectl("create", "configmap", "cfg", "-n", ns, "--from-literal=a=1", "--from-literal=b=2")
    data = json.loads(kubectl("get", "configmap", "cfg", "-n", ns, "-o", "json").stdout)["data"]
    assert data == {"a": "1", "b": "2"}
    kubectl("create", "serviceaccount", "robot", "-n", ns)
    assert kubectl("get", "sa", "robot", "-n", ns, "-o", "name").stdout.strip() == (
        "serviceaccount/robot"
    )


def test_typed_create_of_workload_and_rbac_kinds(kubectl: Kubectl, ns: str) -> None:
    kubectl(
        "create", "deployment", "web", "-n", ns, "--image=nginx:1.27", "--port=80", "--replicas=2"
    )
    deploy = json.loads(kubectl("get", "deploy", "web", "-n", ns, "-o", "json").stdout)
    assert deploy["spec"]["replicas"] == 2
    assert deploy["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["ports"][0]["containerPort"]) == ("nginx:1.27", 80)
    kubectl("create", "service", "clusterip", "web", "-n", ns, "--tcp=80:8080")
    svc = json.loads(kubectl("get", "svc", "web", "-n", ns, "-o", "json").stdout)
    assert svc["spec"]["ports"][0]["targetPort"] == 8080
    assert svc["spec"]["clusterIP"].startswith("10.")
    kubectl("create", "role", "reader", "-n", ns, "--verb=get,list", "--resource=pods")
    kubectl(
        "create",
        "rolebinding",
        "reader",
        "-n",
        ns,
        "--role=reader",
        f"--serviceaccount={ns}:default",
    )
    binding = json.loads(kubectl("get", "rolebinding", "reader", "-n", ns, "-o", "json").stdout)
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "reader",
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "default", "namespace": ns}]
