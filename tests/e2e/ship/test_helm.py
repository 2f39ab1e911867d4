"""The Helm chart: lint, the same objects as manifests/, flags the controller accepts, install.

helm is built from its Go module by `make helm-bin` (hack/helm/build.sh) into
~/.cache/ascendjob-controller/helm/bin (or $ASCENDJOB_HELM_BIN). Without it these tests skip
with that hint, unless ASCENDJOB_REQUIRE_HELM is set (`make test-helm` sets it), which turns the
skip into a failure.

The equality tests compare `helm template` with `kubectl kustomize` after dropping the labels
Helm adds (chart, managed-by, instance, version), and for the CRDs the part-of label that
kustomize adds (crds/ holds verbatim copies of manifests/crd/, which Helm does not template).
The image cannot be built here, so the install test installs the chart into the test cluster
and then runs the controller outside, as the chart's Deployment would: with the Deployment's
own args and, on the real backend, the chart's ServiceAccount's token.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import ssl
import subprocess
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from ascendjob_controller import config as configuration
from tests import identity
from tests.e2e.ship.tools import ControllerProcess, kubectl_apply, wait_job

pytestmark = [pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts/ascendjob-controller"
RELEASE = "ascendjob-controller"
NAMESPACE = "ascendjob-system"
HELM_LABELS = (
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
)
#: Every optional object on, as the three kustomize components give them.
ALL_ON = (
    "namespace.create=true",
    "metrics.serviceMonitor.enabled=true",
    "metrics.prometheusRule.enabled=true",
    "grafanaDashboard.enabled=true",
    "ranktable.hostPath.enabled=true",
    "networkPolicy.enabled=true",
)
COMPONENTS = ("servicemonitor", "grafana-dashboard", "ranktable-hostpath", "networkpolicy")


@pytest.fixture(scope="module")
def helm() -> str:
    configured = os.environ.get("ASCENDJOB_HELM_BIN")
    directory = (
        Path(configured) if configured else Path.home() / ".cache/ascendjob-controller/helm/bin"
    )
    for candidate in (directory / "helm", shutil.which("helm")):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    message = f"helm not found in {directory} or on PATH: build it with `make helm-bin`"
    if os.environ.get("ASCENDJOB_REQUIRE_HELM"):
        pytest.fail(message)
    pytest.skip(message)


def run(*cmd: str, ok: bool = True, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if ok:
        assert out.returncode == 0, f"{' '.join(cmd)}:\n{out.stdout}\n{out.stderr}"
    return out


def docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def template(helm: str, *sets: str) -> list[dict[str, Any]]:
    args = [helm, "template", RELEASE, str(CHART), "--namespace", NAMESPACE, "--include-crds"]
    for value in sets:
        args += ["--set", value]
    return docs(run(*args).stdout)


def kustomize(kubectl: str, tmp_path: Path, *components: str) -> list[dict[str, Any]]:
    if not components:
        return docs(run(kubectl, "kustomize", str(REPO / "manifests")).stdout)
    base = os.path.relpath(REPO / "manifests", tmp_path)
    parts = [os.path.relpath(REPO / "manifests/components" / c, tmp_path) for c in components]
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [{base}]\ncomponents: [{', '.join(parts)}]\n"
    )
    return docs(run(kubectl, "kustomize", str(tmp_path)).stdout)


def normalised(objects: list[dict[str, Any]]) -> dict[tuple[str, ...], dict[str, Any]]:
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    for obj in objects:
        meta = obj["metadata"]
        labels = dict(meta.get("labels") or {})
        for key in HELM_LABELS:
            labels.pop(key, None)
        if obj["kind"] == "CustomResourceDefinition":
            labels.pop("app.kubernetes.io/part-of", None)
        if labels:
            meta["labels"] = labels
        else:
            meta.pop("labels", None)
        ident = (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])
        assert ident not in out, f"rendered twice: {ident}"
        out[ident] = obj
    return out


def assert_same(helm_objects: list[dict[str, Any]], kustomized: list[dict[str, Any]]) -> None:
    ours, theirs = normalised(helm_objects), normalised(kustomized)
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        if ours[key] != theirs[key]:
            a = yaml.safe_dump(theirs[key], sort_keys=True).splitlines()
            b = yaml.safe_dump(ours[key], sort_keys=True).splitlines()
            diff = "\n".join(difflib.unified_diff(a, b, "kustomize", "helm", lineterm=""))
            raise AssertionError(f"{key} differs:\n{diff}")


def deployment_args(objects: list[dict[str, Any]]) -> list[str]:
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


def parse_flags(args: list[str]) -> configuration.Config:
    """The controller's own parser and checks, as `ascendjob-controller run` applies them."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    configuration.add_flags(parser)
    return configuration.build(vars(parser.parse_args(args)), {})


