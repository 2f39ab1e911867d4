"""A cluster without Volcano: gang scheduling must step aside, not stall the controller."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ascendjob_controller.controller import (
    AscendJobController,
    ControllerOptions,
    podgroups_served,
)
from ascendjob_controller.kube.client import ASCENDJOBS
from ascendjob_controller.localcluster.cluster import CRD_DIR, LocalCluster
from tests.integration.controller.helpers import (
    Kubelet,
    fresh_namespace,
    make_client,
    pytorch_job,
    wait_for,
    wait_pods,
    wait_state,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def no_volcano(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    crds = tmp_path_factory.mktemp("crds")
    shutil.copy(CRD_DIR / "mindxdl.gitee.com_ascendjobs.yaml", crds)
    cluster = LocalCluster(
        kubeconfig_path=Path(tmp_path_factory.mktemp("lc")) / "kubeconfig",
        kubelet=False,
        crd_dir=crds,
    )
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.mark.local_only("starts a second, Volcano-less local cluster of its own")
def test_podgroups_served_tells_the_clusters_apart(bare_cluster: Any, no_volcano: Any) -> None:
    with_volcano, without = make_client(bare_cluster), make_client(no_volcano)
    try:
        assert podgroups_served(with_volcano) is True
        assert podgroups_served(without) is False
    finally:
        with_volcano.close()
        without.close()


@pytest.mark.local_only("starts a second, Volcano-less local cluster of its own")
def test_gang_off_without_volcano_runs_volcano_jobs(no_volcano: Any) -> None:
    client = make_client(no_volcano)
    gang = podgroups_served(client)
    ctl = AscendJobController(client, ControllerOptions(gang_scheduling=gang))
    ctl.start()
    try:
        wait_for(ctl.has_synced, "the caches to sync")
        ns = fresh_namespace(client)
        client.create(ASCENDJOBS, ns, pytorch_job("vj", scheduler="volcano"))
        pods = wait_pods(client, ns, "vj", 2)
        kubelet = Kubelet(client)
        kubelet.run_all(pods)
        kubelet.succeed_all(pods)
        wait_state(client, ns, "vj", "Succeeded")
    finally:
        ctl.stop(10.0)
        client.close()
