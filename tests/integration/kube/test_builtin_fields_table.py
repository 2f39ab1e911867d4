"""The local cluster's table of built-in fields is the real server's (real lane only).

`builtin_fields.json` was written by hack/gen_builtin_fields.py from kube-apiserver's
/openapi/v3; this rebuilds it from the server under test and compares, so a server version
that adds or removes a field is noticed here, not as a field the local cluster drops.
"""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.localcluster.builtin_fields import TABLE_PATH
from hack.gen_builtin_fields import build_table, render


@pytest.mark.real_only("the table is read from a real kube-apiserver's OpenAPI document")
def test_the_committed_table_is_the_servers(bare_cluster: Any) -> None:
    table = build_table(bare_cluster.get)
    assert table["kinds"], "no kind found in the server's OpenAPI documents"
    assert render(table) == TABLE_PATH.read_text(), (
        "builtin_fields.json differs from this server's OpenAPI: "
        "run .venv/bin/python hack/gen_builtin_fields.py"
    )