# --- lint and template --------------------------------------------------------------------


def test_helm_lint(helm: str) -> None:
    out = run(helm, "lint", str(CHART), "--strict")
    assert "1 chart(s) linted, 0 chart(s) failed" in out.stdout, out.stdout
    out = run(helm, "lint", str(CHART), "--strict", *(f"--set={v}" for v in ALL_ON))
    assert "0 chart(s) failed" in out.stdout, out.stdout


def test_chart_copies_are_verbatim() -> None:
    """crds/ and files/ are copies (Helm reads nothing outside the chart): kept identical."""
    for name in ("mindxdl.gitee.com_ascendjobs.yaml", "scheduling.volcano.sh_podgroups.yaml"):
        assert (CHART / "crds" / name).read_text() == (REPO / "manifests/crd" / name).read_text()
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == sorted(
        p.name for p in (REPO / "manifests/crd").glob("*.yaml")
    )
    for name in ("prometheus-rules.yml", "grafana-dashboard.json"):
        shipped = (REPO / "manifests/monitoring" / name).read_text()
        assert (CHART / "files" / name).read_text() == shipped, name


def test_defaults_render_the_kustomize_base(helm: str, kubectl_bin: str, tmp_path: Path) -> None:
    assert_same(template(helm, "namespace.create=true"), kustomize(kubectl_bin, tmp_path))
    # Without namespace.create (for helm install --create-namespace): all but the Namespace.
    base = [o for o in kustomize(kubectl_bin, tmp_path) if o["kind"] != "Namespace"]
    assert_same(template(helm), base)


def test_toggles_render_the_kustomize_components(
    helm: str, kubectl_bin: str, tmp_path: Path
) -> None:
    ours = template(helm, *ALL_ON)
    for obj in ours:
        if obj["kind"] == "NetworkPolicy":
            # The chart labels all its objects part-of; that component's object has no such label.
            obj["metadata"]["labels"].pop("app.kubernetes.io/part-of")
    assert_same(ours, kustomize(kubectl_bin, tmp_path, *COMPONENTS))


def test_the_comparison_notices_a_difference(helm: str, kubectl_bin: str, tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="replicas"):
        assert_same(
            template(helm, "namespace.create=true", "replicas=3"), kustomize(kubectl_bin, tmp_path)
        )


def test_default_args_are_accepted_by_the_controller(helm: str) -> None:
    config = parse_flags(deployment_args(template(helm)))
    assert config.leader_elect is True
    assert config.metrics_bind_address == ":8080"
    assert config.health_probe_bind_address == ":8081"
    assert config.log_format == "json"


def test_values_become_flags_the_controller_accepts(helm: str) -> None:
    objects = template(
        helm,
        "image.repository=registry.example.com/ascendjob-controller",
        "image.tag=0.2.0",
        "replicas=3",
        "workers=8",
        "logLevel=debug",
        "logFormat=console",
        "kubeApiQps=50",
        "kubeApiBurst=100",
        "gangScheduling=false",
        "gracefulShutdownTimeout=20s",
        "watchNamespaces={team-a,team-b}",
        "leaderElection.id=my-lease",
        "leaderElection.leaseDuration=30s",
        "leaderElection.renewDeadline=20s",
        "leaderElection.retryPeriod=4s",
        "ranktable.hostPath.enabled=true",
        "ranktable.hostPath.path=/mnt/ranktable",
        "resources.limits.memory=1Gi",
    )
    args = deployment_args(objects)
    config = parse_flags(args)
    assert config.workers == 8
    assert config.log_level == "debug" and config.log_format == "console"
    assert (config.kube_api_qps, config.kube_api_burst) == (50, 100)
    assert config.enable_gang_scheduling is False
    assert config.graceful_shutdown_timeout == 20
    assert config.namespaces == ("team-a", "team-b")
    assert config.leader_election_id == "my-lease"
    assert (
        config.leader_election_lease_duration,
        config.leader_election_renew_deadline,
        config.leader_election_retry_period,
    ) == (30, 20, 4)
    assert str(config.ranktable_dir) == "/mnt/ranktable"
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["replicas"] == 3
    assert pod["containers"][0]["image"] == "registry.example.com/ascendjob-controller:0.2.0"
    assert pod["containers"][0]["resources"]["limits"]["memory"] == "1Gi"
    [volume] = [v for v in pod["volumes"] if v["name"] == "ranktable"]
    assert volume["hostPath"]["path"] == "/mnt/ranktable"
    [init] = pod["initContainers"]  # gives that directory to the controller's UID
    assert init["command"][-1] == "/mnt/ranktable"
    assert init["volumeMounts"] == [{"name": "ranktable", "mountPath": "/mnt/ranktable"}]
    assert init["image"] == pod["containers"][0]["image"]


