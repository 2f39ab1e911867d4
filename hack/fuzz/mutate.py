"""Mutated AscendJobs from the samples: pure functions of (seed, case index).

Each case starts from one of `manifests/samples/*.yaml`, gets a unique name, and then one to
four mutations, chosen by a `random.Random` seeded with `"<seed>:<index>"`, so any single case
can be rebuilt from the seed alone (`--only`) without generating the cases before it.

The mutations aim at what a hand-written or generated manifest gets wrong, and at what a
controller reading a stored object might not expect:

  type-swap     a value replaced by one of another JSON type (a list for a map, a string
                for a number, null, ...)
  delete        a key removed (replicaSpecs, template, containers, the framework label, ...)
  number        a numeric field set to a huge, negative, fractional or boundary value
  odd-string    a string replaced by an empty, blank, 100 KB, control-character, unicode
                (RTL, zero-width, emoji, NUL) or injection-looking string
  deep          a value replaced by 10 to 5,000 levels of nested maps or lists (written into
                the JSON text directly, as Python's json module cannot encode that deep)
  replica-type  a replicaSpecs key renamed or added: unknown (Launcher, PS), wrong case,
                duplicated case-insensitively, empty, unicode look-alikes
  framework     the framework label changed (other framework, wrong case, unknown, blank)
  metadata      odd labels, annotations, ownerReferences and finalizers
  name          an odd job name (too long for a label value, dotted, upper case, unicode)
  template      pod template damage: no containers, containers not a list, no image,
                garbage resources and NPU quantities, odd env and ports
  sim           the simulated kubelet's run-seconds / exit-code annotations (exit codes
                make valid jobs exercise their restart policies)
  gang          schedulerName volcano with odd schedulingPolicy values
  envelope      apiVersion / kind / namespace swapped
  raw           the JSON text itself damaged: truncated, trailing garbage, a BOM, invalid
                UTF-8, duplicate keys, NaN, a top-level list or null

Replica counts are never set between 9 and MAX_REPLICAS (20,000): such a job is valid and
would only be a load test of the 2-core machine, not a fuzz case.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SAMPLES_DIR = REPO / "manifests" / "samples"
JOB_NAME_PREFIX = "fz"

Doc = dict[str, Any]
PathT = tuple[str | int, ...]

#: A sentinel string the `deep` mutation leaves in the document; `encode` replaces it in the
#: JSON text with the nesting it names (`__DEEP_<kind>_<depth>__`).
_DEEP_RE = re.compile(r'"__DEEP_(map|list)_(\d+)__"')

TYPE_POOL: tuple[Any, ...] = (
    0, 1, -1, 1.5, "1", "", "true", True, False, None,
    [], {}, [1, "a", None], {"x": 1}, {"replicas": 1}, [[{}]],
)  # fmt: skip
HUGE_AND_NEGATIVE: tuple[Any, ...] = (
    -1, -2, -(2**31), -(2**63), 2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64,
    10**30, -(10**30), 1e308, -1e308, 1.5, -0.0, 0.1, 20_001, 1_000_000,
)  # fmt: skip
SMALL_INTS: tuple[int, ...] = (0, 1, 2, 3)
ODD_STRINGS: tuple[str, ...] = (
    "", " ", "\t\n", "\u0000", "nul\u0000inside", "\u202eevil", "\u200b", "Worker\u200b",
    "Мастер", "マスター", "🔥🚀", "😀" * 200, "\ud7ff\ue000", "a" * 64, "a" * 254,
    "x" * 100_000, "../../etc/passwd", "${jndi:ldap://x}", "'; DROP TABLE jobs;--",
    "<script>alert(1)</script>", "null", "true", "1e309", "-1", "0x10", "Always ",
    "%s%s%n", "\\", '"', "{}", "[]", "\r\n\r\nHTTP/1.1 200 OK",
)  # fmt: skip
REPLICA_KEYS: tuple[str, ...] = (
    "Launcher", "PS", "Evaluator", "worker", "WORKER", "master", "MASTER", "Chief",
    "Scheduler", "Master", "Worker", "", " ", "Wörker", "Worker\u200b", "M" * 300,
    "Worker.0", "work er", "0", "🔥",
)  # fmt: skip
FRAMEWORKS: tuple[str, ...] = (
    "pytorch", "mindspore", "tensorflow", "PyTorch", "MINDSPORE", "jax", "", "pytorch-",
    "pytorch.v2", "x" * 63,
)  # fmt: skip
ODD_NAMES: tuple[str, ...] = (
    "a" * 63, "b" * 64, "c" * 200, "d" * 254, "dotted.name.job", "UPPER", "-leading",
    "trailing-", "under_score", "ümlaut", "", "a..b", "1", "0" * 40,
)  # fmt: skip
QUANTITIES: tuple[Any, ...] = (
    "1Gi", "abc", "-1", "1e3", "0.5", 0.5, -1, 1025, 10**9, "", None, [], {"a": 1}, "8",
)  # fmt: skip
DEEP_DEPTHS: tuple[int, ...] = (10, 64, 200, 900, 1500, 5000)
DEEP_WEIGHTS: tuple[int, ...] = (4, 4, 3, 3, 1, 1)
NUMERIC_FIELDS: tuple[PathT, ...] = (
    ("spec", "runPolicy", "backoffLimit"),
    ("spec", "runPolicy", "activeDeadlineSeconds"),
    ("spec", "runPolicy", "ttlSecondsAfterFinished"),
    ("spec", "runPolicy", "schedulingPolicy", "minAvailable"),
    ("spec", "runPolicy", "schedulingPolicy", "scheduleTimeoutSeconds"),
)


@dataclass(frozen=True)
class Sample:
    """One sample manifest, parsed."""

    stem: str
    doc: Doc


@dataclass(frozen=True)
class Case:
    """One fuzz case: what was done to which sample, and the exact bytes to POST."""

    index: int
    name: str
    sample: str
    mutations: tuple[str, ...]
    body: bytes

    @property
    def operators(self) -> tuple[str, ...]:
        """The mutation kinds (the word before the first space of each description)."""
        return tuple(m.split(" ", 1)[0] for m in self.mutations)


def load_samples(directory: Path = SAMPLES_DIR) -> list[Sample]:
    """Every AscendJob document of the sample directory, in file-name order."""
    samples = []
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "AscendJob":
                samples.append(Sample(path.stem, doc))
    if not samples:
        raise RuntimeError(f"no AscendJob samples in {directory}")
    return samples


def case_name(index: int) -> str:
    return f"{JOB_NAME_PREFIX}-{index:04d}"


def make_case(seed: int, index: int, samples: list[Sample]) -> Case:
    """Case `index` of the run seeded with `seed` (independent of every other case)."""
    rng = random.Random(f"{seed}:{index}")
    sample = rng.choice(samples)
    doc = copy.deepcopy(sample.doc)
    name = case_name(index)
    doc.setdefault("metadata", {})["name"] = name
    done: list[str] = []
    raw_damage: Callable[[bytes], bytes] | None = None
    count = 0 if rng.random() < 0.08 else rng.choice((1, 1, 1, 2, 2, 3, 4))
    for _ in range(count):
        kind = rng.choices(OPERATOR_NAMES, OPERATOR_WEIGHTS)[0]
        if kind == "raw":
            if raw_damage is None:
                description, raw_damage = raw_mutation(rng)
                done.append(f"raw {description}")
            continue
        done.append(f"{kind} {OPERATORS[kind](rng, doc)}")
    asked = doc.get("metadata", {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    body = encode(doc)
    if raw_damage is not None:
        body = raw_damage(body)
    return Case(index, asked if isinstance(asked, str) else name, sample.stem, tuple(done), body)


def encode(doc: Any) -> bytes:
    """The document's JSON text, with every `deep` sentinel expanded into its nesting."""

    def expand(match: re.Match[str]) -> str:
        depth = int(match.group(2))
        if match.group(1) == "map":
            return '{"d":' * depth + "1" + "}" * depth
        return "[" * depth + "1" + "]" * depth

    text = json.dumps(doc, ensure_ascii=False)
    return _DEEP_RE.sub(expand, text).encode("utf-8", errors="surrogatepass")


