"""Watches through the official client: resume by resourceVersion, 410, bookmarks, faults."""

from __future__ import annotations

import json
import threading
import urllib.request
from typing import Any

import pytest
from kubernetes import watch
from kubernetes.client.rest import ApiException

from ascendjob_controller.localcluster.cluster import LocalCluster

from .conftest import WINDOW, pod_body

pytestmark = pytest.mark.integration


def _names(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"].metadata.name) for e in events]


def test_list_then_watch_resumes_without_loss_or_duplicates(core: Any, namespace: str) -> None:
    for i in range(3):
        core.create_namespaced_pod(namespace, pod_body(f"before-{i}"))
    listed = core.list_namespaced_pod(namespace)
    assert sorted(p.metadata.name for p in listed.items) == [f"before-{i}" for i in range(3)]
    rv = listed.metadata.resource_version

    for i in range(4):
        core.create_namespaced_pod(namespace, pod_body(f"after-{i}"))
    first: list[dict[str, Any]] = []
    w = watch.Watch()
    for event in w.stream(
        core.list_namespaced_pod, namespace, resource_version=rv, timeout_seconds=30
    ):
        first.append(event)
        if len(first) == 2:
            w.stop()
    resume_rv = first[-1]["object"].metadata.resource_version

    core.delete_namespaced_pod("before-0", namespace)
    second: list[dict[str, Any]] = []
    w = watch.Watch()
    for event in w.stream(
        core.list_namespaced_pod, namespace, resource_version=resume_rv, timeout_seconds=30
    ):
        second.append(event)
        if len(second) == 4:
            w.stop()
    # Deleting even an unbound pod first marks it (grace 0), as kube-apiserver does.
    assert _names(first + second) == [
        ("ADDED", "after-0"),
        ("ADDED", "after-1"),
        ("ADDED", "after-2"),
        ("ADDED", "after-3"),
        ("MODIFIED", "before-0"),
        ("DELETED", "before-0"),
    ]
    rvs = [int(e["object"].metadata.resource_version) for e in first + second]
    assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)


def test_watch_from_a_revision_older_than_the_window_gets_410(
    cluster: LocalCluster, core: Any, namespace: str
) -> None:
    old_rv = core.list_namespaced_pod(namespace).metadata.resource_version
    for i in range(WINDOW + WINDOW // 5):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"cm-{i}"}})
    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(
            core.list_namespaced_pod, namespace, resource_version=old_rv, timeout_seconds=5
        ):
            pass
    assert err.value.status == 410
    assert "too old resource version" in str(err.value.reason)


def test_bookmarks_arrive_and_carry_only_a_resource_version(core: Any, namespace: str) -> None:
    rv = core.list_namespaced_pod(namespace).metadata.resource_version
    events = []
    for event in watch.Watch().stream(
        core.list_namespaced_pod,
        namespace,
        resource_version=rv,
        allow_watch_bookmarks=True,
        timeout_seconds=2,
        _preload_content=False,
    ):
        events.append(event)
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks, events
    raw = bookmarks[0]["raw_object"]
    assert raw["kind"] == "Pod" and set(raw["metadata"]) == {"resourceVersion"}
    assert int(raw["metadata"]["resourceVersion"]) >= int(rv)


def test_label_selector_watch_reports_objects_leaving_as_deleted(core: Any, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod_body("p", labels={"team": "a"}))
    rv = core.list_namespaced_pod(namespace).metadata.resource_version
    core.patch_namespaced_pod("p", namespace, {"metadata": {"labels": {"team": "b"}}})
    events = []
    w = watch.Watch()
    for event in w.stream(
        core.list_namespaced_pod,
        namespace,
        label_selector="team=a",
        resource_version=rv,
        timeout_seconds=10,
    ):
        events.append(event)
        w.stop()
    assert _names(events) == [("DELETED", "p")]
    # the object as it was when it matched, at the event's resourceVersion
    assert events[0]["object"].metadata.labels == {"team": "a"}
    assert int(events[0]["object"].metadata.resource_version) > int(rv)


def test_drop_watches_ends_open_streams(cluster: LocalCluster, core: Any, namespace: str) -> None:
    ended = threading.Event()

    def run() -> None:
        for _ in watch.Watch().stream(core.list_namespaced_pod, namespace, timeout_seconds=60):
            pass
        ended.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    threading.Event().wait(0.5)
    cluster.faults.drop_watches()
    assert ended.wait(20), "watch did not end after drop_watches()"


def test_expire_next_watch_forces_one_410(cluster: LocalCluster, core: Any, namespace: str) -> None:
    cluster.faults.expire_next_watch()
    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(core.list_namespaced_pod, namespace, timeout_seconds=5):
            pass
    assert err.value.status == 410
    # only the next one: the following watch works
    core.create_namespaced_pod(namespace, pod_body("ok"))
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_pod, namespace, timeout_seconds=10):
        assert event["object"].metadata.name == "ok"
        w.stop()


def test_send_initial_events_ends_with_an_annotated_bookmark(
    cluster: LocalCluster, core: Any, namespace: str
) -> None:

    core.create_namespaced_pod(namespace, pod_body("one"))
    url = (
        f"{cluster.url}/api/v1/namespaces/{namespace}/pods?watch=true&sendInitialEvents=true"
        "&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
    )
    with urllib.request.urlopen(url, timeout=30) as resp:
        events = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "one"
    assert events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_unsupported_field_label_is_400(core: Any, namespace: str) -> None:
    with pytest.raises(ApiException) as err:
        core.list_namespaced_config_map(namespace, field_selector="data.x=1")
    assert err.value.status == 400
    assert '\\"data.x\\" is not a known field selector' in err.value.body
    assert core.list_namespaced_pod(namespace, field_selector="status.phase=Running").items == []