def enforced(objects: list[dict[str, Any]]) -> str:
    [namespace] = [o for o in objects if o["kind"] == "Namespace"]
    return str(namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"])


def test_the_hostpath_makes_the_namespace_privileged(helm: str) -> None:
    """Only `privileged` admits a hostPath; without one, namespace.podSecurity is kept."""
    assert enforced(template(helm, "namespace.create=true")) == "restricted"
    assert enforced(template(helm, "namespace.create=true", "namespace.podSecurity=baseline")) == (
        "baseline"
    )
    hostpath = ("namespace.create=true", "ranktable.hostPath.enabled=true")
    assert enforced(template(helm, *hostpath)) == "privileged"
    assert enforced(template(helm, *hostpath, "namespace.podSecurity=restricted")) == "privileged"
    [deployment] = [o for o in template(helm) if o["kind"] == "Deployment"]
    assert "initContainers" not in deployment["spec"]["template"]["spec"]


def test_switching_off_leader_election_and_metrics(helm: str) -> None:
    objects = template(helm, "leaderElection.enabled=false", "metrics.enabled=false")
    kinds = {o["kind"] for o in objects}
    assert "Role" not in kinds and "RoleBinding" not in kinds and "Service" not in kinds
    args = deployment_args(objects)
    config = parse_flags(args)
    assert config.leader_elect is False
    assert config.metrics_bind_address == "0"
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    template_meta = deployment["spec"]["template"]["metadata"]
    assert "annotations" not in template_meta
    ports = [p["name"] for p in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]]
    assert ports == ["health"]


def test_metrics_security_values(helm: str) -> None:
    objects = template(helm, "metrics.certSecret=metrics-tls")
    config = parse_flags(deployment_args(objects))
    assert config.metrics_secure is True
    assert config.metrics_cert_dir == "/etc/ascendjob-controller/metrics-cert"
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    [volume] = [v for v in pod["volumes"] if v["name"] == "metrics-cert"]
    assert volume["secret"]["secretName"] == "metrics-tls"
    [mount] = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "metrics-cert"]
    assert mount["mountPath"] == config.metrics_cert_dir and mount["readOnly"] is True

    plain = template(helm, "metrics.secure=false", "metrics.serviceMonitor.enabled=true")
    config = parse_flags(deployment_args(plain))
    assert config.metrics_secure is False
    names = {o["metadata"]["name"] for o in plain if o["kind"] == "ClusterRole"}
    assert names == {"ascendjob-controller"}  # no metrics-reader
    [role] = [o for o in plain if o["kind"] == "ClusterRole"]
    groups = {g for rule in role["rules"] for g in rule["apiGroups"]}
    assert "authentication.k8s.io" not in groups and "authorization.k8s.io" not in groups
    [monitor] = [o for o in plain if o["kind"] == "ServiceMonitor"]
    assert "scheme" not in monitor["spec"]["endpoints"][0]
    [deployment] = [o for o in plain if o["kind"] == "Deployment"]
    assert "prometheus.io/scheme" not in deployment["spec"]["template"]["metadata"]["annotations"]


# --- install into the test cluster --------------------------------------------------------


