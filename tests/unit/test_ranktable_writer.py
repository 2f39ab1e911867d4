"""`RankTableWriter`: when it writes, what `version` says, and what it counts.

The writer is driven directly here, with its injectable clock, so each case states the time at
which the content changed and checks that `version` is exactly that time, and that nothing is
written at all when the content did not change, also by a new writer after a restart. The
ConfigMap cases run against the embedded API server (a module's cluster starts in about a
second), so a "no write" is checked where it matters: the object's resourceVersion does not
move. Faults are injected with pytest-mock.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller import metrics
from ascendjob_controller.job import ranktable
from ascendjob_controller.job.ranktable_targets import RankTableTargets
from ascendjob_controller.kube.client import ASCENDJOBS, CONFIGMAPS, ApiError, KubeClient
from ascendjob_controller.ranktable_writer import INITIALIZING, RankTableWriter, TooLarge
from tests.integration.controller.helpers import fresh_namespace, make_client, pytorch_job

pytestmark = pytest.mark.integration

TABLE_A = '{"status":"completed","server_list":[{"server_id":"10.0.0.1"}],"server_count":"1"}'
TABLE_B = '{"status":"completed","server_list":[{"server_id":"10.0.0.2"}],"server_count":"1"}'


class Clock:
    """The writer's clock, moved by hand: `version` must be the time of the change."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def writes(target: str, result: str) -> float:
    value = metrics.REGISTRY.get_sample_value(
        "ascendjob_ranktable_writes_total", {"target": target, "result": result}
    )
    return value or 0.0


@pytest.fixture(scope="module")
def kube(bare_cluster: Any) -> Iterator[KubeClient]:
    client = make_client(bare_cluster)
    yield client
    client.close()


@pytest.fixture
def stored_job(kube: KubeClient) -> dict[str, Any]:
    """A real AscendJob (its uid owns the ConfigMap); no controller runs, so it has no pods."""
    ns = fresh_namespace(kube, "rtw")
    return kube.create(ASCENDJOBS, ns, pytorch_job("rt"))


def cm_targets(job: dict[str, Any]) -> RankTableTargets:
    return RankTableTargets(f"rings-config-{job['metadata']['name']}", True, None)


