"""A status patch that touches only status skips the second copy, and stores the same thing.

`verbs.only_status` decides when the patched copy can be the status write's object as it
is; a wrong yes would let a status patch change the spec or metadata, so the table covers
each way a patch could reach outside status, and the stored results of both paths are
compared byte for byte. For a built-in kind that copy shares all but the status with the
stored object (`Entry.copy_status`, also used by pods/binding): every stored version must
still read as it was written.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller.localcluster import builtin, fastjson, verbs
from ascendjob_controller.localcluster.registry import Registry
from ascendjob_controller.localcluster.store import Entry, Store
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


SHARING_PATCHES = [
    *((content_type, lambda uid, rv, make=make: make(uid)) for content_type, make in PATCHES),
    # A value copied out of the spec, then changed inside status: the spec must not see it,
    # nor lose the container fields a ContainerStatus does not have (they are pruned).
    (JSON_PATCH, lambda uid, rv: [
        {"op": "copy", "from": "/spec/containers", "path": "/status/containerStatuses"},
        {"op": "replace", "path": "/status/containerStatuses/0/image", "value": "changed"},
    ]),
    (MERGE_PATCH, lambda uid, rv: {"status": {"conditions": [{"type": "Ready"}]},
                                   "metadata": {"resourceVersion": rv}}),
]  # fmt: skip


@pytest.mark.parametrize(("content_type", "make_patch"), SHARING_PATCHES)
def test_a_status_patch_leaves_the_stored_object_it_shares_with_as_it_was(
    content_type: str, make_patch: Any
) -> None:
    """The patched copy shares the spec and metadata's contents with the stored pod
    (Entry.copy_status); every stored version must still read as it was written."""
    api, uid = _stored_pod()
    before = api.store.get(builtin.PODS.group_resource, "default", "p")
    assert before is not None
    patch = make_patch(uid, before.obj["metadata"]["resourceVersion"])
    result = api.patch(builtin.PODS, "default", "p", content_type, patch, "status")
    assert result.entry is not before  # a write happened
    assert fastjson.dumps(before.obj) == before.raw
    after = result.entry
    assert fastjson.dumps(after.obj) == after.raw
    assert after.obj["spec"] == fastjson.loads(before.raw)["spec"]
    assert after.obj.get("status", {}) is not before.obj.get("status")


def test_a_custom_resource_status_patch_still_copies_the_whole_object(
    mocker: MockerFixture,
) -> None:
    """A custom resource is pruned and defaulted whole on each write: no sharing for it."""
    entry = Entry({"metadata": {"name": "x"}, "spec": {}, "status": {}}, b"{}")
    sharing = mocker.patch.object(Entry, "copy_status")
    copying = mocker.patch.object(Entry, "copy", return_value={"status": {}, "metadata": {}})
    rt = mocker.Mock(builtin=False)
    Api._patched(rt, entry, MERGE_PATCH, {"status": {"a": 1}}, status_only=True)
    assert copying.call_count == 1
    assert sharing.call_count == 0


def test_a_binding_leaves_the_stored_object_it_shares_with_as_it_was() -> None:
    """pods/binding copies the status and the spec's top level only (the node goes there)."""
    api, _ = _stored_pod()
    before = api.store.get(builtin.PODS.group_resource, "default", "p")
    assert before is not None
    api.bind("default", "p", {"target": {"name": "node-1"}})
    after = api.store.get(builtin.PODS.group_resource, "default", "p")
    assert after is not None and after is not before
    assert fastjson.dumps(before.obj) == before.raw
    assert "nodeName" not in before.obj["spec"]
    assert after.obj["spec"]["nodeName"] == "node-1"
    assert [c["type"] for c in after.obj["status"]["conditions"]] == ["PodScheduled"]
    assert after.obj["spec"]["containers"] == before.obj["spec"]["containers"]