def scrape_secure(port: int, token: str) -> str:
    """GET https://127.0.0.1:port/metrics with a bearer token (the certificate is self-signed)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics")
    request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        assert response.status == 200
        return str(response.read().decode())


def sample_sum(body: str, name: str, **labels: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == name and labels.items() <= sample.labels.items()
    )


@pytest.fixture(scope="module")
def installed(helm: str, local_cluster: Any) -> Iterator[list[str]]:
    """`helm install` of the defaults; yields the helm command prefix for this cluster."""
    base = [helm, "--kubeconfig", str(local_cluster.kubeconfig_path)]
    dry = run(
        *base, "install", RELEASE, str(CHART), "-n", NAMESPACE, "--create-namespace",
        "--dry-run=server",
    )  # fmt: skip
    assert "STATUS: pending-install" in dry.stdout, dry.stdout
    out = run(*base, "install", RELEASE, str(CHART), "-n", NAMESPACE, "--create-namespace")
    assert "STATUS: deployed" in out.stdout, out.stdout
    yield base


def test_helm_install_then_the_controller_runs_the_sample(
    installed: list[str],
    local_cluster: Any,
    kubectl_bin: str,
    tmp_path: Path,
) -> None:
    status = run(*installed, "status", RELEASE, "-n", NAMESPACE, "-o", "yaml")
    release = yaml.safe_load(status.stdout)
    assert release["info"]["status"] == "deployed"
    deployed = docs(release["manifest"])
    kinds = sorted(o["kind"] for o in deployed)
    assert kinds == sorted(
        ["ClusterRole", "ClusterRole", "ClusterRoleBinding", "Deployment", "Role", "RoleBinding",
         "Service", "ServiceAccount"]
    )  # fmt: skip
    kubectl = [kubectl_bin, "--kubeconfig", str(local_cluster.kubeconfig_path)]
    run(*kubectl, "get", "crd", "ascendjobs.mindxdl.gitee.com")
    stored = yaml.safe_load(
        run(*kubectl, "get", "deployment", RELEASE, "-n", NAMESPACE, "-o", "yaml").stdout
    )
    # The Deployment's own args, less the two addresses the test gives the process itself.
    args = [
        a
        for a in stored["spec"]["template"]["spec"]["containers"][0]["args"]
        if not a.startswith(("--metrics-bind-address", "--health-probe-bind-address"))
    ]
    assert "--leader-elect" in args and "--metrics-secure" in args
    real = getattr(local_cluster, "backend", "local") == "real"
    token = ""
    if real:
        # As the pod would run: the chart's ServiceAccount, bound by the chart's RBAC only.
        token = identity.service_account_token(local_cluster)
        kubeconfig = identity.token_kubeconfig(
            Path(local_cluster.kubeconfig_path), token, tmp_path / "sa.kubeconfig"
        )
    else:
        kubeconfig = Path(local_cluster.kubeconfig_path)  # no authorizer on the local cluster
    # The namespace the Deployment's fieldRef env var would give it.
    process = ControllerProcess(
        str(kubeconfig), tmp_path, *args, "--leader-election-namespace", NAMESPACE
    )
    try:
        process.wait_ready()
        sample = REPO / "manifests/samples/acjob_pytorch.yaml"
        kubectl_apply(kubectl_bin, local_cluster, "-f", str(sample))
        wait_job(local_cluster, "sample-pytorch", ("Succeeded",), timeout=180)
        lease = yaml.safe_load(
            run(
                *kubectl, "get", "lease", "ascendjob-controller-leader", "-n", NAMESPACE,
                "-o", "yaml",
            ).stdout
        )  # fmt: skip
        assert lease["spec"]["holderIdentity"], lease
        if real:
            # /metrics is HTTPS for holders of the chart's metrics-reader ClusterRole (the
            # controller's own reviews use the chart's tokenreviews/subjectaccessreviews grant).
            run(
                *kubectl, "create", "clusterrolebinding", "helm-test-metrics",
                "--clusterrole=ascendjob-controller-metrics-reader",
                f"--serviceaccount={NAMESPACE}:{identity.SERVICE_ACCOUNT}",
            )  # fmt: skip
            body = scrape_secure(process.metrics_port, token)
            assert sample_sum(body, "rest_client_requests_total", code="403") == 0
            assert sample_sum(body, "ascendjob_jobs_successful_total") >= 1
    finally:
        process.stop()


@pytest.mark.real_only(
    "the local cluster answers helm's protobuf DeleteOptions with 415 (reported in issue 11)"
)
def test_helm_uninstall_removes_the_release_and_keeps_the_crds(
    installed: list[str], local_cluster: Any, kubectl_bin: str
) -> None:
    run(*installed, "uninstall", RELEASE, "-n", NAMESPACE, "--wait")
    kubectl = [kubectl_bin, "--kubeconfig", str(local_cluster.kubeconfig_path)]
    gone = run(*kubectl, "get", "deployment", RELEASE, "-n", NAMESPACE, ok=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr, gone.stderr
    run(*kubectl, "get", "crd", "ascendjobs.mindxdl.gitee.com")  # Helm never deletes crds/


# --- Pod Security admission on a real API server -------------------------------------------


def dry_run_pod(
    kubectl: list[str], namespace: dict[str, Any], deployment: dict[str, Any], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """The Deployment's pod, created with --dry-run=server in a copy of `namespace`.

    Pod Security enforces on pods, not on the Deployment (which only gets warnings), so the
    pod its ReplicaSet would create is what is submitted. The copy has a fresh name, the
    labels of `namespace`, and the pod's ServiceAccount.
    """
    name = f"psa-{uuid.uuid4().hex[:8]}"
    copy = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    copy["metadata"]["labels"] = dict(namespace["metadata"]["labels"])
    (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(copy))
    run(*kubectl, "apply", "-f", str(tmp_path / f"{name}.yaml"))
    pod_spec = deployment["spec"]["template"]["spec"]
    run(*kubectl, "create", "serviceaccount", pod_spec["serviceAccountName"], "-n", name)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "controller", "namespace": name},
        "spec": pod_spec,
    }
    (tmp_path / f"{name}.pod.yaml").write_text(yaml.safe_dump(pod))
    return run(
        *kubectl, "create", "--dry-run=server", "-f", str(tmp_path / f"{name}.pod.yaml"), ok=False
    )


def rendered_with_hostpath(
    renderer: str, request: pytest.FixtureRequest, kubectl_bin: str, tmp_path: Path
) -> list[dict[str, Any]]:
    if renderer == "helm":
        helm_bin = request.getfixturevalue("helm")
        return template(helm_bin, "namespace.create=true", "ranktable.hostPath.enabled=true")
    return kustomize(kubectl_bin, tmp_path, "ranktable-hostpath")


@pytest.mark.real_only("the local cluster has no Pod Security admission")
@pytest.mark.parametrize("renderer", ["kustomize", "helm"])
def test_pod_security_admits_the_hostpath_pods_in_their_namespace_only(
    renderer: str, request: pytest.FixtureRequest, local_cluster: Any, kubectl_bin: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    kubectl = [kubectl_bin, "--kubeconfig", str(local_cluster.kubeconfig_path)]
    objects = rendered_with_hostpath(renderer, request, kubectl_bin, tmp_path)
    [namespace] = [o for o in objects if o["kind"] == "Namespace"]
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    admitted = dry_run_pod(kubectl, namespace, deployment, tmp_path)
    assert admitted.returncode == 0, admitted.stderr

    # The base's namespace (restricted) refuses that pod for its hostPath, which is what the
    # component's namespace label fixes, and so does baseline: privileged is the least level
    # that admits it. The base's own pod is admitted under restricted.
    base = kustomize(kubectl_bin, tmp_path)
    [restricted] = [o for o in base if o["kind"] == "Namespace"]
    baseline = yaml.safe_load(yaml.safe_dump(restricted))
    baseline["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "baseline"
    for level, labelled in (("restricted", restricted), ("baseline", baseline)):
        refused = dry_run_pod(kubectl, labelled, deployment, tmp_path)
        assert refused.returncode != 0, refused.stdout
        assert f'violates PodSecurity "{level}:latest"' in refused.stderr, refused.stderr
        assert "hostPath" in refused.stderr, refused.stderr
    [base_deployment] = [o for o in base if o["kind"] == "Deployment"]
    clean = dry_run_pod(kubectl, restricted, base_deployment, tmp_path)
    assert clean.returncode == 0, clean.stderr
