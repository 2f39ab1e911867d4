"""Fast JSON for the bed's hot paths, exactly as lossless as the standard library.

Profiling the local cluster under the peers benchmark put a sixth of its CPU in `json.loads`,
mostly in `Entry.copy` (every PATCH, bind and status write decodes the stored object to change
a copy of it). `loads` is the controller's own lossless orjson decoder (`kube/jsoncodec.py`
says when orjson may decide and when `json` must); `identical` is the bed's.

`dumps` is the store's encoder: every write serializes the object once, and `json.dumps`
was an eighth of the bed's CPU once the kubelet ran in-process. It gives the very bytes
`json.dumps(obj, separators=(",", ":"), ensure_ascii=False)` gives (NaN and Infinity
aside, which JSON has not), so what clients read does not change.
"""

from __future__ import annotations

import json
import re
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


# Where orjson's bytes may differ from json.dumps's, found in its output (a false alarm only
# costs the slow path): floats below 1e-4, which orjson writes as 0.00001 and 1e-7 where
# Python's repr gives 1e-05 and 1e-07. A compact JSON number ends at "," "]" "}" or the end,
# which a uid's "...3e-4..." does not.
_MAYBE_DIFFERENT = re.compile(rb"[0-9]e-[0-9]+(?:[,\]}]|$)|0\.0000")


def dumps(obj: Any) -> bytes:
    """`json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()`, faster.

    The same bytes for every document without NaN or Infinity. Those are not JSON, and the
    server refuses them in request bodies (`server.parse_body`, as kube-apiserver does), so
    no stored object holds one; were one written anyway, it comes out as null (valid JSON)
    where json.dumps would write NaN. orjson refuses what it cannot write the same way
    (integers beyond 64 bits, non-string keys, lone surrogates); `json` then does it, or
    raises what it always raised.
    """
    try:
        out = orjson.dumps(obj)
    except (TypeError, orjson.JSONEncodeError):
        return _slow_dumps(obj)
    if _MAYBE_DIFFERENT.search(out):
        return _slow_dumps(obj)
    return out


def _slow_dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


__all__ = ["dumps", "identical", "loads"]
