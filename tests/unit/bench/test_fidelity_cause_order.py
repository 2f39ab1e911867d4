"""The fidelity suite compares a 422's causes as a set: kube-openapi lists them in random order."""

from __future__ import annotations

from typing import Any

from hack.fidelity.normalize import Normalizer, in_cause_order


def _status(causes: list[dict[str, str]], message: str = "") -> dict[str, Any]:
    listed = ", ".join(f"{c['field']}: {c['message']}" for c in causes)
    return {
        "kind": "Status",
        "code": 422,
        "message": message or f'AscendJob.mindxdl.gitee.com "x" is invalid: [{listed}]',
        "details": {"name": "x", "causes": causes},
    }


A = {"reason": "FieldValueTypeInvalid", "message": "Invalid value: 1", "field": "spec.b"}
B = {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.a"}


def test_two_orders_of_the_same_causes_normalize_alike() -> None:
    one, other = _status([A, B]), _status([B, A])
    assert one != other
    first = Normalizer(set()).normalize(one)
    assert first == Normalizer(set()).normalize(other)
    assert first["message"] == (
        'AscendJob.mindxdl.gitee.com "x" is invalid: '
        "[spec.a: Required value, spec.b: Invalid value: 1]"
    )
    assert [c["field"] for c in first["details"]["causes"]] == ["spec.a", "spec.b"]


def test_different_causes_still_differ() -> None:
    changed = {**A, "message": "Invalid value: 2"}
    assert in_cause_order(_status([A, B])) != in_cause_order(_status([B, changed]))


def test_a_message_that_is_not_the_causes_aggregate_is_left_alone() -> None:
    status = _status([A, B], message="something else")
    assert in_cause_order(status) is status
    single = _status([A])
    assert in_cause_order(single) is single


def test_a_generated_name_quoted_in_a_message_gets_its_placeholder() -> None:
    one = {"kind": "Status", "message": 'AscendJob "Bad_a1b2c" is invalid', "name": "Bad_a1b2c"}
    other = {"kind": "Status", "message": 'AscendJob "Bad_zz9y8" is invalid', "name": "Bad_zz9y8"}
    assert Normalizer({"Bad_"}).normalize(one) == Normalizer({"Bad_"}).normalize(other)
    assert Normalizer({"Bad_"}).normalize(one)["message"] == 'AscendJob "Bad_<gen:1>" is invalid'
