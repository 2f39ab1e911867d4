"""Labels, annotation keys and Go's quoting of a bad value, as kube-apiserver v1.37 words them
(each expected message below is the real server's, read from its answer)."""

from __future__ import annotations

import pytest

from ascendjob_controller.localcluster.goquote import go_quote
from ascendjob_controller.localcluster.metadata_rules import (
    label_value_errors,
    metadata_causes,
    qualified_name_errors,
)

NAME_SHAPE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_SHAPE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("pytorch", '"pytorch"'),
        ("マスター", '"マスター"'),
        ("😀", '"😀"'),
        ("nul\x00inside", '"nul\\x00inside"'),
        ("a\u00a0b\u2028c\x7f", '"a\\u00a0b\\u2028c\\x7f"'),
        ('say "hi"\\', '"say \\"hi\\"\\\\"'),
        ("\t\n", '"\\t\\n"'),
        ("\U000e0001", '"\\U000e0001"'),
    ],
)
def test_go_quote_keeps_printable_characters_and_escapes_the_rest(value: str, quoted: str) -> None:
    assert go_quote(value) == quoted


@pytest.mark.parametrize(
    ("key", "errors"),
    [
        ("framework", []),
        ("example.com/My_Name.1", []),
        ("a/b/c", ["a valid label key " + NAME_SHAPE + " with an optional DNS subdomain prefix "
                   "and '/' (e.g. 'example.com/MyName')"]),
        ("/x", ["prefix part must be non-empty"]),
        ("x/", ["name part must be non-empty", "name part " + NAME_SHAPE]),
        ("", ["name part must be non-empty", "name part " + NAME_SHAPE]),
        ("a" * 64, ["name part must be no more than 63 bytes"]),
        ("x" * 254 + "/n", ["prefix part must be no more than 253 bytes"]),
        ("Bad Key", ["name part " + NAME_SHAPE]),
        ("Example.com/x", ["prefix part a lowercase RFC 1123 subdomain must consist of lower "
                           "case alphanumeric characters, '-' or '.', and must start and end "
                           "with an alphanumeric character (e.g. 'example.com', regex used "
                           "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]"
                           "([-a-z0-9]*[a-z0-9])?)*')"]),
    ],
)  # fmt: skip
def test_qualified_name_errors(key: str, errors: list[str]) -> None:
    assert qualified_name_errors(key) == errors


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ("", []),
        ("pytorch", []),
        ("pytorch-", [VALUE_SHAPE]),
        ("b" * 63, []),
        ("b" * 64, ["must be no more than 63 bytes"]),
        # Go counts bytes: 10 emoji are 40 bytes, 20 are 80.
        ("😀" * 10, [VALUE_SHAPE]),
        ("😀" * 20, ["must be no more than 63 bytes", VALUE_SHAPE]),
    ],
)
def test_label_value_errors(value: str, errors: list[str]) -> None:
    assert label_value_errors(value) == errors


def test_metadata_causes_name_the_bad_key_or_value_labels_first_each_once() -> None:
    meta = {
        "name": "c",
        "labels": {"b": "-", "a": "-", "ok": "fine"},
        "annotations": {"UPPER.com/Key": "kept: checked lowercased", "Bad Key": "v"},
    }
    assert metadata_causes(meta) == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "-": {VALUE_SHAPE}',
            "field": "metadata.labels",
        },
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "Bad Key": name part {NAME_SHAPE}',
            "field": "metadata.annotations",
        },
    ]
    assert metadata_causes({"name": "c"}) == []