# -- walking the document ------------------------------------------------------------------


def all_paths(doc: Any, prefix: PathT = ()) -> list[PathT]:
    """Every path to a value inside `doc` (maps and lists), parents before children."""
    paths: list[PathT] = []
    items: list[tuple[str | int, Any]] = []
    if isinstance(doc, dict):
        items = list(doc.items())
    elif isinstance(doc, list):
        items = list(enumerate(doc))
    for key, value in items:
        path = (*prefix, key)
        paths.append(path)
        paths.extend(all_paths(value, path))
    return paths


def get_at(doc: Any, path: PathT) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def set_at(doc: Any, path: PathT, value: Any) -> None:
    """Set the value at `path`, creating maps on the way (a non-map on the way is replaced)."""
    for key in path[:-1]:
        if isinstance(doc, dict):
            if not isinstance(doc.get(key), (dict, list)):
                doc[key] = {}
            doc = doc[key]
        elif isinstance(doc, list) and isinstance(key, int) and key < len(doc):
            doc = doc[key]
        else:
            return
    last = path[-1]
    in_list = isinstance(doc, list) and isinstance(last, int) and last < len(doc)
    if isinstance(doc, dict) or in_list:
        doc[last] = value


def show(path: PathT) -> str:
    return ".".join(str(p) for p in path) or "<root>"