def stored_cm(kube: KubeClient, job: dict[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    return kube.get(CONFIGMAPS, meta["namespace"], f"rings-config-{meta['name']}")


def data_and_rv(kube: KubeClient, job: dict[str, Any]) -> tuple[dict[str, str], str]:
    cm = stored_cm(kube, job)
    return cm["data"], cm["metadata"]["resourceVersion"]


# -- ConfigMap --------------------------------------------------------------------------------


def test_the_created_configmap_is_stamped_with_its_creation_time(
    kube: KubeClient, stored_job: dict[str, Any]
) -> None:
    clock = Clock(1_700_000_100)
    writer = RankTableWriter(kube, None, clock)
    assert writer.ensure_configmap(stored_job, cm_targets(stored_job)) == []
    data, _ = data_and_rv(kube, stored_job)
    assert data == {"hccl.json": INITIALIZING, "version": "1700000100"}


def test_version_is_the_time_of_the_last_content_change(
    kube: KubeClient, stored_job: dict[str, Any]
) -> None:
    clock = Clock(1_700_000_000)
    writer = RankTableWriter(kube, None, clock)
    targets = cm_targets(stored_job)
    writer.ensure_configmap(stored_job, targets)
    _, created_rv = data_and_rv(kube, stored_job)

    clock.now += 10  # the same initializing table: nothing to write
    assert writer.publish(stored_job, targets, INITIALIZING) == []
    assert data_and_rv(kube, stored_job) == (
        {"hccl.json": INITIALIZING, "version": "1700000000"},
        created_rv,
    )

    clock.now += 10
    assert writer.publish(stored_job, targets, TABLE_A) == []
    data, changed_rv = data_and_rv(kube, stored_job)
    assert data == {"hccl.json": TABLE_A, "version": "1700000020"}

    clock.now += 100  # unchanged content: no write, the version stays that of the change
    assert writer.publish(stored_job, targets, TABLE_A) == []
    assert data_and_rv(kube, stored_job) == (data, changed_rv)

    clock.now += 5
    assert writer.publish(stored_job, targets, TABLE_B) == []
    assert data_and_rv(kube, stored_job)[0] == {"hccl.json": TABLE_B, "version": "1700000125"}


def test_a_restarted_writer_does_not_rewrite_an_unchanged_configmap(
    kube: KubeClient, stored_job: dict[str, Any], mocker: MockerFixture
) -> None:
    targets = cm_targets(stored_job)
    before = RankTableWriter(kube, None, Clock(1_700_000_000))
    before.ensure_configmap(stored_job, targets)
    before.publish(stored_job, targets, TABLE_A)
    data, rv = data_and_rv(kube, stored_job)

    # The controller restarts later: a new writer, the same reconcile sequence, the same table.
    clock = Clock(1_700_009_999)
    after = RankTableWriter(kube, None, clock)
    patch = mocker.spy(kube, "patch")
    assert after.ensure_configmap(stored_job, targets) == []  # AlreadyExists: fine
    assert after.publish(stored_job, targets, TABLE_A) == []
    assert after.publish(stored_job, targets, TABLE_A) == []
    patch.assert_not_called()
    assert data_and_rv(kube, stored_job) == (data, rv)
    assert data["version"] == "1700000000"

    # Its first change is stamped with its own clock.
    assert after.publish(stored_job, targets, TABLE_B) == []
    assert data_and_rv(kube, stored_job)[0] == {"hccl.json": TABLE_B, "version": "1700009999"}


def test_a_restarted_writer_rewrites_a_configmap_that_differs(
    kube: KubeClient, stored_job: dict[str, Any]
) -> None:
    targets = cm_targets(stored_job)
    RankTableWriter(kube, None, Clock(1_700_000_000)).ensure_configmap(stored_job, targets)
    after = RankTableWriter(kube, None, Clock(1_700_000_500))
    assert after.publish(stored_job, targets, TABLE_A) == []
    assert data_and_rv(kube, stored_job)[0] == {"hccl.json": TABLE_A, "version": "1700000500"}


def test_a_user_configmap_without_a_version_gets_one(kube: KubeClient) -> None:
    """A user's `rings-config-<job>` holding the right table but no `version`: stamp it."""
    ns = fresh_namespace(kube, "rtw")
    job = kube.create(ASCENDJOBS, ns, pytorch_job("mine"))
    body = {"metadata": {"name": "rings-config-mine"}, "data": {"hccl.json": INITIALIZING}}
    kube.create(CONFIGMAPS, ns, body)
    writer = RankTableWriter(kube, None, Clock(1_700_000_042))
    assert writer.publish(job, cm_targets(job), INITIALIZING) == []
    assert data_and_rv(kube, job)[0] == {"hccl.json": INITIALIZING, "version": "1700000042"}


def test_a_failed_configmap_write_is_counted_returned_and_retried(
    kube: KubeClient, stored_job: dict[str, Any], mocker: MockerFixture
) -> None:
    clock = Clock(1_700_000_000)
    writer = RankTableWriter(kube, None, clock)
    targets = cm_targets(stored_job)
    writer.ensure_configmap(stored_job, targets)
    errors, successes = writes("configmap", "error"), writes("configmap", "success")

    fault = mocker.patch.object(kube, "patch", side_effect=ApiError(500, "InternalError", "down"))
    [failure] = writer.publish(stored_job, targets, TABLE_A)
    assert "rings-config-rt" in failure and "down" in failure
    assert writes("configmap", "error") == errors + 1
    assert writes("configmap", "success") == successes
    assert stored_cm(kube, stored_job)["data"]["hccl.json"] == INITIALIZING

    # Not remembered as written: the retry writes, stamped with the time it got through.
    mocker.stop(fault)
    clock.now += 3
    assert writer.publish(stored_job, targets, TABLE_A) == []
    assert data_and_rv(kube, stored_job)[0] == {"hccl.json": TABLE_A, "version": "1700000003"}
    assert writes("configmap", "error") == errors + 1
    assert writes("configmap", "success") == successes + 1


def big_table(size: int) -> str:
    """A valid completed table of about `size` bytes."""
    server = {"server_id": "x" * max(0, size - 80)}
    return json.dumps({"status": "completed", "server_list": [server], "server_count": "1"})


def test_a_table_too_large_for_a_configmap_is_reported_once_and_not_sent(
    kube: KubeClient, stored_job: dict[str, Any], mocker: MockerFixture
) -> None:
    writer = RankTableWriter(kube, None, Clock())
    targets = cm_targets(stored_job)
    writer.ensure_configmap(stored_job, targets)
    too_large, errors = writes("configmap", "too_large"), writes("configmap", "error")
    table = big_table(ranktable.CONFIGMAP_DATA_LIMIT + 1)
    sent = mocker.spy(kube, "patch")

    [failure] = writer.publish(stored_job, targets, table)
    assert isinstance(failure, TooLarge)
    assert "cannot be stored in ConfigMap rings-config-rt" in failure and "file mode" in failure
    assert sent.call_count == 0  # never sent: the API server would refuse it
    assert writes("configmap", "too_large") == too_large + 1
    assert writes("configmap", "error") == errors
    # The same table again: already reported, nothing to retry or report.
    assert writer.publish(stored_job, targets, table) == []
    assert writes("configmap", "too_large") == too_large + 1
    # A table that fits is written as usual.
    assert writer.publish(stored_job, targets, TABLE_A) == []
    assert stored_cm(kube, stored_job)["data"]["hccl.json"] == TABLE_A


def test_the_api_servers_own_too_long_refusal_is_too_large(
    kube: KubeClient, stored_job: dict[str, Any]
) -> None:
    """A table that fits alone but not beside a key the user added: the server's 422."""
    writer = RankTableWriter(kube, None, Clock())
    targets = cm_targets(stored_job)
    writer.ensure_configmap(stored_job, targets)
    meta = stored_job["metadata"]
    filler = {"data": {"user-notes": "n" * (ranktable.CONFIGMAP_DATA_LIMIT // 2)}}
    kube.patch(CONFIGMAPS, meta["namespace"], f"rings-config-{meta['name']}", filler)
    table = big_table(ranktable.CONFIGMAP_DATA_LIMIT * 3 // 4)
    assert ranktable.configmap_fits(table, "1700000000")

    [failure] = writer.publish(stored_job, targets, table)
    assert isinstance(failure, TooLarge), failure
    assert stored_cm(kube, stored_job)["data"]["hccl.json"] == INITIALIZING


def test_a_failed_create_is_counted_and_returned(
    kube: KubeClient, stored_job: dict[str, Any], mocker: MockerFixture
) -> None:
    writer = RankTableWriter(kube, None, Clock())
    errors = writes("configmap", "error")
    mocker.patch.object(kube, "create", side_effect=ApiError(403, "Forbidden", "no configmaps"))
    [failure] = writer.ensure_configmap(stored_job, cm_targets(stored_job))
    assert "no configmaps" in failure
    assert writes("configmap", "error") == errors + 1


def test_a_configmap_nobody_created_is_not_written_nor_an_error(
    kube: KubeClient, stored_job: dict[str, Any]
) -> None:
    """A target without create (none today) whose ConfigMap is missing: MindCluster's no-op."""
    errors = writes("configmap", "error")
    targets = RankTableTargets("rings-config-rt", False, None)
    assert RankTableWriter(kube, None, Clock()).publish(stored_job, targets, TABLE_A) == []
    assert writes("configmap", "error") == errors


# -- file mode --------------------------------------------------------------------------------


def file_job(name: str = "ft") -> dict[str, Any]:
    return {"metadata": {"namespace": "team", "name": name, "uid": str(uuid.uuid4())}}


FILE_TARGETS = RankTableTargets(None, False, "team.ft")


def file_writer(directory: Path, clock: Clock) -> RankTableWriter:
    """File mode alone: without a ConfigMap target the client is never called."""
    return RankTableWriter(cast(KubeClient, None), str(directory), clock)


def read_pair(directory: Path) -> tuple[str, str]:
    return (directory / "hccl.json").read_text(), (directory / "version").read_text()


def inodes(directory: Path) -> tuple[int, int]:
    """Each write replaces the file (a rename), so an unchanged inode means no write."""
    return (directory / "hccl.json").stat().st_ino, (directory / "version").stat().st_ino


def test_file_version_is_the_time_of_the_change_and_unchanged_content_is_not_written(
    tmp_path: Path,
) -> None:
    clock = Clock(1_700_000_000)
    writer = file_writer(tmp_path, clock)
    job, directory = file_job(), tmp_path / "team.ft"
    assert writer.publish(job, FILE_TARGETS, INITIALIZING) == []
    assert read_pair(directory) == (INITIALIZING, "1700000000")

    clock.now += 7
    assert writer.publish(job, FILE_TARGETS, TABLE_A) == []
    assert read_pair(directory) == (TABLE_A, "1700000007")
    written = inodes(directory)

    clock.now += 60
    assert writer.publish(job, FILE_TARGETS, TABLE_A) == []
    assert inodes(directory) == written
    assert read_pair(directory) == (TABLE_A, "1700000007")


def test_a_restarted_writer_does_not_rewrite_an_unchanged_file(tmp_path: Path) -> None:
    job, directory = file_job(), tmp_path / "team.ft"
    file_writer(tmp_path, Clock(1_700_000_000)).publish(job, FILE_TARGETS, TABLE_A)
    written = inodes(directory)

    after = file_writer(tmp_path, Clock(1_700_000_900))
    assert after.publish(job, FILE_TARGETS, TABLE_A) == []
    assert inodes(directory) == written
    assert read_pair(directory) == (TABLE_A, "1700000000")
    assert after.publish(job, FILE_TARGETS, TABLE_B) == []
    assert read_pair(directory) == (TABLE_B, "1700000900")


def test_a_failed_file_write_is_counted_leaves_no_temporary_file_and_is_retried(
    tmp_path: Path, mocker: MockerFixture
) -> None:
    clock = Clock(1_700_000_000)
    writer = file_writer(tmp_path, clock)
    job, directory = file_job(), tmp_path / "team.ft"
    errors = writes("file", "error")
    fault = mocker.patch(
        "ascendjob_controller.ranktable_writer.os.replace", side_effect=OSError(28, "No space")
    )
    [failure] = writer.publish(job, FILE_TARGETS, TABLE_A)
    assert "hccl.json" in failure and "No space" in failure
    assert writes("file", "error") == errors + 1
    assert list(directory.iterdir()) == []

    mocker.stop(fault)
    clock.now += 2
    assert writer.publish(job, FILE_TARGETS, TABLE_A) == []
    assert read_pair(directory) == (TABLE_A, "1700000002")
    assert writes("file", "error") == errors + 1


def test_a_write_that_fails_between_the_two_files_is_not_taken_for_done(
    tmp_path: Path, mocker: MockerFixture
) -> None:
    """hccl.json replaced, then `version` fails: the retry must still stamp the new content.

    Otherwise the pair on disk (new table, old version) reads as "unchanged" on the retry, by
    the same writer or by a new one after a restart, and the stale version stays for good.
    """
    job, directory = file_job(), tmp_path / "team.ft"
    previous = file_writer(tmp_path, Clock(1_700_000_000))
    previous.publish(job, FILE_TARGETS, INITIALIZING)  # the controller before a restart

    clock = Clock(1_700_000_005)
    writer = file_writer(tmp_path, clock)
    real_replace = os.replace

    def replace(src: str, dst: str | Path) -> None:
        if Path(dst).name == "version":
            raise OSError(5, "Input/output error")
        real_replace(src, dst)

    fault = mocker.patch("ascendjob_controller.ranktable_writer.os.replace", side_effect=replace)
    assert len(writer.publish(job, FILE_TARGETS, TABLE_A)) == 1
    assert read_pair(directory) == (TABLE_A, "1700000000")  # torn: new table, old version
    mocker.stop(fault)

    clock.now += 5  # the same writer's retry mends it
    assert writer.publish(job, FILE_TARGETS, TABLE_A) == []
    assert read_pair(directory) == (TABLE_A, "1700000010")

    # A controller that stopped between the two replaces leaves the same torn pair: `version`
    # older than hccl.json. The next controller's first publish mends it too.
    (directory / "version").write_text("1700000000")
    os.utime(directory / "version", (0, 0))
    clock.now += 5
    restarted = file_writer(tmp_path, clock)
    assert restarted.publish(job, FILE_TARGETS, TABLE_A) == []
    assert read_pair(directory) == (TABLE_A, "1700000015")
