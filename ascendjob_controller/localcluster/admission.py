"""The admission plugins of kube-apiserver's default set that change what a new pod looks like.

- ServiceAccount: a pod without `serviceAccountName` runs as `default`; the account must
  exist (403 otherwise, which is why every namespace gets its `default` account at once);
  unless automounting is off (on the pod, else on the account) every container mounts a
  projected `kube-api-access-xxxxx` volume with the token, the cluster CA and the namespace.
- DefaultTolerationSeconds: a pod that does not tolerate the `not-ready` / `unreachable`
  NoExecute taints gets tolerations for 300 s of each.
- Priority: priority 0 and preemptionPolicy PreemptLowerPriority (no PriorityClass exists).
Only pod creation is admitted, as upstream: updates never add these fields.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from ascendjob_controller.localcluster.builtin import DEFAULT_VOLUME_MODE
from ascendjob_controller.localcluster.errors import ApiError

TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_VOLUME_PREFIX = "kube-api-access-"
TOKEN_EXPIRATION_SECONDS = 3607
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
DEFAULT_TOLERATION_SECONDS = 300

FindAccount = Callable[[str, str], dict[str, Any] | None]  # (namespace, name) -> account


def token_volume(name: str) -> dict[str, Any]:
    """The projected volume the ServiceAccount plugin adds (TokenVolumeSource)."""
    return {
        "name": name,
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "expirationSeconds": TOKEN_EXPIRATION_SECONDS,
                        "path": "token",
                    }
                },
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ],
            "defaultMode": DEFAULT_VOLUME_MODE,
        },
    }


def admit_pod(pod: dict[str, Any], namespace: str, find_account: FindAccount) -> None:
    """Mutate a pod being created as the two plugins do (in place); 403 without its account."""
    spec = pod.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = "default"
    spec["serviceAccount"] = spec["serviceAccountName"]
    account = find_account(namespace, str(spec["serviceAccountName"]))
    if account is None:
        name = (pod.get("metadata") or {}).get("name", "")
        message = (
            f'pods "{name}" is forbidden: error looking up service account '
            f"{namespace}/{spec['serviceAccountName']}: serviceaccount "
            f'"{spec["serviceAccountName"]}" not found'
        )
        raise ApiError(403, "Forbidden", message, {"name": name, "kind": "pods"})
    if _automount(spec, account):
        _mount_token(spec)
    if not spec.get("imagePullSecrets") and account.get("imagePullSecrets"):
        spec["imagePullSecrets"] = [
            {"name": s.get("name")} for s in account["imagePullSecrets"] if isinstance(s, dict)
        ]
    default_tolerations(spec)
    # Priority: no PriorityClass is named, so the cluster default (0) applies.
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")


def _automount(spec: dict[str, Any], account: dict[str, Any]) -> bool:
    if isinstance(spec.get("automountServiceAccountToken"), bool):
        return bool(spec["automountServiceAccountToken"])
    if isinstance(account.get("automountServiceAccountToken"), bool):
        return bool(account["automountServiceAccountToken"])
    return True


def _mount_token(spec: dict[str, Any]) -> None:
    volumes = [v for v in spec.get("volumes") or [] if isinstance(v, dict)]
    existing = next(
        (v["name"] for v in volumes if str(v.get("name", "")).startswith(TOKEN_VOLUME_PREFIX)), ""
    )
    name = existing or TOKEN_VOLUME_PREFIX + "".join(random.choices(_NAME_ALPHABET, k=5))
    mount = {"name": name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}
    mounted = False
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts") or []
            if any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = [*mounts, dict(mount)]
            mounted = True
    if mounted and not existing:
        spec["volumes"] = [*(spec.get("volumes") or []), token_volume(name)]


def default_tolerations(spec: dict[str, Any]) -> None:
    """DefaultTolerationSeconds, which kube-apiserver runs on a pod's creates and updates: a
    PUT that leaves the defaults out gets them back before the update is checked."""
    tolerations = spec.get("tolerations") or []
    added = []
    for taint in _TAINTS:
        tolerated = any(
            isinstance(t, dict)
            and t.get("key") in (taint, "", None)
            and t.get("effect") in ("NoExecute", "", None)
            for t in tolerations
        )
        if not tolerated:
            added.append(
                {
                    "key": taint,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )
    if added:
        spec["tolerations"] = [*tolerations, *added]
