"""The RBAC of manifests/ on a real authorizer: what the controller may do, and may not.

The local cluster has no authorizer, so these run on the real lane only. The e2e suite's
controller runs with this same identity and asserts it never sees a 403.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from tests import identity

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.real_only("the local cluster authorizes every request"),
]


@pytest.fixture(scope="module")
def sa_kubeconfig(bare_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return identity.controller_kubeconfig(bare_cluster, tmp_path_factory.mktemp("rbac"))


def test_the_service_account_cannot_read_secrets(bare_cluster: Any, sa_kubeconfig: Path) -> None:
    bare_cluster.kubectl("create", "secret", "generic", "s", "--from-literal=k=v", "-n", "default")
    api = k8s.CoreV1Api(k8s_config.new_client_from_config(str(sa_kubeconfig)))
    for call in (
        lambda: api.list_namespaced_secret("default"),
        lambda: api.read_namespaced_secret("s", "default"),
        lambda: api.list_secret_for_all_namespaces(),
    ):
        with pytest.raises(ApiException) as caught:
            call()
        assert caught.value.status == 403, caught.value.body
        assert '"reason":"Forbidden"' in caught.value.body.replace(" ", "")
        assert "system:serviceaccount:ascendjob-system:ascendjob-controller" in caught.value.body


@pytest.mark.parametrize(
    ("verb", "resource", "namespace", "allowed"),
    [
        ("create", "pods", "team-a", True),
        ("delete", "pods", "team-a", True),
        ("watch", "services", "team-a", True),
        ("patch", "ascendjobs.mindxdl.gitee.com/status", "team-a", True),
        ("update", "ascendjobs.mindxdl.gitee.com", "team-a", False),  # never edits a spec
        ("create", "events", "team-a", True),
        ("create", "podgroups.scheduling.volcano.sh", "team-a", True),
        ("patch", "configmaps", "team-a", True),  # the rank table
        ("list", "configmaps", "team-a", False),
        ("update", "leases.coordination.k8s.io", "ascendjob-system", True),
        # Least privilege: no secrets, no leases outside its namespace, no nodes, no creating jobs.
        ("get", "secrets", "team-a", False),
        ("list", "secrets", "ascendjob-system", False),
        ("update", "leases.coordination.k8s.io", "kube-system", False),
        ("create", "ascendjobs.mindxdl.gitee.com", "team-a", False),
        ("delete", "namespaces", "team-a", False),
    ],
)
def test_the_service_account_may_do_exactly_what_it_needs(
    sa_kubeconfig: Path, kubectl_bin: str, verb: str, resource: str, namespace: str, allowed: bool
) -> None:
    assert identity.can_i(sa_kubeconfig, kubectl_bin, verb, resource, namespace) is allowed