def pick_path(rng: random.Random, doc: Doc, want: Callable[[Any], bool] | None = None) -> PathT:
    """A random path, three in four times under spec; `want` filters by the current value."""
    paths = [p for p in all_paths(doc) if want is None or want(get_at(doc, p))]
    if not paths:
        return ("spec",)
    under_spec = [p for p in paths if p[:1] == ("spec",)]
    if under_spec and rng.random() < 0.75:
        return rng.choice(under_spec)
    return rng.choice(paths)


def replica_paths(doc: Doc) -> list[PathT]:
    specs = doc.get("spec", {}).get("replicaSpecs") if isinstance(doc.get("spec"), dict) else None
    if not isinstance(specs, dict):
        return []
    return [("spec", "replicaSpecs", key) for key in specs]


def describe(value: Any) -> str:
    """A short, printable form of a value for the mutation log."""
    text = json.dumps(value, ensure_ascii=True) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else f"{text[:30]}...({len(text)} chars)"


# -- the operators -------------------------------------------------------------------------


def op_type_swap(rng: random.Random, doc: Doc) -> str:
    path = pick_path(rng, doc)
    old = get_at(doc, path)
    choices = [v for v in TYPE_POOL if type(v) is not type(old)]
    new = rng.choice(choices)
    set_at(doc, path, copy.deepcopy(new))
    return f"{show(path)}: {type(old).__name__} -> {describe(new)}"


def op_delete(rng: random.Random, doc: Doc) -> str:
    favourites = [
        p for p in all_paths(doc)
        if p and p[-1] in ("replicaSpecs", "template", "containers", "framework", "labels",
                           "spec", "replicas", "image", "metadata", "restartPolicy", "name")
    ]  # fmt: skip
    path = rng.choice(favourites) if favourites and rng.random() < 0.6 else pick_path(rng, doc)
    parent, last = get_at(doc, path[:-1]), path[-1]
    if isinstance(parent, dict):
        parent.pop(last, None)
    elif isinstance(parent, list) and isinstance(last, int):
        del parent[last]
    return show(path)


def op_number(rng: random.Random, doc: Doc) -> str:
    replicas = [(*p, "replicas") for p in replica_paths(doc)]
    ports = [p for p in all_paths(doc) if p[-1:] in (("containerPort",), ("hostPort",), ("port",))]
    candidates = [*replicas, *NUMERIC_FIELDS, *ports]
    path = rng.choice(candidates)
    pool = HUGE_AND_NEGATIVE if rng.random() < 0.8 else SMALL_INTS
    value = rng.choice(pool)
    set_at(doc, path, value)
    return f"{show(path)} = {describe(value)}"


def op_odd_string(rng: random.Random, doc: Doc) -> str:
    path = pick_path(rng, doc, lambda v: isinstance(v, str))
    value = rng.choice(ODD_STRINGS)
    set_at(doc, path, value)
    return f"{show(path)} = {describe(value)}"


def op_deep(rng: random.Random, doc: Doc) -> str:
    depth = rng.choices(DEEP_DEPTHS, DEEP_WEIGHTS)[0]
    kind = rng.choice(("map", "list"))
    templates = [(*p, "template") for p in replica_paths(doc)]
    if templates and rng.random() < 0.6:
        # Under the template (preserve-unknown-fields): the server keeps it.
        path: PathT = (*rng.choice(templates), "spec", "fuzzDeep")
    else:
        path = pick_path(rng, doc)
    set_at(doc, path, f"__DEEP_{kind}_{depth}__")
    return f"{show(path)} = {depth} nested {kind}s"


