"""The identity the controller runs as in tests: the ServiceAccount of manifests/ on a real
cluster, the admin kubeconfig on the local one (which has no authorizer).

On a real kube-apiserver the e2e controller must get by with exactly the RBAC we ship, so a
missing verb fails the suite instead of a user's first install. The token comes from the
TokenRequest API (`kubectl create token`), as a projected token would in a pod.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from ascendjob_controller import metrics

REPO = Path(__file__).resolve().parents[1]
MANIFESTS = REPO / "manifests"
NAMESPACE = "ascendjob-system"
SERVICE_ACCOUNT = "ascendjob-controller"
RBAC_FILES = ("namespace.yaml", *(f"rbac/{p.name}" for p in sorted((MANIFESTS / "rbac").iterdir())))


def install_rbac(cluster: Any) -> None:
    """Apply the namespace, ServiceAccount, (Cluster)Roles and bindings exactly as shipped."""
    args = ["apply"]
    for name in RBAC_FILES:
        args += ["-f", str(MANIFESTS / name)]
    cluster.kubectl(*args)


def service_account_token(cluster: Any, duration: str = "4h") -> str:
    """A bound token for the controller's ServiceAccount, from the TokenRequest API."""
    proc = cluster.kubectl(
        "create", "token", SERVICE_ACCOUNT, "-n", NAMESPACE, f"--duration={duration}"
    )
    token = proc.stdout.strip()
    assert token.count(".") == 2, f"not a JWT: {token[:20]!r}"
    return token


def token_kubeconfig(admin_kubeconfig: Path, token: str, path: Path) -> Path:
    """The admin kubeconfig's cluster (server and CA) with a token user instead of admin."""
    config = yaml.safe_load(admin_kubeconfig.read_text())
    cluster = config["clusters"][0]
    config["users"] = [{"name": SERVICE_ACCOUNT, "user": {"token": token}}]
    config["contexts"] = [
        {
            "name": SERVICE_ACCOUNT,
            "context": {
                "cluster": cluster["name"],
                "user": SERVICE_ACCOUNT,
                "namespace": NAMESPACE,
            },
        }
    ]
    config["current-context"] = SERVICE_ACCOUNT
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def controller_kubeconfig(cluster: Any, directory: Path) -> Path:
    """The kubeconfig the controller under test uses on this backend."""
    if getattr(cluster, "backend", "local") != "real":
        return Path(cluster.kubeconfig_path)
    install_rbac(cluster)
    token = service_account_token(cluster)
    return token_kubeconfig(
        Path(cluster.kubeconfig_path), token, directory / "controller.kubeconfig"
    )


def forbidden_responses() -> float:
    """`rest_client_requests_total{code="403"}` of this process, summed over method and host."""
    total = 0.0
    for family in metrics.REGISTRY.collect():
        if family.name != "rest_client_requests":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total") and sample.labels.get("code") == "403":
                total += sample.value
    return total


def can_i(kubeconfig: Path, kubectl_bin: str, verb: str, resource: str, namespace: str) -> bool:
    """`kubectl auth can-i` as the kubeconfig's user (a SelfSubjectAccessReview).

    `resource` may name a subresource as `plural.group/sub`; it goes to `--subresource` (the
    positional `a/b` form would mean the object named b).
    """
    resource, _, sub = resource.partition("/")
    extra = [f"--subresource={sub}"] if sub else []
    argv = [kubectl_bin, "--kubeconfig", str(kubeconfig), "auth", "can-i", verb, resource]
    proc = subprocess.run(
        [*argv, "-n", namespace, *extra],
        capture_output=True,
        text=True,
        timeout=30,
    )
    answer = proc.stdout.strip()
    assert answer in ("yes", "no"), f"kubectl auth can-i: {proc.stdout!r} {proc.stderr!r}"
    return answer == "yes"
