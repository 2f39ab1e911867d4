"""Where a job's rank table goes: a ConfigMap, a file on the controller's host, or nowhere.

Pure functions of the job. The rank table costs a computation per reconcile and a write per
change, so a job that can never read one (no NPUs, no rank-table volume) gets none: most jobs
of the test suites and every CPU-only job stay exactly as cheap as before.

- **ConfigMap `rings-config-<job>`** (MindCluster's convention, mounted by the training
  container at `/user/serverid/devindex/config`), when a replica template mounts it. The real
  operator updates it only when the user created it; we also create it, owned by the job, when
  it does not exist, *before* the pods, so they never hang on a missing volume. A ConfigMap no
  pod mounts is read by nobody, so it is left alone: a CPU or NPU job without the volume costs
  no request at all.
- **File mode**: a template volume named exactly `ranktable` (a hostPath onto the directory the
  controller writes, `<ranktable-dir>/<namespace>.<job>/hccl.json`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ascendjob_controller.job.types import as_dict, dicts, dig

CONFIGMAP_PREFIX = "rings-config-"
FILE_VOLUME = "ranktable"
HCCL_KEY = "hccl.json"
VERSION_KEY = "version"


@dataclass(frozen=True)
class RankTableTargets:
    """What to keep up to date for one job."""

    configmap: str | None  # the ConfigMap's name, when a template mounts it
    create_configmap: bool  # create it when it is missing (always, today, with `configmap`)
    file_dir: str | None  # "<namespace>.<job>", relative to --ranktable-dir, in file mode

    @property
    def any(self) -> bool:
        return self.configmap is not None or self.file_dir is not None


NONE = RankTableTargets(None, False, None)


def configmap_name(job_name: str) -> str:
    return CONFIGMAP_PREFIX + job_name


def _templates(job: dict[str, Any]) -> list[dict[str, Any]]:
    specs = as_dict(dig(job, "spec", "replicaSpecs"))
    return [as_dict(as_dict(spec).get("template")) for spec in specs.values()]


def _volumes(template: dict[str, Any]) -> list[dict[str, Any]]:
    return dicts(dig(template, "spec", "volumes"))


def targets_of(job: dict[str, Any]) -> RankTableTargets:
    """The rank-table targets of `job`; `NONE` for anything malformed or without a name."""
    meta = as_dict(job.get("metadata"))
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not isinstance(namespace, str) or not name:
        return NONE
    cm_name = configmap_name(name)
    templates = _templates(job)
    volumes = [v for t in templates for v in _volumes(t)]
    mounts_cm = any(dig(v, "configMap", "name") == cm_name for v in volumes)
    file_mode = any(v.get("name") == FILE_VOLUME for v in volumes)
    return RankTableTargets(
        configmap=cm_name if mounts_cm else None,
        create_configmap=mounts_cm,
        file_dir=f"{namespace}.{name}" if file_mode else None,
    )
