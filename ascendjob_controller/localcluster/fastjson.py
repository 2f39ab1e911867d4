"""Fast JSON for the bed's hot paths, exactly as lossless as the standard library.

Profiling the local cluster under the peers benchmark put a sixth of its CPU in `json.loads`,
mostly in `Entry.copy` (every PATCH, bind and status write decodes the stored object to change
a copy of it). `loads` is the controller's own lossless orjson decoder (`kube/jsoncodec.py`
says when orjson may decide and when `json` must); `identical` is the bed's.

`dumps` is the store's encoder: every write serializes the object once, and `json.dumps`
was an eighth of the bed's CPU once the kubelet ran in-process. What clients read does not
change: the same bytes as before for documents without floats, the same values for all.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# One lossless decoder for the controller and the bed; see its docstring for the rules.
from ascendjob_controller.kube.jsoncodec import loads


def identical(a: Any, b: Any) -> bool:
    """`a` and `b` are the same JSON document, types included (1 is neither 1.0 nor True).

    Python's `==` alone says 1 == 1.0 == True; the encoded bytes tell them apart. False when
    unsure (say, the same keys in another order): callers then compare the slow way.
    """
    if a != b:
        return False
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except (TypeError, orjson.JSONEncodeError):
        return False


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON: `json.dumps(obj, separators=(",", ":"), ensure_ascii=False)`'s
    bytes for every document without floats, and the same values for every one.

    Floats are written by orjson, the shortest form that reads back exactly, as json's is;
    only the notation of some differs (1e-05 comes out 0.00001, as Go's encoder writes it,
    and 1e-07 as 1e-7). NaN and Infinity are not JSON: the server refuses them in request
    bodies (`server.parse_body`, as kube-apiserver does), and one written anyway comes out
    as null. orjson refuses what it cannot write (integers beyond 64 bits, non-string keys,
    lone surrogates); `json` then writes it, or raises what it always raised.
    """
    try:
        return orjson.dumps(obj)
    except (TypeError, orjson.JSONEncodeError):
        return _slow_dumps(obj)


def _slow_dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


__all__ = ["dumps", "identical", "loads"]
