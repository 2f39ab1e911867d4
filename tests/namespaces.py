"""Namespaces for tests, ready for pods on either backend.

A real kube-apiserver refuses pods in a namespace until kube-controller-manager has made its
`default` ServiceAccount (the ServiceAccount admission plugin); the local cluster does not
check. Waiting here keeps that start-up race out of every test.
"""

from __future__ import annotations

import time

from ascendjob_controller.kube.client import NAMESPACES, KubeClient, Resource, is_not_found

SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")


def wait_default_service_account(client: KubeClient, namespace: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.get(SERVICEACCOUNTS, namespace, "default")
            return
        except Exception as err:
            if not is_not_found(err) or time.monotonic() > deadline:
                raise
        time.sleep(0.05)


def create_namespace(client: KubeClient, name: str) -> str:
    client.create(NAMESPACES, None, {"metadata": {"name": name}})
    from tests.conftest import BACKEND

    if BACKEND == "real":
        wait_default_service_account(client, name)
    return name
