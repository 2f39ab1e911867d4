"""`RankTableWriter.sweep_orphans`: which directories it removes, and all it must not touch.

The job cache is a real AscendJob informer on the embedded API server (cheap: one per module),
so "the job exists" means what it means in the controller. The controller-level story (a
controller started after a job was deleted, a leader change) is in
tests/integration/controller/test_ranktable_sweep.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller import ranktable_sweep
from ascendjob_controller.job.ranktable_targets import RankTableTargets
from ascendjob_controller.kube.client import ASCENDJOBS, KubeClient
from ascendjob_controller.kube.informer import Informer, InformerFactory
from ascendjob_controller.ranktable_writer import INITIALIZING, RankTableWriter
from tests.integration.controller.helpers import (
    fresh_namespace,
    make_client,
    pytorch_job,
    wait_for,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def kube(bare_cluster: Any) -> Iterator[KubeClient]:
    client = make_client(bare_cluster)
    yield client
    client.close()


@pytest.fixture(scope="module")
def jobs(kube: KubeClient) -> Iterator[Informer]:
    factory = InformerFactory(kube)
    informer = factory.informer(ASCENDJOBS)
    factory.start()
    assert informer.wait_for_sync(60)
    yield informer
    factory.stop()


@pytest.fixture
def ns(kube: KubeClient) -> str:
    return fresh_namespace(kube, "sweep")


def writer(root: Path) -> RankTableWriter:
    """File mode only: the sweep never calls the client."""
    return RankTableWriter(cast(KubeClient, None), str(root))


def table_dir(root: Path, name: str, *extra: str) -> Path:
    """`root/name` as the writer leaves it (hccl.json, then version), plus `extra` files."""
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "hccl.json").write_text(INITIALIZING)
    (directory / "version").write_text("1700000000")
    for file in extra:
        (directory / file).write_text("x")
    return directory


def live_job(kube: KubeClient, jobs: Informer, ns: str, name: str) -> None:
    kube.create(ASCENDJOBS, ns, pytorch_job(name))
    wait_for(lambda: jobs.store.get(f"{ns}/{name}"), f"{name} in the job cache")


def test_only_the_directories_of_gone_jobs_are_removed(
    kube: KubeClient, jobs: Informer, ns: str, tmp_path: Path
) -> None:
    live_job(kube, jobs, ns, "live")
    gone = table_dir(tmp_path, f"{ns}.gone", ".version.k2j4x1")  # a temp file left by a crash
    dotted = table_dir(tmp_path, f"{ns}.job.with.dots")  # a job name may hold dots
    live = table_dir(tmp_path, f"{ns}.live")
    removed = writer(tmp_path).sweep_orphans(jobs)
    assert sorted(removed) == [f"{ns}/gone", f"{ns}/job.with.dots"]
    assert not gone.exists() and not dotted.exists()
    assert sorted(p.name for p in live.iterdir()) == ["hccl.json", "version"]


def test_entries_not_named_like_a_job_directory_are_not_touched(
    jobs: Informer, ns: str, tmp_path: Path
) -> None:
    names = ["lost+found", "Upper.case", "nodot", f".{ns}.hidden", f"{ns}.", f"{ns}.-bad"]
    for name in names:
        table_dir(tmp_path, name)
    (tmp_path / f"{ns}.a-file").write_text("not a directory")
    assert writer(tmp_path).sweep_orphans(jobs) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*names, f"{ns}.a-file"])


def test_a_symlink_is_never_followed(jobs: Informer, ns: str, tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "ranktable", tmp_path / "elsewhere"
    root.mkdir()
    target = table_dir(elsewhere, "precious")
    (root / f"{ns}.link").symlink_to(target, target_is_directory=True)
    assert writer(root).sweep_orphans(jobs) == []
    assert (root / f"{ns}.link").is_symlink()
    assert sorted(p.name for p in target.iterdir()) == ["hccl.json", "version"]
    # Swapped for a symlink after the listing: the removal itself refuses to go through it.
    with pytest.raises(OSError):
        ranktable_sweep.remove_job_dir(root, f"{ns}.link")
    assert sorted(p.name for p in target.iterdir()) == ["hccl.json", "version"]


def test_a_directory_holding_anything_else_is_kept(jobs: Informer, ns: str, tmp_path: Path) -> None:
    notes = table_dir(tmp_path, f"{ns}.notes", "notes.txt")
    nested = table_dir(tmp_path, f"{ns}.nested")
    (nested / "hccl.json.d").mkdir()
    inner = nested / "version.d"
    inner.mkdir()
    (inner / "x").write_text("x")
    assert writer(tmp_path).sweep_orphans(jobs) == []
    assert sorted(p.name for p in notes.iterdir()) == ["hccl.json", "notes.txt", "version"]
    assert (inner / "x").exists()


def test_other_namespaces_are_left_to_their_controller(
    jobs: Informer, ns: str, tmp_path: Path
) -> None:
    ours, theirs = table_dir(tmp_path, f"{ns}.gone"), table_dir(tmp_path, "elsewhere.gone")
    assert writer(tmp_path).sweep_orphans(jobs, namespaces=(ns,)) == [f"{ns}/gone"]
    assert not ours.exists() and theirs.exists()


def test_nothing_is_swept_from_an_unsynced_cache(kube: KubeClient, ns: str, tmp_path: Path) -> None:
    unsynced = InformerFactory(kube).informer(ASCENDJOBS)  # never started: empty, not synced
    gone = table_dir(tmp_path, f"{ns}.gone")
    assert writer(tmp_path).sweep_orphans(unsynced) == []
    assert gone.exists()


def test_a_directory_this_writer_is_serving_is_kept(
    jobs: Informer, ns: str, tmp_path: Path
) -> None:
    """A job this process publishes for: its removal is `forget`'s, when the job is deleted.

    It is missing from the cache here only because the test never created it; in the
    controller the publish guard closes the race with a job created during the sweep.
    """
    rt = writer(tmp_path)
    job = {"metadata": {"namespace": ns, "name": "new", "uid": "u-1"}}
    assert rt.publish(job, RankTableTargets(None, False, f"{ns}.new"), INITIALIZING) == []
    assert rt.sweep_orphans(jobs) == []
    assert (tmp_path / f"{ns}.new" / "hccl.json").exists()
    rt.forget(f"{ns}/new")
    assert not (tmp_path / f"{ns}.new").exists()


def test_a_missing_root_or_no_file_mode_sweeps_nothing(jobs: Informer, tmp_path: Path) -> None:
    assert writer(tmp_path / "never-created").sweep_orphans(jobs) == []
    assert RankTableWriter(cast(KubeClient, None), None).sweep_orphans(jobs) == []


def test_a_failed_removal_is_logged_and_the_sweep_goes_on(
    jobs: Informer, ns: str, tmp_path: Path, mocker: MockerFixture
) -> None:
    first, second = table_dir(tmp_path, f"{ns}.a"), table_dir(tmp_path, f"{ns}.b")
    real = ranktable_sweep.remove_job_dir

    def remove(root: Path, name: str) -> list[str]:
        if name == first.name:
            raise PermissionError(13, "Permission denied")
        return real(root, name)

    mocker.patch.object(ranktable_sweep, "remove_job_dir", side_effect=remove)
    assert writer(tmp_path).sweep_orphans(jobs) == [f"{ns}/b"]
    assert first.exists() and not second.exists()
    assert os.listdir(first)  # untouched
