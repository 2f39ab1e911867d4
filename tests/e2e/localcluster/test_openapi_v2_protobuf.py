"""kubectl's client-side validation reads /openapi/v2 as protobuf.

kubectl falls back to that document whenever it cannot rely on server-side field validation
for a kind: `kind: List` input (what `kubectl get -o yaml` prints) and unknown kinds. Before
the server answered it in protobuf, `kubectl get acjob -o yaml | kubectl apply -f -` failed.
"""

from __future__ import annotations

import urllib.request

import pytest
import yaml

from ascendjob_controller.localcluster import openapi
from ascendjob_controller.localcluster.cluster import LocalCluster
from tests.e2e.localcluster.conftest import Kubectl

pytestmark = pytest.mark.e2e
SAMPLE = "manifests/samples/acjob_pytorch.yaml"


def test_get_yaml_piped_into_apply_succeeds(kubectl: Kubectl, ns: str) -> None:
    kubectl("apply", "-f", "manifests/crd/")
    kubectl("apply", "-n", ns, "-f", SAMPLE)
    listed = kubectl("get", "acjob", "-n", ns, "-o", "yaml").stdout
    assert yaml.safe_load(listed)["kind"] == "List"

    out = kubectl("apply", "-n", ns, "-f", "-", stdin=listed, check=False)

    assert out.returncode == 0, out.stderr
    assert "ascendjob.mindxdl.gitee.com/sample-pytorch" in out.stdout
    assert "error" not in out.stderr.lower()


def test_unknown_kind_reports_missing_mapping_not_a_validation_error(kubectl: Kubectl) -> None:
    doc = "apiVersion: example.com/v1\nkind: Nope\nmetadata:\n  name: x\n"

    out = kubectl("apply", "-f", "-", stdin=doc, check=False)

    assert out.returncode != 0
    assert 'no matches for kind "Nope"' in out.stderr, out.stderr
    assert "error validating" not in out.stderr


@pytest.mark.parametrize(
    "accept",
    [openapi.OPENAPI_V2_PROTOBUF_ACCEPT, f"{openapi.OPENAPI_V2_PROTOBUF_ACCEPT}, */*"],
)
def test_protobuf_accept_gets_protobuf(bare_cluster: LocalCluster, accept: str) -> None:
    request = urllib.request.Request(f"{bare_cluster.url}/openapi/v2", headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=30) as resp:
        assert resp.headers["Content-Type"] == openapi.OPENAPI_V2_PROTOBUF_CONTENT_TYPE
        assert resp.read() == openapi.openapi_v2_protobuf()


def test_json_accept_still_gets_the_json_document(bare_cluster: LocalCluster) -> None:
    request = urllib.request.Request(
        f"{bare_cluster.url}/openapi/v2", headers={"Accept": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        assert resp.headers["Content-Type"].startswith("application/json")
        assert yaml.safe_load(resp.read())["swagger"] == "2.0"
