"""A CRD's spec.names as kube-apiserver v1.37 checks them (fidelity: crd-bad-names-422)."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.localcluster import builtin
from hack.fidelity.corpus.objects import crd


def _fields(**names: Any) -> list[str]:
    body = crd("gizmos", "Gizmo", {"type": "object"}, group="example.com")
    body["spec"]["names"].update(names)
    return [
        c["field"] + ": " + c["message"].split(": ", 2)[-1][:30] for c in builtin.validate_crd(body)
    ]


def test_good_names_have_no_cause() -> None:
    assert _fields(shortNames=["gz"], categories=["all"], listKind="GizmoList") == []


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        ({"singular": "Gizmo"}, ["spec.names.singular: a DNS-1035 label must consist "]),
        ({"kind": "gizmo"}, []),  # kind may have mixed case, or none
        ({"kind": "Giz mo"}, ["spec.names.kind: may have mixed case, but shoul"]),
        ({"listKind": "Gizmo"}, ["spec.names.listKind: kind and listKind may not be t"]),
        (
            {"shortNames": ["ok", "G"], "categories": ["Bad Cat"]},
            [
                "spec.names.shortNames[1]: a DNS-1035 label must consist ",
                "spec.names.categories[0]: a DNS-1035 label must consist ",
            ],
        ),
        ({"singular": "g" * 64}, ["spec.names.singular: must be no more than 63 charac"]),
    ],
)
def test_bad_names(names: dict[str, Any], expected: list[str]) -> None:
    assert _fields(**names) == expected
