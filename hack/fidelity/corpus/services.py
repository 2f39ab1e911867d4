"""Services: defaults, cluster IPs (allocated, kept, immutable), headless and ExternalName."""

from __future__ import annotations

from hack.fidelity.corpus.objects import service
from hack.fidelity.steps import case, delete, get, patch, post, prep, put

CASES = [
    case(
        "service-create-defaults",
        post("services", service("web")),
        get("services/web"),
    ),
    case(
        "service-headless",
        post("services", service("hl", clusterIP="None"), pick=("spec",)),
    ),
    case(
        "service-external-name",
        post(
            "services",
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "ext"},
                "spec": {"type": "ExternalName", "externalName": "example.com"},
            },
            pick=("spec",),
        ),
    ),
    case(
        "service-cluster-ip-immutable-422",
        prep(post("services", service("web"))),
        patch("services/web", {"spec": {"clusterIP": "10.96.200.200"}}),
    ),
    case(
        "service-put-without-cluster-ip-keeps-it",
        prep(post("services", service("web"), save={"rv": "metadata.resourceVersion"})),
        put(
            "services/web",
            {**service("web"), "metadata": {"name": "web", "resourceVersion": "{rv}"}},
            pick=("spec.clusterIP", "spec.clusterIPs", "spec.ports"),
        ),
    ),
    case(
        "service-strategic-patch-ports",
        prep(post("services", service("web"))),
        patch(
            "services/web",
            {"spec": {"ports": [{"port": 443, "name": "https"}, {"port": 80, "name": "http"}]}},
            "strategic",
            pick=("spec.ports",),
        ),
    ),
    case(
        "service-named-target-port",
        post(
            "services",
            service("web", ports=[{"name": "http", "port": 80, "targetPort": "http-port"}]),
            pick=("spec.ports",),
        ),
    ),
    case(
        "service-invalid-port-422",
        post("services", service("web", ports=[{"port": 70000}])),
    ),
    case(
        "service-delete",
        prep(post("services", service("web"))),
        delete("services/web"),
        get("services/web"),
    ),
    case(
        "service-status-subresource",
        prep(post("services", service("web"))),
        patch(
            "services/web/status",
            {"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}},
            pick=("status",),
        ),
    ),
    # validateServicePort: a name (required among several ports, a DNS-1123 label, unique),
    # the port, the protocol, the target port (0 is unset and defaulted to the port).
    case(
        "bad-service-ports-422",
        post("services", service("s1", ports=[{"name": "\u200b", "port": 80}])),
        post(
            "services",
            service(
                "s2",
                ports=[
                    {"name": "a", "port": 80},
                    {"port": 81},
                    {"name": "a", "port": 82},
                    {"name": "Bad_Name", "port": 83},
                ],
            ),
        ),
        post(
            "services",
            service(
                "s3",
                ports=[{"name": "x" * 64, "port": 80, "protocol": "ICMP", "targetPort": "Bad--"}],
            ),
        ),
        post(
            "services",
            service(
                "s4",
                ports=[
                    {"port": 80, "targetPort": 0},
                    {"name": "b", "port": 81, "targetPort": 70000},
                ],
            ),
        ),
        post(
            "services", service("s5", ports=[{"port": 80, "targetPort": 0}]), pick=("spec.ports",)
        ),
    ),
]
