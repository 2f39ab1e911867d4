"""Writes a job's rank table where its pods read it: the `rings-config-<job>` ConfigMap and, in
file mode, `<ranktable-dir>/<namespace>.<job>/{hccl.json,version}`.

The table itself is a pure function (`job.ranktable`); this is the imperative shell around it,
built like the status write:
- **Once per change.** The last content written is remembered per job uid, so a pod event that
  changes nothing in the table writes nothing. After a restart the first publish reads what is
  stored and keeps its `version` when the content is the same.
- **`version` is the Unix time at which the content last changed** (the real operator writes
  the previous save's time, and 0 after a restart), including the ConfigMap created with
  `initializing`. A stored copy without a readable version is rewritten with one.
- **Failures are returned**, never raised: the reconciler turns them into a Warning Event and a
  retry with back-off, and `ascendjob_ranktable_writes_total{result="error"}` counts them.
- **Orphans are swept at start.** A job deleted while no replica led leaves its directory
  behind (`forget` only sees deletions it is running for): `sweep_orphans` removes those once
  this replica leads with a synced job cache (`ranktable_sweep` says how carefully).
- **Files are replaced atomically** (a temporary file in the same directory, then rename), so a
  reader never sees half a table: hccl.json first, then version, so a reader that sees a new
  version finds its table. A write that fails or stops between the two is rewritten whole
  (`TORN`, `_stored_file`). Files are 0644 and the directory 0744, as MindCluster's.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from ascendjob_controller import metrics, ranktable_sweep
from ascendjob_controller.job import ranktable
from ascendjob_controller.job.desired import owner_reference
from ascendjob_controller.job.ranktable_targets import HCCL_KEY, VERSION_KEY, RankTableTargets
from ascendjob_controller.job.types import parse_job
from ascendjob_controller.kube.client import (
    CONFIGMAPS,
    ApiError,
    KubeClient,
    is_already_exists,
    is_not_found,
)

if TYPE_CHECKING:
    from ascendjob_controller.kube.informer import Informer

log = structlog.get_logger("ascendjob_controller.ranktable")

DEFAULT_DIR = "/user/mindx-dl/ranktable"
INITIALIZING = ranktable.dumps(ranktable.initializing())
FILE_MODE = 0o644
DIR_MODE = 0o744


@dataclass(frozen=True)
class Published:
    """What was last stored for a job: the hccl.json text and its version stamp."""

    content: str
    version: str


#: Remembered after a failed file write. It matches no table (`dumps` never returns ""), so the
#: retry rewrites both files instead of reading back a pair the failure may have torn (a new
#: hccl.json beside the old version), which would look unchanged and keep a stale version.
TORN = Published("", "")


class TooLarge(str):
    """A failure that retrying cannot mend: the table is larger than a ConfigMap can hold.

    The API server refuses a ConfigMap whose data exceed 1 MiB (422 "Too long") and a body
    over 3 MiB (413); a v2.0 table of 1,000 pods is 3.4 MiB. Re-sending it with back-off
    would only repeat the refusal and its Event, so the writer reports each such table once
    and does not retry it; the reconciler makes it a `RankTableTooLarge` Warning, not an error.
    """


def _refused_as_too_large(err: BaseException) -> bool:
    if not isinstance(err, ApiError):
        return False
    return err.status == 413 or (err.status == 422 and "too long" in err.message.lower())


class RankTableWriter:
    """Keeps each job's stored rank table equal to the one computed from its pods."""

    def __init__(
        self,
        client: KubeClient,
        directory: str | None = DEFAULT_DIR,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._dir = Path(directory) if directory else None
        self._clock = clock
        self._lock = threading.Lock()
        # Keyed by job uid: a job re-created under the same name starts afresh.
        self._configmaps: dict[str, Published] = {}
        self._files: dict[str, Published] = {}
        self._ensured: set[str] = set()  # job uids whose ConfigMap is known to exist
        self._uids: dict[str, str] = {}  # job key -> uid, for `forget`
        self._dirs: dict[str, Path] = {}  # job key -> the directory written for it
        self._oversized: dict[str, str] = {}  # job uid -> the table reported as too large

    # -- before the pods: the ConfigMap they mount must exist ---------------------------------

    def ensure_configmap(self, job: dict[str, Any], targets: RankTableTargets) -> list[str]:
        """Create the mounted `rings-config-<job>` (owned by the job) unless it exists."""
        uid = job["metadata"]["uid"]
        if not targets.create_configmap or targets.configmap is None or uid in self._ensured:
            return []
        namespace = job["metadata"]["namespace"]
        # Its content is set now, so its version is now: a reader sees the first table change.
        created = Published(INITIALIZING, self._stamp())
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": targets.configmap,
                "namespace": namespace,
                "ownerReferences": [owner_reference(parse_job(job))],
            },
            "data": {HCCL_KEY: created.content, VERSION_KEY: created.version},
        }
        try:
            self._client.create(CONFIGMAPS, namespace, body)
        except Exception as err:
            if not is_already_exists(err):
                metrics.RANKTABLE_WRITES.labels(target="configmap", result="error").inc()
                return [f"create configmap {targets.configmap}: {_message(err)}"]
        else:
            metrics.RANKTABLE_WRITES.labels(target="configmap", result="success").inc()
            # What we just stored: the first publish needs no read to compare with it.
            self._remember(self._configmaps, job, created)
            log.info(
                "ranktable_configmap_created", namespace=namespace, configmap=targets.configmap
            )
        with self._lock:
            self._ensured.add(uid)
            self._uids[_key(job)] = uid
        return []

    # -- after the plan: publish the table when it changed ------------------------------------

    def publish(self, job: dict[str, Any], targets: RankTableTargets, content: str) -> list[str]:
        """Store `content` (the hccl.json text) in every target whose copy differs."""
        failures: list[str] = []
        if targets.configmap is not None:
            failures.extend(self._publish_configmap(job, targets.configmap, content))
        if targets.file_dir is not None and self._dir is not None:
            failures.extend(self._publish_file(job, self._dir / targets.file_dir, content))
        return failures

    def _next(self, last: Published | None, content: str) -> Published | None:
        """The record to write, or None when the stored copy already has this content."""
        if last is not None and last.content == content:
            return None
        return Published(content, self._stamp())

    def _stamp(self) -> str:
        """The version of content that changes now: the Unix time, in whole seconds."""
        return str(int(self._clock()))

    def _publish_configmap(self, job: dict[str, Any], name: str, content: str) -> list[str]:
        meta = job["metadata"]
        uid, namespace = meta["uid"], meta["namespace"]
        with self._lock:
            last = self._configmaps.get(uid)
        if last is None:
            last = self._stored_configmap(namespace, name)
        record = self._next(last, content)
        if record is None:
            self._remember(self._configmaps, job, last)
            return []
        with self._lock:
            if self._oversized.get(uid) == content:
                return []  # reported already; a new table is checked afresh
        if not ranktable.configmap_fits(record.content, record.version):
            return self._too_large(job, name, record)
        patch = {"data": {HCCL_KEY: record.content, VERSION_KEY: record.version}}
        try:
            self._client.patch(CONFIGMAPS, namespace, name, patch, patch_type="merge")
        except Exception as err:
            if is_not_found(err):
                # Neither mounted nor created by the user: nothing to update, as MindCluster.
                return []
            if _refused_as_too_large(err):  # with the keys a user added, say
                return self._too_large(job, name, record)
            metrics.RANKTABLE_WRITES.labels(target="configmap", result="error").inc()
            return [f"write configmap {name}: {_message(err)}"]
        metrics.RANKTABLE_WRITES.labels(target="configmap", result="success").inc()
        with self._lock:
            self._oversized.pop(uid, None)
        self._remember(self._configmaps, job, record)
        log.info("ranktable_written", namespace=namespace, configmap=name, version=record.version)
        return []

    def _too_large(self, job: dict[str, Any], name: str, record: Published) -> list[str]:
        """Report `record` once as too large for ConfigMap `name`; it is not retried."""
        meta = job["metadata"]
        with self._lock:
            self._oversized[meta["uid"]] = record.content
            self._uids[_key(job)] = meta["uid"]
        metrics.RANKTABLE_WRITES.labels(target="configmap", result="too_large").inc()
        size = len(record.content.encode("utf-8", "surrogatepass"))
        log.warning("ranktable_too_large", namespace=meta["namespace"], configmap=name, bytes=size)
        return [
            TooLarge(
                f"hccl.json of {size} bytes cannot be stored in ConfigMap {name}: a ConfigMap "
                f"holds at most {ranktable.CONFIGMAP_DATA_LIMIT} bytes of data; use file mode "
                "(a volume named ranktable) for a table this large"
            )
        ]

    def _stored_configmap(self, namespace: str, name: str) -> Published | None:
        """What the ConfigMap holds now (first publish after a restart), None if unknown."""
        try:
            stored = self._client.get(CONFIGMAPS, namespace, name)
        except Exception:
            return None  # the patch below settles it, or fails and is retried
        data = stored.get("data") if isinstance(stored, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get(HCCL_KEY), str):
            return None
        version = data.get(VERSION_KEY)
        if not _is_stamp(version):
            return None  # e.g. a user's ConfigMap with no version yet: write one
        return Published(data[HCCL_KEY], str(version))

    def _publish_file(self, job: dict[str, Any], directory: Path, content: str) -> list[str]:
        uid = job["metadata"]["uid"]
        with self._lock:
            last = self._files.get(uid)
            self._dirs[_key(job)] = directory  # removed with the job, even if never rewritten
        if last is None:
            last = _stored_file(directory)
        record = self._next(last, content)
        if record is None:
            self._remember(self._files, job, last)
            return []
        try:
            directory.mkdir(parents=True, exist_ok=True)
            os.chmod(directory, DIR_MODE)
            _replace(directory / HCCL_KEY, record.content)
            _replace(directory / VERSION_KEY, record.version)
        except OSError as err:
            metrics.RANKTABLE_WRITES.labels(target="file", result="error").inc()
            self._remember(self._files, job, TORN)
            return [f"write {directory / HCCL_KEY}: {err}"]
        metrics.RANKTABLE_WRITES.labels(target="file", result="success").inc()
        self._remember(self._files, job, record)
        log.info("ranktable_file_written", path=str(directory / HCCL_KEY), version=record.version)
        return []

    def _remember(
        self, records: dict[str, Published], job: dict[str, Any], record: Published | None
    ) -> None:
        if record is not None:
            with self._lock:
                records[job["metadata"]["uid"]] = record
                self._uids[_key(job)] = job["metadata"]["uid"]

    # -- when the job is gone ---------------------------------------------------------------

    def forget(self, key: str) -> None:
        """The job `key` is gone: drop its records and remove its rank-table directory.

        Called from the job's reconcile (never from an informer handler), so it cannot race
        with a publish of the same job: the work queue never runs one key twice at once.
        """
        with self._lock:
            uid = self._uids.pop(key, "")
            directory = self._dirs.pop(key, None)
            self._configmaps.pop(uid, None)
            self._files.pop(uid, None)
            self._oversized.pop(uid, None)
            self._ensured.discard(uid)
        if directory is None:
            return
        try:
            shutil.rmtree(directory)
        except FileNotFoundError:
            return
        except OSError as err:
            log.warning("ranktable_file_remove_failed", path=str(directory), error=str(err))
            return
        log.info("ranktable_file_removed", path=str(directory))

    # -- at start: the directories of jobs deleted while no replica led ----------------------

    def sweep_orphans(self, jobs: Informer, namespaces: Collection[str] = ()) -> list[str]:
        """Remove every `<ns>.<job>` directory whose job is gone; returns their job keys.

        Call it once this replica leads and `jobs` has synced: a job missing from a synced
        cache has been deleted, while an unsynced cache misses live jobs, whose tables this
        would delete. With `namespaces` (the controller's --namespace), directories of other
        namespaces are left alone: another controller may be serving them.
        """
        if self._dir is None:
            return []
        if not jobs.has_synced():
            log.warning("ranktable_sweep_skipped", reason="the job cache has not synced")
            return []
        try:
            found = ranktable_sweep.job_dirs(self._dir)
        except OSError as err:
            log.warning("ranktable_sweep_failed", path=str(self._dir), error=str(err))
            return []
        watched = [d for d in found if not namespaces or d.namespace in namespaces]
        removed = [d.key for d in watched if self._sweep_one(self._dir, d, jobs)]
        if not found:
            return []  # nothing was ever written here: no line in every start's log
        log.info(
            "ranktable_sweep_finished",
            path=str(self._dir),
            removed=len(removed),
            kept=len(found) - len(removed),
        )
        return removed

    def _sweep_one(self, root: Path, found: ranktable_sweep.JobDir, jobs: Informer) -> bool:
        """Remove one directory if its job is gone; True when removed.

        Under the lock, so a job of that name created meanwhile cannot lose a fresh table:
        its publish either registered the directory first (then it is kept) or waits for
        the removal, finds no file and writes one.
        """
        path = str(root / found.name)
        with self._lock:
            if found.key in self._dirs or jobs.store.get(found.key) is not None:
                return False
            try:
                foreign = ranktable_sweep.remove_job_dir(root, found.name)
            except OSError as err:
                log.warning("ranktable_orphan_remove_failed", path=path, error=str(err))
                return False
        if foreign:
            log.warning("ranktable_orphan_kept", path=path, foreign_entries=foreign[:10])
            return False
        log.info("ranktable_orphan_removed", path=path, namespace=found.namespace, job=found.job)
        return True


def _replace(path: Path, text: str) -> None:
    """Write `text` to `path` atomically: a reader sees the old file or the new, never a part."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _stored_file(directory: Path) -> Published | None:
    """What a previous controller left in `directory`, None when unknown or not to be trusted.

    `version` is replaced after hccl.json, so in a pair written whole it is never the older
    file. An older one means a write stopped between the two (the process was killed): its
    version belongs to the previous table, and the pair is rewritten. A wall clock stepped
    back between the two writes costs, at worst, one needless rewrite.
    """
    hccl, stamp = directory / HCCL_KEY, directory / VERSION_KEY
    try:
        if stamp.stat().st_mtime_ns < hccl.stat().st_mtime_ns:
            return None
        content = hccl.read_text(encoding="utf-8")
        version = stamp.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return Published(content, version) if _is_stamp(version) else None


def _is_stamp(version: object) -> bool:
    """A version as we write it: decimal digits (Unix seconds), nothing else."""
    return isinstance(version, str) and version.isascii() and version.isdigit()


def _key(job: dict[str, Any]) -> str:
    return f"{job['metadata']['namespace']}/{job['metadata']['name']}"


def _message(err: BaseException) -> str:
    return str(getattr(err, "message", "") or err)
