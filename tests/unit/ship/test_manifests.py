"""The manifests parse, render with kustomize, grant least privilege, and run locked down."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

SAMPLES = (
    "acjob_pytorch.yaml",
    "acjob_mindspore.yaml",
    "acjob_tensorflow.yaml",
    "acjob_restart_never.yaml",
    "acjob_restart_onfailure.yaml",
    "acjob_restart_exitcode.yaml",
    "acjob_restart_always.yaml",
    "acjob_pytorch_ranktable.yaml",
    "acjob_mindspore_ranktable.yaml",
    "acjob_tensorflow_ranktable.yaml",
    "pytorch_multinodes_acjob_910b.yaml",
)
LEADERS = {"pytorch": "Master", "mindspore": "Scheduler", "tensorflow": "Chief"}


def kustomize(kubectl: str, path: Path) -> list[dict[str, Any]]:
    out = subprocess.run(
        [kubectl, "kustomize", str(path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


@pytest.fixture(scope="module")
def rendered(kubectl_bin: str, repo_root: Path) -> list[dict[str, Any]]:
    return kustomize(kubectl_bin, repo_root / "manifests")


def one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def test_every_manifest_parses(repo_root: Path) -> None:
    files = sorted((repo_root / "manifests").rglob("*.yaml"))
    assert len(files) >= 20
    for path in files:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        assert docs, path
        for doc in docs:
            assert isinstance(doc, dict) and "kind" in doc and "apiVersion" in doc, path


def test_kustomization_renders_everything(rendered: list[dict[str, Any]]) -> None:
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in rendered)
    assert kinds == sorted(
        [
            ("ClusterRole", "ascendjob-controller"),
            ("ClusterRole", "ascendjob-controller-metrics-reader"),
            ("ClusterRoleBinding", "ascendjob-controller"),
            ("CustomResourceDefinition", "ascendjobs.mindxdl.gitee.com"),
            ("CustomResourceDefinition", "podgroups.scheduling.volcano.sh"),
            ("Deployment", "ascendjob-controller"),
            ("Namespace", "ascendjob-system"),
            ("Role", "ascendjob-controller-leader-election"),
            ("RoleBinding", "ascendjob-controller-leader-election"),
            ("Service", "ascendjob-controller-metrics"),
            ("ServiceAccount", "ascendjob-controller"),
        ]
    )
    for doc in rendered:
        if (
            doc["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding")
            and doc["kind"] != "CustomResourceDefinition"
        ):
            assert doc["metadata"]["namespace"] == "ascendjob-system", doc["kind"]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_cluster_role_is_least_privilege(rendered: list[dict[str, Any]]) -> None:
    role = one(rendered, "ClusterRole", "ascendjob-controller")
    for rule in role["rules"]:
        assert "*" not in list(_strings(rule)), rule
        assert "nonResourceURLs" not in rule
        assert "secrets" not in rule.get("resources", [])
        assert "leases" not in rule.get("resources", []), "leases belong in the namespaced Role"
    granted = {
        (group, resource): set(rule["verbs"])
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    # Exactly what tests/integration/controller/test_rbac_is_used.py sees the controller use.
    children = {"get", "list", "watch", "create", "delete"}
    assert granted == {
        ("mindxdl.gitee.com", "ascendjobs"): {"list", "watch", "delete"},
        ("mindxdl.gitee.com", "ascendjobs/status"): {"patch"},
        ("mindxdl.gitee.com", "ascendjobs/finalizers"): {"update"},
        ("", "pods"): children | {"patch"},
        ("", "services"): children,
        ("", "events"): {"create", "patch"},
        ("", "configmaps"): {"get", "create", "patch"},  # the rank table, never listed
        ("authentication.k8s.io", "tokenreviews"): {"create"},  # --metrics-secure
        ("authorization.k8s.io", "subjectaccessreviews"): {"create"},
        ("scheduling.volcano.sh", "podgroups"): children | {"patch"},
    }


def test_the_metrics_reader_may_only_get_metrics(rendered: list[dict[str, Any]]) -> None:
    role = one(rendered, "ClusterRole", "ascendjob-controller-metrics-reader")
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    # Bound to nobody by us: the cluster's Prometheus gets it by its admin's binding.
    assert not [
        d
        for d in rendered
        if d["kind"] == "ClusterRoleBinding" and d["roleRef"]["name"] == role["metadata"]["name"]
    ]


def test_the_deployment_serves_secure_metrics(rendered: list[dict[str, Any]]) -> None:
    pod = one(rendered, "Deployment")["spec"]["template"]
    assert "--metrics-secure" in pod["spec"]["containers"][0]["args"]
    assert pod["metadata"]["annotations"]["prometheus.io/scheme"] == "https"


def test_no_role_anywhere_touches_secrets_or_wildcards(rendered: list[dict[str, Any]]) -> None:
    for doc in rendered:
        if doc["kind"] in ("Role", "ClusterRole"):
            for rule in doc["rules"]:
                assert "*" not in list(_strings(rule))
                assert "secrets" not in rule.get("resources", [])


def test_leases_only_in_own_namespace(rendered: list[dict[str, Any]]) -> None:
    role = one(rendered, "Role")
    assert role["metadata"]["namespace"] == "ascendjob-system"
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "create", "update"],
        }
    ]
    binding = one(rendered, "RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "ascendjob-controller", "namespace": "ascendjob-system"}
    ]
    cluster_binding = one(rendered, "ClusterRoleBinding")
    assert cluster_binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "ascendjob-controller",
    }
    assert cluster_binding["subjects"] == binding["subjects"]


def test_deployment_is_locked_down(rendered: list[dict[str, Any]]) -> None:
    deployment = one(rendered, "Deployment")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    assert spec["replicas"] == 2
    assert pod["serviceAccountName"] == "ascendjob-controller"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    [container] = pod["containers"]
    sc = container["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["runAsNonRoot"] is True
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["image"] == "ascendjob-controller:0.1.0"
    assert "--leader-elect" in container["args"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8080, "health": 8081}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    for kind in ("requests", "limits"):
        assert set(container["resources"][kind]) == {"cpu", "memory"}
    annotations = spec["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == "8080"
    assert pod["terminationGracePeriodSeconds"] > 30  # beyond --graceful-shutdown-timeout
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()


def test_metrics_service_selects_the_controller(rendered: list[dict[str, Any]]) -> None:
    service = one(rendered, "Service")
    pod_labels = one(rendered, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"] == [
        {"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}
    ]


def test_servicemonitor_component(kubectl_bin: str, repo_root: Path, tmp_path: Path) -> None:
    base = os.path.relpath(repo_root / "manifests", tmp_path)
    component = os.path.relpath(repo_root / "manifests/components/servicemonitor", tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [{base}]\ncomponents: [{component}]\n"
    )
    docs = kustomize(kubectl_bin, tmp_path)
    monitor = one(docs, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["namespace"] == "ascendjob-system"
    service = one(docs, "Service")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]


def test_ranktable_hostpath_component(kubectl_bin: str, repo_root: Path, tmp_path: Path) -> None:
    base = os.path.relpath(repo_root / "manifests", tmp_path)
    component = os.path.relpath(repo_root / "manifests/components/ranktable-hostpath", tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [{base}]\ncomponents: [{component}]\n"
    )
    docs = kustomize(kubectl_bin, tmp_path)
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "ranktable")
    assert volume["hostPath"] == {"path": "/user/mindx-dl/ranktable", "type": "DirectoryOrCreate"}
    container = pod["containers"][0]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "ranktable")
    assert mount["mountPath"] == volume["hostPath"]["path"]
    assert f"--ranktable-dir={mount['mountPath']}" in container["args"]
    # Everything else of the base is kept: the scratch /tmp of the read-only root filesystem,
    # and the controller container's lock-down.
    assert any(m["name"] == "tmp" for m in container["volumeMounts"])
    assert container["securityContext"]["runAsUser"] == 65532
    # Pod Security: baseline and restricted both forbid hostPath; only privileged admits it.
    labels = one(docs, "Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    # The directory is given to the controller's UID by an init container that is root with
    # CAP_CHOWN alone, running the controller's own image on the same mount.
    [init] = pod["initContainers"]
    assert init["image"] == container["image"]
    assert init["command"][-1] == mount["mountPath"]
    assert init["volumeMounts"] == [{"name": "ranktable", "mountPath": mount["mountPath"]}]
    assert init["securityContext"] == {
        "runAsUser": 0,
        "runAsNonRoot": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def test_ranktable_hostpath_init_container_gives_the_directory_to_the_controller(
    kubectl_bin: str, repo_root: Path, tmp_path: Path
) -> None:
    """Its script, run here on a root-owned 0755 directory as DirectoryOrCreate makes it."""
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    base = os.path.relpath(repo_root / "manifests", tmp_path)
    component = os.path.relpath(repo_root / "manifests/components/ranktable-hostpath", tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [{base}]\ncomponents: [{component}]\n"
    )
    pod = one(kustomize(kubectl_bin, tmp_path), "Deployment")["spec"]["template"]["spec"]
    python, flag, script, _ = pod["initContainers"][0]["command"]
    assert (python, flag) == ("python", "-c")
    directory = tmp_path / "ranktable"
    directory.mkdir(mode=0o755)
    os.chown(directory, 0, 0)
    run = [sys.executable, flag, script, str(directory)]
    first = subprocess.run(run, capture_output=True, text=True, timeout=60, check=True)
    assert "-> 65532:65532" in first.stdout
    assert (directory.stat().st_uid, directory.stat().st_gid) == (65532, 65532)
    again = subprocess.run(run, capture_output=True, text=True, timeout=60, check=True)
    assert again.stdout == ""  # already the controller's: nothing to do


# --- samples ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def acjob_schema(repo_root: Path) -> dict[str, Any]:
    crd = yaml.safe_load(
        (repo_root / "manifests/crd/mindxdl.gitee.com_ascendjobs.yaml").read_text()
    )
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def structural_problems(schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """A small structural check: declared fields only, types and enums as the CRD says."""
    kind = schema.get("type")
    types = {"object": dict, "array": list, "string": str, "integer": int, "boolean": bool}
    if (kind in types and not isinstance(value, types[kind])) or (
        kind == "integer" and isinstance(value, bool)
    ):
        return [f"{path}: want {kind}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} not in {schema['enum']}"]
    problems: list[str] = []
    if isinstance(value, dict) and not schema.get("x-kubernetes-preserve-unknown-fields"):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in props:
                problems += structural_problems(props[key], item, f"{path}.{key}")
            elif isinstance(extra, dict):
                problems += structural_problems(extra, item, f"{path}.{key}")
            elif path != ".metadata":
                problems.append(f"{path}.{key}: not declared by the CRD")
        problems += [f"{path}.{r}: required" for r in schema.get("required", []) if r not in value]
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problems += structural_problems(schema["items"], item, f"{path}[{i}]")
    return problems


def test_structural_check_catches_mistakes(acjob_schema: dict[str, Any]) -> None:
    job = {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": "x"},
        "spec": {
            "replicaSpecs": {"Worker": {"replicas": "two", "restartPolicy": "Sometimes"}},
            "runPolicy": {"cleanPodPolicies": "All"},
        },
    }
    assert structural_problems(acjob_schema, job) == [
        ".spec.replicaSpecs.Worker.replicas: want integer, got str",
        ".spec.replicaSpecs.Worker.restartPolicy: 'Sometimes' not in "
        "['Always', 'OnFailure', 'Never', 'ExitCode']",
        ".spec.runPolicy.cleanPodPolicies: not declared by the CRD",
    ]
    assert structural_problems(acjob_schema, {"spec": {}}) == [".spec.replicaSpecs: required"]


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_validates_against_the_crd(
    name: str, repo_root: Path, acjob_schema: dict[str, Any]
) -> None:
    [job] = list(yaml.safe_load_all((repo_root / "manifests/samples" / name).read_text()))
    assert (job["apiVersion"], job["kind"]) == ("mindxdl.gitee.com/v1", "AscendJob")
    assert structural_problems(acjob_schema, job) == []
    if importlib.util.find_spec("ascendjob_controller.localcluster.schema") is not None:
        from ascendjob_controller.localcluster.schema import validate

        assert validate(acjob_schema, job) == []


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_is_a_well_formed_job(name: str, repo_root: Path) -> None:
    job = yaml.safe_load((repo_root / "manifests/samples" / name).read_text())
    framework = job["metadata"]["labels"]["framework"]
    specs = job["spec"]["replicaSpecs"]
    assert set(specs) == {LEADERS[framework], "Worker"}
    assert specs[LEADERS[framework]]["replicas"] == 1
    for spec in specs.values():
        containers = spec["template"]["spec"]["containers"]
        assert "ascend" in [c["name"] for c in containers]
        assert all(c.get("image") for c in containers)


def test_samples_cover_frameworks_and_restart_policies(repo_root: Path) -> None:
    jobs = [yaml.safe_load((repo_root / "manifests/samples" / n).read_text()) for n in SAMPLES]
    frameworks = {j["metadata"]["labels"]["framework"] for j in jobs}
    assert frameworks == set(LEADERS)
    policies = {s["restartPolicy"] for j in jobs for s in j["spec"]["replicaSpecs"].values()}
    assert policies == {"Never", "OnFailure", "ExitCode", "Always"}
    names = [j["metadata"]["name"] for j in jobs]
    assert len(set(names)) == len(names)


def test_failure_samples_carry_sim_annotations(repo_root: Path) -> None:
    exit_codes = {}
    for name in SAMPLES[:-1]:
        job = yaml.safe_load((repo_root / "manifests/samples" / name).read_text())
        assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
        for spec in job["spec"]["replicaSpecs"].values():
            annotations = spec["template"]["metadata"]["annotations"]
            assert int(annotations["sim.acjob.local/run-seconds"]) > 0
            if "sim.acjob.local/exit-code" in annotations:
                exit_codes[name] = annotations["sim.acjob.local/exit-code"]
            # Small: no NFS, no driver mounts; at most the job's own rank-table ConfigMap.
            volumes = spec["template"]["spec"].get("volumes", [])
            ranktable = {"configMap": {"name": f"rings-config-{job['metadata']['name']}"}}
            assert all(
                {k: v for k, v in vol.items() if k != "name"} == ranktable for vol in volumes
            )
    assert exit_codes == {
        "acjob_restart_never.yaml": "1",
        "acjob_restart_onfailure.yaml": "1,0",
        "acjob_restart_exitcode.yaml": "137,0",
        "acjob_restart_always.yaml": "143,0",
    }


def test_samples_directory_holds_only_jobs(repo_root: Path) -> None:
    """`kubectl apply -f manifests/samples/` must work: no kustomization or other kinds there."""
    kinds = {
        doc["kind"]
        for path in (repo_root / "manifests/samples").glob("*.yaml")
        for doc in yaml.safe_load_all(path.read_text())
    }
    assert kinds == {"AscendJob"}


def test_seed_sample_is_unchanged(repo_root: Path) -> None:
    seed = (repo_root / "manifests/samples/pytorch_multinodes_acjob_910b.yaml").read_text()
    # shared/ sits beside the clone, for developers and CI alike.
    spec_copy = repo_root.parent / "shared" / "spec" / "pytorch_multinodes_acjob_910b.yaml"
    if not spec_copy.exists():
        pytest.skip("the original seed file is not on this machine")
    # Our one addition is MindCluster's documented rank-table mount, in both replicas.
    added = [
        "            - name: ascend-910-config            # the rank table (hccl.json), kept up"
        " to date by the controller",
        "              mountPath: /user/serverid/devindex/config",
        "          - name: ascend-910-config             # created by the controller when"
        " missing, owned by the job",
        "            configMap:",
        "              name: rings-config-default-test-pytorch",
    ]
    lines = seed.splitlines()
    assert all(lines.count(line) == 2 for line in added)
    original = [line for line in lines if line not in added]
    assert original == spec_copy.read_text().splitlines()


def test_networkpolicy_component_admits_only_metrics(
    kubectl_bin: str, repo_root: Path, tmp_path: Path
) -> None:
    base = os.path.relpath(repo_root / "manifests", tmp_path)
    component = os.path.relpath(repo_root / "manifests/components/networkpolicy", tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [{base}]\ncomponents: [{component}]\n"
    )
    docs = kustomize(kubectl_bin, tmp_path)
    policy = one(docs, "NetworkPolicy")
    deployment = one(docs, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # egress to the API server stays open
    [rule] = policy["spec"]["ingress"]
    container_ports = {
        p["name"] for p in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]
    }
    assert [p["port"] for p in rule["ports"]] == ["metrics"] and "metrics" in container_ports
