"""A status patch that touches only status skips the second copy, and stores the same thing.

`verbs.only_status` decides when the patched copy can be the status write's object as it
is; a wrong yes would let a status patch change the spec or metadata, so the table covers
each way a patch could reach outside status, and the stored results of both paths are
compared byte for byte.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller.localcluster import builtin, verbs
from ascendjob_controller.localcluster.registry import Registry
from ascendjob_controller.localcluster.store import Store
from ascendjob_controller.localcluster.verbs import JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, Api

TEST_UID = {"op": "test", "path": "/metadata/uid", "value": "u"}


@pytest.mark.parametrize(
    ("content_type", "patch", "only"),
    [
        (JSON_PATCH, [TEST_UID, {"op": "add", "path": "/status/phase", "value": "Running"}], True),
        (JSON_PATCH, [{"op": "replace", "path": "/status", "value": {}}], True),
        (JSON_PATCH, [{"op": "remove", "path": "/status/podIP"}], True),
        (JSON_PATCH, [{"op": "copy", "from": "/spec/nodeName", "path": "/status/x"}], True),
        (JSON_PATCH, [{"op": "move", "from": "/status/a", "path": "/status/b"}], True),
        (JSON_PATCH, [{"op": "move", "from": "/spec/nodeName", "path": "/status/x"}], False),
        (JSON_PATCH, [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}], False),
        (JSON_PATCH, [{"op": "add", "path": "/statusx", "value": 1}], False),
        (JSON_PATCH, [{"op": "add", "path": "/spec/status", "value": 1}], False),
        (JSON_PATCH, [{"op": "frobnicate", "path": "/status/x"}], False),
        (JSON_PATCH, ["not an op"], False),
        (JSON_PATCH, {"status": {}}, False),
        (MERGE_PATCH, {"status": {"phase": "Running"}}, True),
        (MERGE_PATCH, {"status": None}, True),
        (MERGE_PATCH, {"status": {}, "metadata": {"resourceVersion": "7"}}, True),
        (MERGE_PATCH, {"status": {}, "metadata": {"labels": {"a": "b"}}}, False),
        (MERGE_PATCH, {"status": {}, "metadata": None}, False),
        (MERGE_PATCH, {"status": {}, "spec": {"nodeName": "x"}}, False),
        (MERGE_PATCH, [], False),
        (STRATEGIC_PATCH, {"status": {"phase": "Running"}}, False),  # not worth its rules
    ],
)
def test_only_status(content_type: str, patch: Any, only: bool) -> None:
    assert verbs.only_status(content_type, patch) is only


def _stored_pod() -> tuple[Api, str]:
    api = Api(Store(), Registry())
    api.create(builtin.NAMESPACES, "", {"metadata": {"name": "default"}})
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    created = api.create(builtin.PODS, "default", pod)
    return api, created.entry.obj["metadata"]["uid"]


PATCHES = [
    (JSON_PATCH, lambda uid: [
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {"op": "add", "path": "/status/phase", "value": "Running"},
        {"op": "add", "path": "/status/podIP", "value": "10.0.0.2"},
    ]),
    (MERGE_PATCH, lambda uid: {"status": {"phase": "Failed", "reason": "Evicted"}}),
    (MERGE_PATCH, lambda uid: {"status": None}),
]  # fmt: skip


# What two stores holding the same pod cannot share: its uid, the token volume's random
# suffix, and the second the writes happened in.
VOLATILE = re.compile(rb"[0-9a-f]{8}-[0-9a-f-]{27}|kube-api-access-\w{5}|\d{4}-\d\d-\d\dT[\d:]{8}Z")


@pytest.mark.parametrize(("content_type", "make_patch"), PATCHES)
def test_both_paths_store_the_same_bytes(
    content_type: str, make_patch: Any, mocker: MockerFixture
) -> None:
    fast_api, uid = _stored_pod()
    fast = fast_api.patch(builtin.PODS, "default", "p", content_type, make_patch(uid), "status")
    copying = mocker.patch.object(verbs, "only_status", return_value=False)
    slow_api, uid = _stored_pod()
    slow = slow_api.patch(builtin.PODS, "default", "p", content_type, make_patch(uid), "status")
    assert copying.call_count == 1
    assert VOLATILE.sub(b"X", fast.entry.raw) == VOLATILE.sub(b"X", slow.entry.raw)
    assert fast.entry.obj["metadata"]["resourceVersion"] != "1"  # a write happened


def test_a_status_patch_reaching_outside_status_changes_only_status() -> None:
    api, _ = _stored_pod()
    patch = {"status": {"phase": "Running"}, "metadata": {"labels": {"a": "changed"}}}
    result = api.patch(builtin.PODS, "default", "p", MERGE_PATCH, patch, "status")
    assert result.entry.obj["status"]["phase"] == "Running"
    assert result.entry.obj["metadata"]["labels"] == {"a": "b"}
