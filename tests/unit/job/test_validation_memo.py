"""validate() remembers its answers by a digest of what it reads; the answers never change.

Every test compares the remembered answer with a fresh check (`_validate`), and the edits are
made in place, on the same dict, as a careless caller would: only the content may decide.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller.job import validation as v

from .factories import job, replica, sample_job


@pytest.fixture(autouse=True)
def empty_memo() -> Iterator[None]:
    v._MEMO.clear()
    yield
    v._MEMO.clear()


def _bodies() -> list[dict[str, Any]]:
    return [
        sample_job(),
        job("pytorch"),
        job("caffe"),
        job(None),
        job("pytorch", {"Master": replica(), "Worker": replica(-1)}),
        job("pytorch", {"Worker": replica(2)}),
        job("tensorflow", {"Worker": replica(2)}),
    ]


def test_a_remembered_answer_is_the_fresh_answer() -> None:
    for body in _bodies():
        first = v.validate(body)
        assert v.validate(body) == first == v._validate(body)
    assert len(v._MEMO) == len(_bodies())


def test_an_edit_in_place_is_checked_again() -> None:
    body = job("pytorch")
    assert v.validate(body) == []
    body["spec"]["replicaSpecs"]["Master"]["replicas"] = 2
    assert [p.reason for p in v.validate(body)] == [v.INVALID_REPLICA_SPEC]
    body["metadata"]["labels"]["framework"] = "caffe"
    assert [p.reason for p in v.validate(body)] == [v.INVALID_FRAMEWORK]
    body["metadata"]["labels"]["framework"] = "pytorch"
    body["spec"]["replicaSpecs"]["Master"]["replicas"] = 1
    assert v.validate(body) == []


def test_the_callers_list_is_its_own() -> None:
    body = job("pytorch", {"Worker": replica(2)})
    problems = v.validate(body)
    problems.clear()
    assert [p.reason for p in v.validate(body)] == [v.INVALID_LEADER]


def test_what_orjson_cannot_encode_is_checked_every_time(mocker: MockerFixture) -> None:
    body = job("pytorch", {"Master": replica(), "Worker": replica(2**70)})
    fresh = mocker.spy(v, "_validate")
    assert [p.reason for p in v.validate(body)] == [v.INVALID_REPLICA_SPEC]
    assert [p.reason for p in v.validate(body)] == [v.INVALID_REPLICA_SPEC]
    assert fresh.call_count == 2 and v._MEMO == {}


def test_a_known_spec_is_not_checked_again(mocker: MockerFixture) -> None:
    body = sample_job()
    v.validate(body)
    fresh = mocker.spy(v, "_validate")
    assert v.validate(copy.deepcopy(body)) == []  # another dict, the same content
    assert fresh.call_count == 0


def test_the_memo_stays_bounded(mocker: MockerFixture) -> None:
    mocker.patch.object(v, "MEMO_SIZE", 3)
    for replicas in range(1, 8):
        body = job("pytorch", {"Master": replica(), "Worker": replica(replicas)})
        assert v.validate(body) == v._validate(body)
        assert len(v._MEMO) <= 3
