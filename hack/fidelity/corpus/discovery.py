"""Discovery and OpenAPI: the shape and the entries clients use, not whole documents.

A real server serves dozens of API groups the local cluster never will, so these steps pick
what kubectl and the controller read: the version, our groups, and the resources we serve.
"""

from __future__ import annotations

from hack.fidelity.steps import Step, case

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
RESOURCE = ("name", "singularName", "namespaced", "kind", "verbs", "shortNames", "categories")


def _get(path: str, **kw: object) -> Step:
    return Step("GET", path, **kw)  # type: ignore[arg-type]


def _resource(name: str) -> tuple[str, ...]:
    return tuple(f"resources[name={name}].{field}" for field in RESOURCE)


CASES = [
    case(
        "discovery-version",
        _get(
            "/version",
            pick=("major", "minor", "gitVersion", "gitTreeState", "compiler", "platform"),
        ),
        namespace=False,
    ),
    case(
        "discovery-api",
        _get("/api", pick=("kind", "versions")),
        namespace=False,
    ),
    case(
        "discovery-apis-groups",
        _get(
            "/apis",
            pick=(
                "kind",
                "groups[name=mindxdl.gitee.com]",
                "groups[name=coordination.k8s.io]",
                "groups[name=events.k8s.io]",
                "groups[name=apiextensions.k8s.io]",
            ),
        ),
        namespace=False,
    ),
    case(
        "discovery-core-v1-resources",
        _get(
            "/api/v1",
            pick=(
                "kind",
                "groupVersion",
                *_resource("pods"),
                *_resource("pods/status"),
                *_resource("pods/binding"),
                *_resource("services"),
                *_resource("configmaps"),
                *_resource("events"),
                *_resource("namespaces"),
                *_resource("serviceaccounts"),
            ),
        ),
        namespace=False,
    ),
    case(
        "discovery-acjob-group-version",
        _get("/apis/mindxdl.gitee.com/v1", pick=("kind", "groupVersion", "resources")),
        _get("/apis/mindxdl.gitee.com", pick=("kind", "name", "versions", "preferredVersion")),
        namespace=False,
    ),
    case(
        "discovery-leases-and-events",
        _get("/apis/coordination.k8s.io/v1", pick=("groupVersion", *_resource("leases"))),
        _get("/apis/events.k8s.io/v1", pick=("groupVersion", *_resource("events"))),
        namespace=False,
    ),
    case(
        "discovery-aggregated",
        _get(
            "/apis",
            accept=AGGREGATED,
            pick=(
                "kind",
                "apiVersion",
                "items[metadata.name=mindxdl.gitee.com]",
            ),
        ),
        _get(
            "/api",
            accept=AGGREGATED,
            pick=(
                "kind",
                "items[#]",
                "items[0].versions[0].version",
                "items[0].versions[0].resources[resource=pods]",
            ),
        ),
        namespace=False,
    ),
    case(
        "discovery-unknown-group-404",
        _get("/apis/nope.example.com/v1"),
        namespace=False,
    ),
    case(
        "openapi-v2-shape",
        _get(
            "/openapi/v2",
            pick=(
                "swagger",
                "info.title",
                "definitions.'com.gitee.mindxdl.v1.AscendJob'.x-kubernetes-group-version-kind",
                "definitions.'io.k8s.api.core.v1.Pod'.x-kubernetes-group-version-kind",
                "definitions.'io.k8s.api.core.v1.Pod'.required",
            ),
        ),
        namespace=False,
    ),
    case(
        "openapi-v3-index",
        _get(
            "/openapi/v3",
            pick=(
                "paths.'api/v1'{}",
                "paths.'apis/mindxdl.gitee.com/v1'{}",
                "paths.'apis/coordination.k8s.io/v1'{}",
            ),
        ),
        namespace=False,
    ),
    case(
        "openapi-v3-acjob-document",
        _get(
            "/openapi/v3/apis/mindxdl.gitee.com/v1",
            pick=(
                "openapi",
                "info",
                "components.schemas.'com.gitee.mindxdl.v1.AscendJob'.type",
                "components.schemas.'com.gitee.mindxdl.v1.AscendJob'.x-kubernetes-group-version-kind",
                "components.schemas.'com.gitee.mindxdl.v1.AscendJob'.properties{}",
                "components.schemas.'com.gitee.mindxdl.v1.AscendJobList'.properties{}",
                "paths{}",
            ),
        ),
        namespace=False,
    ),
    case(
        "health-endpoints",
        _get("/healthz"),
        _get("/readyz"),
        _get("/livez"),
        namespace=False,
    ),
]
