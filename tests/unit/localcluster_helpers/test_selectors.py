"""Label and field selector parsing and matching, including the errors a real server gives."""

from __future__ import annotations

import pytest

from ascendjob_controller.localcluster.selectors import (
    SelectorError,
    label_selector_from_dict,
    parse_field_selector,
    parse_label_selector,
)

LABELS = {"app": "web", "tier": "front", "env": "prod", "version": "3"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("   ", True),
        ("app=web", True),
        ("app==web", True),
        ("app = web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("app in (web,db)", True),
        ("app in ( db , web )", True),
        ("app in (db)", False),
        ("missing in (x)", False),
        ("app notin (db)", True),
        ("app notin (web)", False),
        ("missing notin (x)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=web,tier=front", True),
        ("app=web, tier=back", False),
        ("app=web,!missing,env in (prod,dev),tier", True),
        ("version>2", True),
        ("version<2", False),
        ("app>2", False),
        ("example.com/role", False),
    ],
)
def test_label_selector_matches(selector: str, expected: bool) -> None:
    assert parse_label_selector(selector).matches(LABELS) is expected


def test_empty_selector_matches_objects_without_labels() -> None:
    assert parse_label_selector("").matches(None)
    assert not parse_label_selector("a").matches(None)
    assert parse_label_selector("!a").matches({})


def test_prefixed_keys_and_empty_values() -> None:
    sel = parse_label_selector("example.com/role=worker,empty=")
    assert sel.matches({"example.com/role": "worker", "empty": ""})
    assert not sel.matches({"example.com/role": "worker", "empty": "x"})


@pytest.mark.parametrize(
    ("selector", "fragment"),
    [
        ("app=web,", "expected: identifier"),
        ("app web", "expected: in, notin, =, ==, !=, gt, lt"),
        ("app=web tier", "expected: ',' or 'end of string'"),
        ("app in web", "expected: '('"),
        ("app in (a b)", "expected: ',', ')' or identifier"),
        ("app in (a", "found 'end of string'"),
        (",app", "expected: !, identifier, or 'end of string'"),
        ("!app=web", "expected: ',' or 'end of string'"),
        # kube-apiserver v1.37's wording: no path for a key, values[i][key] for a value, the
        # index its place among the sorted values, lengths in bytes.
        ("-bad=x", "unable to parse requirement: <nil>: Invalid value"),
        ("app=-bad-", 'values[0][app]: Invalid value: "-bad-"'),
        ("app in (x,-y)", 'values[0][app]: Invalid value: "-y"'),
        ("app=" + "x" * 64, "must be no more than 63 bytes"),
        ("x/=y", "name part must be non-empty; name part must consist of"),
        ("a/b/c=x", "a valid label key must consist of"),
        ("Bad_Prefix/x=y", "prefix part"),
        ("v>abc", "must be an integer"),
        ("=x", "expected: !, identifier, or 'end of string'"),
    ],
)
def test_label_selector_errors(selector: str, fragment: str) -> None:
    with pytest.raises(SelectorError) as err:
        parse_label_selector(selector)
    assert fragment in str(err.value)
    assert isinstance(err.value, ValueError)


def test_label_selector_from_dict() -> None:
    sel = label_selector_from_dict(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}],
        }
    )
    assert sel.matches(LABELS)
    assert not sel.matches({"app": "web"})
    assert label_selector_from_dict(None).matches({})
    with pytest.raises(SelectorError):
        label_selector_from_dict({"matchExpressions": [{"key": "a", "operator": "Bogus"}]})


POD = {
    "metadata": {"name": "p1", "namespace": "default"},
    "spec": {"nodeName": "node-1", "hostNetwork": False},
    "status": {"phase": "Running"},
}
EVENT = {"metadata": {"name": "e"}, "involvedObject": {"name": "p1", "kind": "Pod"}}


@pytest.mark.parametrize(
    ("obj", "selector", "expected"),
    [
        (POD, "", True),
        (POD, "metadata.name=p1", True),
        (POD, "metadata.name==p1", True),
        (POD, "metadata.name!=p1", False),
        (POD, "metadata.name=p2", False),
        (POD, "metadata.namespace=default,status.phase=Running", True),
        (POD, "metadata.namespace=default,status.phase!=Running", False),
        (POD, "spec.nodeName=node-1", True),
        (POD, "spec.nodeName=", False),
        ({"metadata": {"name": "x"}, "spec": {}}, "spec.nodeName=", True),
        (POD, "spec.hostNetwork=false", True),
        (POD, " status.phase = Running ", False),  # values are not trimmed, as upstream
        (EVENT, "involvedObject.name=p1,involvedObject.kind=Pod", True),
        (EVENT, "involvedObject.name=p2", False),
    ],
)
def test_field_selector_matches(obj: dict, selector: str, expected: bool) -> None:
    assert parse_field_selector(selector).matches(obj) is expected


def test_field_selector_escapes_and_fields() -> None:
    sel = parse_field_selector(r"metadata.name=a\,b,metadata.namespace!=kube-system")
    assert sel.fields == ("metadata.name", "metadata.namespace")
    assert sel.matches({"metadata": {"name": "a,b", "namespace": "default"}})


@pytest.mark.parametrize("selector", ["metadata.name", "=x", "metadata.name=a=b", r"a=b\x"])
def test_field_selector_errors(selector: str) -> None:
    with pytest.raises(SelectorError):
        parse_field_selector(selector)


def test_field_selector_error_message_is_kube_like() -> None:
    with pytest.raises(SelectorError, match="invalid selector: 'foo'; can't understand 'foo'"):
        parse_field_selector("foo")
