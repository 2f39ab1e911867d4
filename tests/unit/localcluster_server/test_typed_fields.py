"""The decode errors (400) kube-apiserver answers for a pod's container string lists."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.localcluster.typed_fields import pod_unmarshal_error


def _pod(**container: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", **container}]}}


@pytest.mark.parametrize(
    ("pod", "error"),
    [
        (_pod(command=["sh", "-c"], args=["x"]), None),
        (_pod(command=None), None),
        (_pod(command=5), "cannot unmarshal number into Go struct field "
         "Container.spec.containers.command of type []string"),
        (_pod(args="x"), "cannot unmarshal string into Go struct field "
         "Container.spec.containers.args of type []string"),
        (_pod(args=["x", {}]), "cannot unmarshal object into Go struct field "
         "Container.spec.containers.args of type string"),
        ({"spec": {"initContainers": [{"command": True}], "containers": []}},
         "cannot unmarshal bool into Go struct field "
         "Container.spec.initContainers.command of type []string"),
        ({"spec": "odd"}, None),
    ],
)  # fmt: skip
def test_pod_unmarshal_error(pod: dict[str, Any], error: str | None) -> None:
    found = pod_unmarshal_error(pod)
    assert found == (None if error is None else f"json: {error}")
