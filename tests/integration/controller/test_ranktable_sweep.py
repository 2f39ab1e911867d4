"""Orphaned file-mode rank tables: a job deleted while no controller led loses its directory.

A controller removes a job's `<namespace>.<job>` directory when it sees the job deleted. A
job deleted while the controller was down, or between two leaders, is seen by nobody; the
next leader sweeps its directory once its job cache has synced.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller import controller as controller_module
from ascendjob_controller.controller import AscendJobController, ControllerOptions
from ascendjob_controller.kube.client import ASCENDJOBS, KubeClient
from ascendjob_controller.kube.leaderelection import LeaderElector
from ascendjob_controller.ranktable_writer import INITIALIZING
from tests.integration.controller.helpers import (
    fresh_namespace,
    make_client,
    pytorch_job,
    reconciles,
    wait_for,
    wait_pods,
)

pytestmark = pytest.mark.integration

STAMP = "1700000000"


def file_job(name: str, ns: str) -> dict[str, Any]:
    """A job in file mode: its templates have the `ranktable` hostPath volume."""
    job = pytorch_job(name)
    volume = {"name": "ranktable", "hostPath": {"path": f"/user/mindx-dl/ranktable/{ns}.{name}"}}
    for spec in job["spec"]["replicaSpecs"].values():
        spec["template"]["spec"]["volumes"] = [volume]
    return job


def left_behind(root: Path, name: str, *extra: str) -> Path:
    """A directory as a previous controller leaves it: hccl.json, then version."""
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "hccl.json").write_text(INITIALIZING)
    (directory / "version").write_text(STAMP)
    for file in extra:
        (directory / file).write_text("x")
    return directory


def controller(cluster: Any, root: Path) -> AscendJobController:
    return AscendJobController(
        make_client(cluster),
        ControllerOptions(workers=2, gang_scheduling=False, ranktable_dir=str(root)),
    )


def test_a_starting_controller_removes_gone_jobs_directories_and_keeps_live_ones(
    bare_cluster: Any, kube: KubeClient, tmp_path: Path
) -> None:
    ns = fresh_namespace(kube, "sweep")
    kube.create(ASCENDJOBS, ns, file_job("live", ns))
    live = left_behind(tmp_path, f"{ns}.live")
    gone = left_behind(tmp_path, f"{ns}.gone", ".version.x81kd2")  # with a crash's temp file
    foreign = left_behind(tmp_path, f"{ns}.notes", "notes.txt")  # someone else's file in it

    ctl = controller(bare_cluster, tmp_path)
    recorded = reconciles(ctl)
    try:
        ctl.start()  # returns once the caches synced and the sweep ran
        assert not gone.exists()
        assert foreign.exists()  # not only ours inside: kept, with a warning
        # The live job's table is kept, and not even rewritten: its pods have no IPs, so the
        # table is still `initializing`, the content the previous controller left. Checked
        # once a reconcile that saw its pods has finished (the publish is its last step).
        wait_pods(kube, ns, "live", 2)
        recorded.wait_caught_up(kube, ns, "live")
        assert (live / "hccl.json").read_text() == INITIALIZING
        assert (live / "version").read_text() == STAMP
        # Now this controller serves it: deleting the job removes it as usual.
        kube.delete(ASCENDJOBS, ns, "live")
        wait_for(lambda: not live.exists(), "the live job's directory removed with the job")
    finally:
        ctl.stop(10.0)


def leading_config(lease_ns: str, lease: str) -> SimpleNamespace:
    """What `_start_leading` reads of the Config: leader election with a short lease."""
    return SimpleNamespace(
        leader_elect=True,
        leader_election_namespace=lease_ns,
        leader_election_id=lease,
        leader_election_lease_duration=3.0,
        leader_election_renew_deadline=2.0,
        leader_election_retry_period=0.2,
    )


def start_leading(
    ctl: AscendJobController, config: SimpleNamespace, host: str, mocker: MockerFixture
) -> tuple[threading.Event, LeaderElector | None]:
    """`run`'s leader election for `ctl`, as a replica on host `host` (the Lease identity)."""
    stop = threading.Event()
    ctl.start_informers()
    hostname = mocker.patch.object(controller_module.socket, "gethostname", return_value=host)
    elector = controller_module._start_leading(config, ctl.client, ctl, stop, threading.Event())
    mocker.stop(hostname)
    return stop, elector


def test_a_job_deleted_between_two_leaders_is_swept_by_the_next_leader_only(
    bare_cluster: Any, kube: KubeClient, tmp_path: Path, mocker: MockerFixture
) -> None:
    ns = fresh_namespace(kube, "sweep")
    config = leading_config(ns, f"sweep-{uuid.uuid4().hex[:6]}")
    kube.create(ASCENDJOBS, ns, file_job("between", ns))
    directory = tmp_path / f"{ns}.between"

    first = controller(bare_cluster, tmp_path)
    first_stop, _ = start_leading(first, config, "replica-a", mocker)
    wait_for(lambda: (directory / "version").exists(), "the first leader's table")

    second = controller(bare_cluster, tmp_path)
    second_stop, second_elector = start_leading(second, config, "replica-b", mocker)
    try:
        wait_for(lambda: second.jobs.has_synced() or None, "the standby's job cache synced")
        # The leader dies without releasing its Lease; the job is deleted before the standby
        # takes over, so no running controller removes the directory.
        first.stop(0.0)
        first_stop.set()
        kube.delete(ASCENDJOBS, ns, "between")
        wait_for(lambda: second.jobs.store.get(f"{ns}/between") is None, "the standby saw it")
        assert directory.exists() and not second.runner.started()  # a standby sweeps nothing
        wait_for(lambda: not directory.exists(), "the new leader swept the directory", 30)
        assert second.runner.started()
    finally:
        second_stop.set()
        second.stop(10.0)
        assert second_elector is not None
        second_elector.release()