def op_replica_type(rng: random.Random, doc: Doc) -> str:
    spec = doc.get("spec")
    specs = spec.get("replicaSpecs") if isinstance(spec, dict) else None
    if not isinstance(specs, dict) or not specs:
        set_at(doc, ("spec", "replicaSpecs", "Launcher"), {"replicas": 1})
        return "added Launcher to an empty replicaSpecs"
    key = rng.choice(REPLICA_KEYS)
    old = rng.choice(sorted(specs))
    if rng.random() < 0.5:
        specs[key] = specs.pop(old)
        return f"renamed {old!r} -> {key!r}"
    specs[key] = copy.deepcopy(specs[old])
    return f"added {key!r} (a copy of {old!r})"


def op_framework(rng: random.Random, doc: Doc) -> str:
    value = rng.choice(FRAMEWORKS)
    set_at(doc, ("metadata", "labels", "framework"), value)
    return f"framework = {describe(value)}"


def op_metadata(rng: random.Random, doc: Doc) -> str:
    choices: list[tuple[PathT, Any]] = [
        (("metadata", "labels", "fuzz/odd"), rng.choice(ODD_STRINGS[:12])),
        (("metadata", "labels", "training.kubeflow.org/job-name"), "someone-else"),
        (("metadata", "annotations", "fuzz"), rng.choice((1, True, None, {"a": 1}, "x" * 5000))),
        (("metadata", "annotations"), rng.choice(([], "annotations", 7))),
        (("metadata", "labels"), rng.choice(([], "labels", 7, {"framework": 1}))),
        (("metadata", "ownerReferences"), [{"apiVersion": "v1", "kind": "ConfigMap",
                                            "name": "ghost", "uid": "not-a-uid"}]),
        (("metadata", "ownerReferences"), "me"),
        (("metadata", "finalizers"), rng.choice((["fuzz.example.com/keep"], "x", [1]))),
        (("metadata", "generateName"), "fz-gen-"),
        (("metadata", "uid"), "0000"),
        (("metadata", "resourceVersion"), rng.choice(("1", "abc", 5))),
        (("metadata", "creationTimestamp"), rng.choice(("yesterday", 0, "1970-01-01T00:00:00Z"))),
        (("metadata", "deletionTimestamp"), "2020-01-01T00:00:00Z"),
        (("status",), {"conditions": [{"type": "Succeeded", "status": "True"}]}),
        (("status",), rng.choice(("done", [], {"restartCount": -5}))),
    ]  # fmt: skip
    path, value = rng.choice(choices)
    set_at(doc, path, copy.deepcopy(value))
    return f"{show(path)} = {describe(value)}"


def op_name(rng: random.Random, doc: Doc) -> str:
    value = rng.choice(ODD_NAMES)
    set_at(doc, ("metadata", "name"), value)
    return f"metadata.name = {describe(value)}"


def op_template(rng: random.Random, doc: Doc) -> str:
    replicas = replica_paths(doc)
    if not replicas:
        return op_type_swap(rng, doc)
    base = (*rng.choice(replicas), "template", "spec")
    container = (*base, "containers", 0)
    npu = rng.choice(("huawei.com/Ascend910", "huawei.com/Ascend310P", "huawei.com/npu"))
    choices: list[tuple[PathT, Any]] = [
        ((*base, "containers"), []),
        ((*base, "containers"), rng.choice(("ascend", {"name": "ascend"}, [None], [[]]))),
        ((*base,), rng.choice((None, "spec", []))),
        ((*base[:-1],), rng.choice((None, "template", [], {}))),
        ((*container, "image"), rng.choice((None, "", 7, "\u0000"))),
        ((*container, "name"), rng.choice(("", "UPPER", None, "x" * 100))),
        ((*container, "resources", "limits", npu), rng.choice(QUANTITIES)),
        ((*container, "resources", "requests", npu), rng.choice(QUANTITIES)),
        ((*container, "resources"), rng.choice(("lots", [], {"limits": []}))),
        ((*container, "env"), rng.choice(("A=1", [{"name": 1}], [{"value": "x"}], [None]))),
        ((*container, "ports"), rng.choice(("2222", [{"containerPort": "x"}], [None], {}))),
        ((*base, "volumes"), rng.choice(("v", [{"name": None}], [{}]))),
        ((*base, "initContainers"), [{"name": "init", "image": "busybox", "command": 1}]),
        ((*base, "nodeSelector"), rng.choice(("x", {"a": 1}, []))),
        ((*base, "schedulerName"), rng.choice((1, "", "volcano", "none"))),
    ]  # fmt: skip
    path, value = rng.choice(choices)
    set_at(doc, path, copy.deepcopy(value))
    return f"{show(path)} = {describe(value)}"


