"""Finding the rank-table directories under `--ranktable-dir`, and removing one safely.

`RankTableWriter.forget` removes a job's `<namespace>.<job>` directory when the job is deleted,
but only a directory this process wrote: a job deleted while the controller was down, or while
no replica led, leaves its directory behind for good. `RankTableWriter.sweep_orphans` removes
those once this replica leads and its job cache has synced; this module is its filesystem
half, careful because the directory is a hostPath that people and other tools share:
- **Only our naming.** An entry is a job's directory only when its name is one Kubernetes
  could give, `<namespace>.<job>`: a DNS label (a namespace has no dot), a dot, then a DNS
  subdomain. Anything else under the directory (`lost+found`, a user's notes) is not looked
  at.
- **Never through a symlink.** A symlink entry is skipped, and the directory is opened with
  `O_NOFOLLOW` and emptied through its file descriptor, so swapping it for a symlink between
  the listing and the removal cannot redirect the removal elsewhere.
- **Only what the writer puts there.** A directory holding anything but `hccl.json`, `version`
  and their temporary files is kept, and the caller says so: someone else uses it.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ascendjob_controller.job.ranktable_targets import HCCL_KEY, VERSION_KEY

_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
#: `<namespace>.<job>`: a namespace is a DNS label (at most 63), a job name a DNS subdomain.
JOB_DIR = re.compile(rf"(?P<namespace>{_LABEL})\.(?P<name>{_LABEL}(?:\.{_LABEL})*)")
MAX_NAMESPACE, MAX_NAME = 63, 253
OUR_FILES = (HCCL_KEY, VERSION_KEY)


@dataclass(frozen=True)
class JobDir:
    """A `<namespace>.<job>` directory found under the rank-table directory."""

    name: str  # the entry's name, "<namespace>.<job>"
    namespace: str
    job: str

    @property
    def key(self) -> str:
        """The job's cache key, "<namespace>/<job>"."""
        return f"{self.namespace}/{self.job}"


def job_dirs(root: Path) -> list[JobDir]:
    """The job directories directly under `root`; none when `root` does not exist yet."""
    try:
        with os.scandir(root) as entries:
            found = [_job_dir(entry) for entry in entries]
    except FileNotFoundError:
        return []
    return sorted((d for d in found if d is not None), key=lambda d: d.name)


def _job_dir(entry: os.DirEntry[str]) -> JobDir | None:
    match = JOB_DIR.fullmatch(entry.name)
    if match is None:
        return None
    namespace, job = match["namespace"], match["name"]
    if len(namespace) > MAX_NAMESPACE or len(job) > MAX_NAME:
        return None
    if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
        return None
    return JobDir(entry.name, namespace, job)


def _written_by_us(name: str) -> bool:
    """hccl.json, version, or a temporary file of either (`_replace`'s `.<name>.<random>`)."""
    return name in OUR_FILES or any(name.startswith(f".{ours}.") for ours in OUR_FILES)


def remove_job_dir(root: Path, name: str) -> list[str]:
    """Remove `root/name` if it holds only the writer's files; else the entries that keep it.

    An empty list means removed (or already gone). OSError is the caller's to report.
    """
    parent = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
        except FileNotFoundError:
            return []
        try:
            foreign = _empty_if_ours(fd)
        finally:
            os.close(fd)
        if foreign:
            return foreign
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(name, dir_fd=parent)
    finally:
        os.close(parent)
    return []


def _empty_if_ours(fd: int) -> list[str]:
    """Unlink the directory's entries if every one is ours; else return the others, sorted."""
    with os.scandir(fd) as entries:
        listed = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    foreign = sorted(name for name, is_dir in listed if is_dir or not _written_by_us(name))
    if foreign:
        return foreign
    for name, _ in listed:
        with contextlib.suppress(FileNotFoundError):  # `forget` may be removing it too
            os.unlink(name, dir_fd=fd)
    return []
