"""parse_job_with_meta remembers its views by a digest of what it reads (`memo.py`).

As in test_validation_memo.py, every remembered view is compared with a fresh one, and edits
are made in place, on the same dict: only the content may decide.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller.job import env

from .factories import job, replica, sample_job


@pytest.fixture(autouse=True)
def empty_memo() -> Iterator[None]:
    env._VIEWS.clear()
    yield
    env._VIEWS.clear()


def test_a_remembered_view_is_the_fresh_view() -> None:
    body = sample_job()
    first = env.parse_job_with_meta(body)
    assert env.parse_job_with_meta(body) is first
    assert first == env._parse_job_with_meta(body)


def test_a_status_write_does_not_parse_again(mocker: MockerFixture) -> None:
    body = sample_job()
    first = env.parse_job_with_meta(body)
    fresh = mocker.spy(env, "_parse_job_with_meta")
    written = copy.deepcopy(body)
    written["status"] = {"conditions": [{"type": "Created", "status": "True"}]}
    written["metadata"]["resourceVersion"] = "999"
    written["metadata"]["generation"] = 7
    assert env.parse_job_with_meta(written) is first
    assert fresh.call_count == 0


@pytest.mark.parametrize(
    "edit",
    [
        lambda b: b["spec"]["replicaSpecs"]["Worker"].update(replicas=3),
        lambda b: b["spec"]["runPolicy"].update(backoffLimit=5),
        lambda b: b["metadata"]["labels"].update({"fault-retry-times": "2"}),
        lambda b: b["metadata"].setdefault("annotations", {}).update({"sp-block": "16"}),
        lambda b: b["metadata"].update(uid="another-uid"),
        lambda b: b["metadata"].update(namespace="elsewhere"),
        lambda b: b["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z"),
    ],
    ids=["replicas", "backoff", "label", "annotation", "uid", "namespace", "deleting"],
)
def test_an_edit_in_place_of_what_is_read_parses_again(
    edit: Callable[[dict[str, Any]], object],
) -> None:
    body = sample_job()
    body["spec"].setdefault("runPolicy", {})
    before = env.parse_job_with_meta(body)
    edit(body)
    after = env.parse_job_with_meta(body)
    assert after != before
    assert after == env._parse_job_with_meta(body)


def test_what_orjson_cannot_encode_is_parsed_every_time(mocker: MockerFixture) -> None:
    body = job("pytorch", {"Master": replica(), "Worker": replica()})
    body["spec"]["extra"] = 2**70
    fresh = mocker.spy(env, "_parse_job_with_meta")
    assert env.parse_job_with_meta(body) == env.parse_job_with_meta(body)
    assert fresh.call_count == 2 and len(env._VIEWS) == 0


def test_the_memo_stays_bounded(mocker: MockerFixture) -> None:
    mocker.patch.object(env._VIEWS, "size", 3)
    for replicas in range(1, 8):
        body = job("pytorch", {"Master": replica(), "Worker": replica(replicas)})
        assert env.parse_job_with_meta(body) == env._parse_job_with_meta(body)
        assert len(env._VIEWS) <= 3