def op_sim(rng: random.Random, doc: Doc) -> str:
    replicas = replica_paths(doc)
    if not replicas:
        return op_type_swap(rng, doc)
    annotations = (*rng.choice(replicas), "template", "metadata", "annotations")
    key, value = rng.choice(
        (
            ("sim.acjob.local/exit-code", rng.choice(("1", "137,0", "1,1,1,1", "2", "abc", ""))),
            ("sim.acjob.local/run-seconds", rng.choice(("-5", "0", "abc", "1e9", "nan", "0.1"))),
        )
    )
    set_at(doc, (*annotations, key), value)
    return f"{show((*annotations, key))} = {describe(value)}"


def op_gang(rng: random.Random, doc: Doc) -> str:
    set_at(doc, ("spec", "schedulerName"), "volcano")
    field, value = rng.choice(
        (
            ("minAvailable", rng.choice((0, 1, 2, 50, -1))),
            ("queue", rng.choice(("", "default", "no-such-queue", 7))),
            ("priorityClass", rng.choice(("", "x" * 300, None))),
            ("minResources", rng.choice(({"cpu": "abc"}, {"huawei.com/Ascend910": -1}, "x"))),
            ("scheduleTimeoutSeconds", rng.choice((-1, 0, 2**31))),
        )
    )
    set_at(doc, ("spec", "runPolicy", "schedulingPolicy", field), value)
    return f"volcano, schedulingPolicy.{field} = {describe(value)}"


def op_envelope(rng: random.Random, doc: Doc) -> str:
    path, value = rng.choice(
        (
            (("apiVersion",), rng.choice(("mindxdl.gitee.com/v2", "v1", "", None))),
            (("kind",), rng.choice(("Pod", "ascendjob", "", None))),
            (("metadata", "namespace"), rng.choice(("other", "", "fuzz"))),
        )
    )
    set_at(doc, path, value)
    return f"{show(path)} = {describe(value)}"


OPERATORS: dict[str, Callable[[random.Random, Doc], str]] = {
    "type-swap": op_type_swap,
    "delete": op_delete,
    "number": op_number,
    "odd-string": op_odd_string,
    "deep": op_deep,
    "replica-type": op_replica_type,
    "framework": op_framework,
    "metadata": op_metadata,
    "name": op_name,
    "template": op_template,
    "sim": op_sim,
    "gang": op_gang,
    "envelope": op_envelope,
}
_WEIGHTS = {
    "type-swap": 14, "delete": 10, "number": 12, "odd-string": 10, "deep": 6,
    "replica-type": 10, "framework": 5, "metadata": 7, "name": 4, "template": 12,
    "sim": 6, "gang": 4, "envelope": 2, "raw": 3,
}  # fmt: skip
OPERATOR_NAMES: tuple[str, ...] = tuple(_WEIGHTS)
OPERATOR_WEIGHTS: tuple[int, ...] = tuple(_WEIGHTS.values())


def raw_mutation(rng: random.Random) -> tuple[str, Callable[[bytes], bytes]]:
    """A damage to the encoded bytes, decided now (so the rng order stays fixed)."""
    kind = rng.choice(
        ("truncate", "trailing", "bom", "bad-utf8", "dup-key", "nan", "list", "null", "empty")
    )
    cut = rng.random()

    def damage(body: bytes) -> bytes:
        if kind == "truncate":
            return body[: max(1, int(len(body) * cut))]
        if kind == "trailing":
            return body + b' {"extra": true}'
        if kind == "bom":
            return b"\xef\xbb\xbf" + body
        if kind == "bad-utf8":
            return body.replace(b'"ascend"', b'"asc\xff\xfeend"', 1)
        if kind == "dup-key":
            return body.replace(b'"spec": {', b'"spec": {"replicaSpecs": {}}, "spec": {', 1)
        if kind == "nan":
            return body.replace(b'"replicas": 1', b'"replicas": NaN', 1)
        if kind == "list":
            return b"[" + body + b"]"
        if kind == "null":
            return b"null"
        return b""

    return kind, damage
