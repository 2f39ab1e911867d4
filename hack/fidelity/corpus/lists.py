"""Lists: paging with limit/continue, selectors, and the resourceVersion parameters."""

from __future__ import annotations

from hack.fidelity.corpus.objects import configmap, pod
from hack.fidelity.steps import case, get, post, prep

NAMES = ("items[*].metadata.name",)
FIVE = tuple(
    prep(post("configmaps", configmap(f"c{i}", labels={"i": str(i % 2)}))) for i in range(5)
)

CASES = [
    case(
        "list-paging-limit-continue",
        *FIVE,
        get("configmaps?limit=2", save={"c1": "metadata.continue"}, pick=(*NAMES, "metadata")),
        get(
            "configmaps?limit=2&continue={c1}",
            save={"c2": "metadata.continue"},
            pick=(*NAMES, "metadata"),
        ),
        get("configmaps?limit=2&continue={c2}", pick=(*NAMES, "metadata")),
    ),
    case(
        "list-paging-with-label-selector",
        *FIVE,
        get(
            "configmaps?limit=2&labelSelector=i%3D0",
            save={"c1": "metadata.continue"},
            pick=(*NAMES, "metadata"),
        ),
        get("configmaps?limit=2&labelSelector=i%3D0&continue={c1}", pick=(*NAMES, "metadata")),
    ),
    case(
        "list-invalid-continue-400",
        get("configmaps?limit=1&continue=not-a-token"),
    ),
    case(
        "list-label-selectors",
        *FIVE,
        get("configmaps?labelSelector=i%20in%20(0)", pick=NAMES),
        get("configmaps?labelSelector=i!%3D0", pick=NAMES),
        get("configmaps?labelSelector=!i", pick=NAMES),
        get("configmaps?labelSelector=i", pick=NAMES),
    ),
    case(
        "list-bad-label-selector-400",
        get("configmaps?labelSelector=a%3D%3D%3Db"),
    ),
    case(
        "list-label-selector-bad-key-or-value-400",
        get("configmaps?labelSelector=-bad%3Dx"),
        get("configmaps?labelSelector=x%2F%3Dy"),
        get("configmaps?labelSelector=a%2Fb%2Fc%3Dx"),
        get("configmaps?labelSelector=a%20in%20(x%2C-y)"),
        get("configmaps?labelSelector=a%3D" + "b" * 64),
    ),
    case(
        "list-field-selectors",
        prep(post("pods", pod("a", restartPolicy="Never"))),
        prep(post("pods", pod("b"))),
        get("pods?fieldSelector=spec.restartPolicy%3DNever", pick=NAMES),
        get("pods?fieldSelector=metadata.name!%3Da", pick=NAMES),
        get("pods?fieldSelector=status.phase%3DPending", pick=NAMES),
        get("pods?fieldSelector=spec.nodeName%3D", pick=NAMES),
    ),
    case(
        "list-unsupported-field-selector-400",
        get("configmaps?fieldSelector=data.k%3Dv"),
    ),
    case(
        "list-resource-version-zero",
        *FIVE[:2],
        get("configmaps?resourceVersion=0", pick=(*NAMES, "metadata")),
    ),
    case(
        "list-resource-version-not-older-than",
        prep(post("configmaps", configmap("a"), save={"rv": "metadata.resourceVersion"})),
        get(
            "configmaps?resourceVersion={rv}&resourceVersionMatch=NotOlderThan",
            pick=(*NAMES, "metadata"),
        ),
    ),
    case(
        "list-resource-version-exact-too-old-410",
        get("configmaps?resourceVersion=1&resourceVersionMatch=Exact"),
    ),
    case(
        "list-resource-version-match-without-rv-400",
        get("configmaps?resourceVersionMatch=Exact"),
    ),
    case(
        "list-resource-version-exact-recent",
        prep(post("configmaps", configmap("a"), save={"rv": "metadata.resourceVersion"})),
        prep(post("configmaps", configmap("b"))),
        get(
            "configmaps?resourceVersion={rv}&resourceVersionMatch=Exact", pick=(*NAMES, "metadata")
        ),
    ),
    case(
        "list-limit-with-rv-zero-ignores-limit",
        *FIVE[:3],
        get("configmaps?limit=1&resourceVersion=0", pick=(*NAMES, "metadata")),
    ),
    case(
        "list-all-namespaces-by-name",
        prep(post("configmaps", configmap("unique-{ns}"))),
        get(
            "/api/v1/configmaps?fieldSelector=metadata.name%3Dunique-{ns}",
            pick=(*NAMES, "kind", "apiVersion"),
        ),
    ),
    case(
        "list-invalid-limit",
        get("configmaps?limit=abc"),
    ),
    case(
        "list-future-resource-version",
        get(
            "configmaps?resourceVersion=99999999&resourceVersionMatch=NotOlderThan",
            pick=("code", "reason", "details"),
        ),
    ),
]
