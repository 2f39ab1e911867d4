"""CRD structural schema validation, pruning and defaulting against the real AscendJob CRD."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from ascendjob_controller.localcluster import fastjson
from ascendjob_controller.localcluster.schema import (
    apply_defaults,
    prune,
    validate,
    validate_status,
)
from ascendjob_controller.localcluster.typed_fields import NEGATIVE_ZERO, go_numbers

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def acjob_schema() -> dict[str, Any]:
    crd = yaml.safe_load((ROOT / "manifests/crd/mindxdl.gitee.com_ascendjobs.yaml").read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


@pytest.fixture(scope="module")
def podgroup_schema() -> dict[str, Any]:
    crd = yaml.safe_load((ROOT / "manifests/crd/scheduling.volcano.sh_podgroups.yaml").read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


@pytest.fixture()
def sample() -> dict[str, Any]:
    return yaml.safe_load(
        (ROOT / "manifests/samples/pytorch_multinodes_acjob_910b.yaml").read_text()
    )


def test_sample_job_is_valid_and_nothing_is_pruned(acjob_schema: dict, sample: dict) -> None:
    before = copy.deepcopy(sample)
    assert prune(acjob_schema, sample) == []
    assert sample == before
    assert validate(acjob_schema, sample) == []


def test_replicas_as_string_is_rejected_like_kube_apiserver(
    acjob_schema: dict, sample: dict
) -> None:
    sample["spec"]["replicaSpecs"]["Worker"]["replicas"] = "two"
    assert validate(acjob_schema, sample) == [
        {
            "reason": "FieldValueTypeInvalid",
            "message": 'Invalid value: "string": spec.replicaSpecs.Worker.replicas in body must be '
            'of type integer: "string"',
            "field": "spec.replicaSpecs.Worker.replicas",
        }
    ]


def test_bad_restart_policy_enum(acjob_schema: dict, sample: dict) -> None:
    sample["spec"]["replicaSpecs"]["Master"]["restartPolicy"] = "Sometimes"
    assert validate(acjob_schema, sample) == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", '
            '"Never", "ExitCode"',
            "field": "spec.replicaSpecs.Master.restartPolicy",
        }
    ]


def test_missing_replica_specs_is_required(acjob_schema: dict, sample: dict) -> None:
    del sample["spec"]["replicaSpecs"]
    assert validate(acjob_schema, sample) == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.replicaSpecs"}
    ]


def test_minimum_and_int32_bounds(acjob_schema: dict, sample: dict) -> None:
    sample["spec"]["replicaSpecs"]["Worker"]["replicas"] = -1
    sample["spec"]["runPolicy"]["backoffLimit"] = 2**31
    causes = validate(acjob_schema, sample)
    assert {
        "reason": "FieldValueInvalid",
        "message": "Invalid value: -1: spec.replicaSpecs.Worker.replicas in body should be greater "
        "than or equal to 0",
        "field": "spec.replicaSpecs.Worker.replicas",
    } in causes
    # kube-apiserver v1.37's words for a value outside the format's range (no field path).
    assert {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: "": Checked value must be of type integer with format int32 '
        "in spec.runPolicy.backoffLimit",
        "field": "<nil>",
    } in causes
    assert len(causes) == 2


def test_float_is_not_an_integer_and_bool_is_not_a_number(acjob_schema: dict, sample: dict) -> None:
    sample["spec"]["replicaSpecs"]["Worker"]["replicas"] = 1.5
    sample["spec"]["schedulerName"] = True
    causes = validate(acjob_schema, sample)
    # A float an int32 field refuses is named by its Go type, and its format is checked too
    # (kube-apiserver v1.37's two causes); a bool is only the wrong type.
    assert sorted(causes, key=lambda c: c["message"]) == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "": Checked value must be of type integer with format '
            "int32 in spec.replicaSpecs.Worker.replicas",
            "field": "<nil>",
        },
        {
            "reason": "FieldValueTypeInvalid",
            "message": 'Invalid value: "boolean": spec.schedulerName in body must be of type '
            'string: "boolean"',
            "field": "spec.schedulerName",
        },
        {
            "reason": "FieldValueTypeInvalid",
            "message": 'Invalid value: "float64": spec.replicaSpecs.Worker.replicas in body must '
            'be of type int32: "float64"',
            "field": "spec.replicaSpecs.Worker.replicas",
        },
    ]


@pytest.mark.parametrize(
    ("value", "kept"),
    [(1e3, 1000), (-0.0, NEGATIVE_ZERO), (2.0**53 - 1, 2**53 - 1), (2.0**53, 2.0**53),
     (2**63, 2.0**63), (-(2**63), -(2**63)), (1.5, 1.5), (True, True)],
)  # fmt: skip
def test_numbers_are_what_gos_unstructured_decoder_leaves(value: Any, kept: Any) -> None:
    got = go_numbers({"v": value})["v"]
    assert got == kept and type(got) is type(kept)


def test_a_negative_zero_is_printed_as_go_prints_it_and_stored_as_zero() -> None:
    schema = {"type": "integer", "format": "int64", "minimum": 1}
    obj = go_numbers({"spec": {"n": -0.0}})
    causes = validate({"type": "object", "properties": {"spec": {"type": "object",
                       "properties": {"n": schema}}}}, obj)  # fmt: skip
    assert [c["message"] for c in causes] == [
        "Invalid value: -0: spec.n in body should be greater than or equal to 1"
    ]
    assert fastjson.dumps(obj) == b'{"spec":{"n":0}}'


def test_int_or_string(acjob_schema: dict, sample: dict) -> None:
    policy = sample["spec"]["runPolicy"]["schedulingPolicy"]
    policy["minResources"] = {"cpu": "500m", "npu": 8}
    assert validate(acjob_schema, sample) == []
    policy["minResources"] = {"cpu": 1.5}
    [cause] = validate(acjob_schema, sample)
    assert cause["field"] == "spec.runPolicy.schedulingPolicy.minResources.cpu"
    assert 'must be of type integer,string: "number"' in cause["message"]


def test_preserve_unknown_fields_template_accepts_anything(
    acjob_schema: dict, sample: dict
) -> None:
    sample["spec"]["replicaSpecs"]["Worker"]["template"]["whatever"] = {"x": [1, 2]}
    assert prune(acjob_schema, sample) == []
    assert validate(acjob_schema, sample) == []


def test_prune_unknown_fields_reports_paths(acjob_schema: dict, sample: dict) -> None:
    sample["spec"]["foo"] = 1
    sample["spec"]["replicaSpecs"]["Worker"]["bar"] = {"x": 1}
    sample["status"] = {"conditions": [{"type": "Created", "status": "True", "junk": 1}]}
    sample["extra"] = "x"
    sample["metadata"]["anything"] = "kept"
    dropped = prune(acjob_schema, sample)
    assert sorted(dropped) == sorted(
        ["spec.foo", "spec.replicaSpecs.Worker.bar", "status.conditions[0].junk", "extra"]
    )
    assert "foo" not in sample["spec"]
    assert "bar" not in sample["spec"]["replicaSpecs"]["Worker"]
    assert sample["status"]["conditions"][0] == {"type": "Created", "status": "True"}
    assert sample["metadata"]["anything"] == "kept"
    assert sample["apiVersion"] == "mindxdl.gitee.com/v1"


def test_prune_drops_non_nullable_nulls_silently(acjob_schema: dict, sample: dict) -> None:
    sample["spec"]["schedulerName"] = None
    assert prune(acjob_schema, sample) == []
    assert "schedulerName" not in sample["spec"]


def test_podgroup_sample_valid(podgroup_schema: dict) -> None:
    pg = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"minMember": 2, "queue": "default"},
        "status": {"phase": "Inqueue"},
    }
    assert prune(podgroup_schema, pg) == []
    assert validate(podgroup_schema, pg) == []


# --- generic keyword coverage on a small schema -------------------------------------------

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["metadata"],
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                "tags": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 2,
                    "items": {"type": "string"},
                },
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0, "maximum": 1},
                "opt": {"type": "string", "nullable": True},
                "mode": {"type": "string", "default": "fast", "enum": ["fast", "slow"]},
                "nested": {
                    "type": "object",
                    "default": {},
                    "properties": {"level": {"type": "integer", "default": 3}},
                },
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "n": {"type": "integer", "default": 7},
                            "m": {"type": "integer"},
                        },
                        "required": ["m"],
                    },
                },
                "when": {"type": "string", "format": "date-time"},
                "either": {"anyOf": [{"minimum": 10}, {"maximum": 0}], "type": "integer"},
                "both": {"allOf": [{"minimum": 1}, {"maximum": 5}], "type": "integer"},
                "flags": {"type": "object", "additionalProperties": {"type": "boolean"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "noprops": {"type": "object"},
            },
        },
    },
}


def obj(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"}, "spec": spec}


@pytest.mark.parametrize(
    ("spec", "field", "reason", "fragment"),
    [
        ({"name": "a"}, "spec.name", "FieldValueInvalid", "should be at least 2 chars long"),
        (
            {"name": "abcdef"},
            "spec.name",
            "FieldValueTooLong",
            "Too long: may not be more than 5 bytes",
        ),
        (
            {"name": "AB"},
            "spec.name",
            "FieldValueInvalid",
            "spec.name in body should match '^[a-z]+$'",
        ),
        ({"tags": []}, "spec.tags", "FieldValueInvalid", "should have at least 1 items"),
        (
            {"tags": ["a", "b", "c"]},
            "spec.tags",
            "FieldValueTooMany",
            "Too many: 3: must have at most 2 items",
        ),
        (
            {"tags": ["a", 1]},
            "spec.tags[1]",
            "FieldValueTypeInvalid",
            'must be of type string: "integer"',
        ),
        (
            {"ratio": 0},
            "spec.ratio",
            "FieldValueInvalid",
            "Invalid value: 0: spec.ratio in body should be greater than 0",
        ),
        ({"ratio": 1.5}, "spec.ratio", "FieldValueInvalid", "should be less than or equal to 1"),
        (
            {"mode": "medium"},
            "spec.mode",
            "FieldValueNotSupported",
            'supported values: "fast", "slow"',
        ),
        ({"items": [{"n": 1}]}, "spec.items[0].m", "FieldValueRequired", "Required value"),
        # A string out of its format is a type cause (kube-apiserver v1.37.2's reason).
        ({"when": "yesterday"}, "spec.when", "FieldValueTypeInvalid", "must be of type date-time"),
        (
            {"either": 5},
            "",
            "FieldValueInvalid",
            '"spec.either" must validate at least one schema (anyOf)',
        ),
        ({"both": 9}, "spec.both", "FieldValueInvalid", "should be less than or equal to 5"),
        (
            {"flags": {"a": "yes"}},
            "spec.flags.a",
            "FieldValueTypeInvalid",
            'must be of type boolean: "string"',
        ),
        ({"name": None}, "spec.name", "FieldValueTypeInvalid", 'must be of type string: "null"'),
        ({"free": []}, "spec.free", "FieldValueTypeInvalid", 'must be of type object: "array"'),
    ],
)
def test_keywords(spec: dict, field: str, reason: str, fragment: str) -> None:
    causes = validate(SCHEMA, obj(**spec))
    assert len(causes) == 1, causes
    assert causes[0]["field"] == field
    assert causes[0]["reason"] == reason
    assert fragment in causes[0]["message"]


def test_valid_values_pass() -> None:
    good = obj(
        name="abc",
        tags=["x"],
        ratio=0.5,
        opt=None,
        mode="slow",
        items=[{"m": 1}],
        when="2026-01-02T03:04:05Z",
        either=11,
        both=3,
        flags={"a": True},
        free={"anything": [1]},
    )
    assert validate(SCHEMA, good) == []


def test_metadata_and_top_level_are_not_validated_beyond_object() -> None:
    o = obj()
    o["metadata"] = {"name": 5, "labels": "odd"}
    o["apiVersion"] = 7
    assert validate(SCHEMA, o) == []
    o["metadata"] = "nope"
    [cause] = validate(SCHEMA, o)
    assert cause["field"] == "metadata"


def test_defaults_fill_missing_fields_recursively() -> None:
    o = obj(items=[{"m": 1}, {"m": 2, "n": 0}])
    apply_defaults(SCHEMA, o)
    assert o["spec"]["mode"] == "fast"
    assert o["spec"]["nested"] == {"level": 3}
    assert o["spec"]["items"] == [{"m": 1, "n": 7}, {"m": 2, "n": 0}]
    again = copy.deepcopy(o)
    apply_defaults(SCHEMA, again)
    assert again == o


def test_defaults_do_not_share_state_between_objects() -> None:
    a, b = obj(), obj()
    apply_defaults(SCHEMA, a)
    apply_defaults(SCHEMA, b)
    a["spec"]["nested"]["level"] = 99
    assert b["spec"]["nested"]["level"] == 3


def test_prune_object_without_properties_drops_everything_and_additional_properties() -> None:
    o = obj(noprops={"a": 1}, flags={"a": True, "b": None}, free={"keep": 1})
    dropped = prune(SCHEMA, o)
    assert dropped == ["spec.noprops.a"]
    assert o["spec"]["noprops"] == {}
    assert o["spec"]["flags"] == {"a": True}
    assert o["spec"]["free"] == {"keep": 1}


# --- ratcheting: what an update left unchanged is not validated again ---------------------

CAPPED = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer", "maximum": 10},
                "color": {"type": "string", "allOf": [{"maxLength": 5}]},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "port": {"type": "integer", "maximum": 100},
                        },
                    },
                },
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}},
            },
        },
    },
}


def widget(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "w"}, "spec": spec}


def fields(causes: list[dict[str, str]]) -> list[str]:
    return sorted(c["field"] for c in causes)


@pytest.mark.parametrize(
    ("old", "new", "invalid"),
    [
        # a create: no old object, everything validated
        (None, widget(size=50), ["spec.size"]),
        # made invalid by a tightened schema, then changed elsewhere: accepted
        (widget(size=50, color="red"), widget(size=50, color="blue"), []),
        # ... but the invalid field itself changed: refused, to another invalid value or not
        (widget(size=50), widget(size=60), ["spec.size"]),
        (widget(size=50), widget(size=5), []),
        # 50 -> 50.0 is another JSON value (and not an integer)
        (widget(size=50), widget(size=50.0), ["spec.size"]),
        # a field under a quantor: unchanged is ratcheted, changed is checked
        (widget(color="purple"), widget(color="purple", size=1), []),
        (widget(color="purple"), widget(color="violet"), ["spec.color"]),
        # map-list items are matched by their keys, wherever they moved
        (
            widget(ports=[{"name": "a", "port": 500}, {"name": "b", "port": 1}]),
            widget(ports=[{"name": "b", "port": 2}, {"name": "a", "port": 500}]),
            [],
        ),
        (
            widget(ports=[{"name": "a", "port": 500}]),
            widget(ports=[{"name": "a", "port": 501}]),
            ["spec.ports[0].port"],
        ),
        # an atomic list's items are not matched: changed anywhere, validated whole
        (widget(tags=["long", "x"]), widget(tags=["long", "y"]), ["spec.tags[0]"]),
        (widget(tags=["long", "x"]), widget(tags=["long", "x"], size=1), []),
    ],
)
def test_an_update_ratchets_what_it_left_unchanged(
    old: dict[str, Any] | None, new: dict[str, Any], invalid: list[str]
) -> None:
    assert fields(validate(CAPPED, new, old)) == invalid


def test_a_status_write_does_not_revalidate_an_unchanged_spec(
    acjob_schema: dict, sample: dict
) -> None:
    sample["spec"]["replicaSpecs"]["Worker"]["replicas"] = "two"  # stored before a stricter CRD
    stored = copy.deepcopy(sample)
    sample["status"] = {"conditions": [{"type": "Created", "status": "True"}]}
    assert validate(acjob_schema, sample, stored) == []
    assert fields(validate(acjob_schema, sample)) == ["spec.replicaSpecs.Worker.replicas"]


def test_a_string_that_reads_float64_is_still_a_string() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "format": "int32"}}}
    [cause] = validate(schema, {"n": "float64"})
    assert (
        cause["message"] == 'Invalid value: "string": n in body must be of type integer: "string"'
    )


# kube-openapi runs every validator that applies to a value's kind, even after its type check
# failed (each expected message is kube-apiserver v1.37's for the same value).
_POLICY = {"type": "string", "enum": ["None", "Running", "All"]}
_REPLICAS = {"type": "integer", "format": "int32", "minimum": 0}


@pytest.mark.parametrize(
    ("schema", "value", "messages"),
    [
        (_POLICY, 5, ['Invalid value: "integer": x in body must be of type string: "integer"',
                      'Unsupported value: 5: supported values: "None", "Running", "All"']),
        (_POLICY, True, ['Invalid value: "boolean": x in body must be of type string: "boolean"',
                         'Unsupported value: true: supported values: "None", "Running", "All"']),
        (_POLICY, ["a", "b"], ['Invalid value: "array": x in body must be of type string: "array"',
                               'Unsupported value: ["a","b"]: supported values: "None", '
                               '"Running", "All"']),
        (_REPLICAS, True, ['Invalid value: "": x in body must be of type int32: ""']),
        (_REPLICAS, {"a": 1}, ['Invalid value: "": x in body must be of type int32: ""']),
        (_REPLICAS, "q", ['Invalid value: "string": x in body must be of type integer: "string"']),
        (_REPLICAS, [1], ['Invalid value: "array": x in body must be of type integer: "array"']),
        ({"type": "integer", "format": "int64"}, False,
         ['Invalid value: "": x in body must be of type int64: ""']),
        ({"type": "integer"}, False,
         ['Invalid value: "boolean": x in body must be of type integer: "boolean"']),
    ],
)  # fmt: skip
def test_a_value_of_the_wrong_type_gets_every_cause_that_applies(
    schema: dict[str, Any], value: Any, messages: list[str]
) -> None:
    root = {"type": "object", "properties": {"x": schema}}
    obj = {"x": value}
    prune(root, obj)
    assert [c["message"] for c in validate(root, obj)] == messages
    assert {c["field"] for c in validate(root, obj)} == {"x"}


def test_an_object_in_a_string_field_is_pruned_before_its_enum_cause() -> None:
    root = {"type": "object", "properties": {"x": _POLICY}}
    obj = {"x": {"a": [1, "b"]}}
    prune(root, obj)
    messages = [c["message"] for c in validate(root, obj)]
    assert messages[1] == 'Unsupported value: {}: supported values: "None", "Running", "All"'


def test_a_missing_required_field_comes_after_the_properties_causes() -> None:
    root = {
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"type": "object"}, "b": {"type": "integer"}},
    }
    causes = validate(root, {"b": "x"})
    assert [c["field"] for c in causes] == ["b", "a"]


def test_a_status_write_is_validated_from_the_status_down() -> None:
    """The real server's status validator is rooted at `status`: the field is under it, the
    message's path starts below it (fidelity case acjob-status-schema-errors-422)."""
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "status": {
                "type": "object",
                "properties": {"when": {"type": "string", "format": "date-time"}},
            },
        },
    }
    causes = validate_status(schema, {"spec": {"n": "x"}, "status": {"when": 5}})
    assert [(c["field"], c["message"]) for c in causes] == [
        ("status.when", 'Invalid value: "int64": when in body must be of type date-time: "int64"')
    ]
    old = {"status": {"when": 5}}
    assert validate_status(schema, {"status": {"when": 5}}, old) == []  # ratcheted
    assert validate_status(schema, {"spec": {}}) == []
