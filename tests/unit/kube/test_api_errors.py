"""Telling API errors apart, as apimachinery's `errors.Is*` helpers do."""

from __future__ import annotations

import pytest

from ascendjob_controller.kube.client import (
    ApiConnectionError,
    ApiError,
    is_bad_request,
    is_invalid,
)


@pytest.mark.parametrize(
    ("error", "invalid"),
    [
        (ApiError(422, "Invalid", 'Pod "x" is invalid: spec.containers[0].name: ...'), True),
        (ApiError(422, "Unknown"), True),  # no reason in the body: the code decides
        (ApiError(422, "Forbidden"), False),  # a webhook's denial with its own reason
        (ApiError(403, "Forbidden", "exceeded quota"), False),
        (ApiError(409, "AlreadyExists"), False),
        (ApiError(400, "BadRequest"), False),
        (ApiError(500, "InternalError"), False),
        (ApiConnectionError("reset", ambiguous=True), False),
        (ValueError("422"), False),
    ],
)
def test_is_invalid(error: BaseException, invalid: bool) -> None:
    assert is_invalid(error) is invalid


@pytest.mark.parametrize(
    ("error", "bad"),
    [
        (ApiError(400, "BadRequest", 'Pod in version "v1" cannot be handled as a Pod: ...'), True),
        (ApiError(422, "Invalid"), False),
        (ApiError(404, "NotFound"), False),
        (ApiConnectionError("reset", ambiguous=False), False),
    ],
)
def test_is_bad_request(error: BaseException, bad: bool) -> None:
    assert is_bad_request(error) is bad
