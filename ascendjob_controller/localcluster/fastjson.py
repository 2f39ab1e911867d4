"""Fast JSON for the bed's hot paths, exactly as lossless as the standard library.

Profiling the local cluster under the peers benchmark put a sixth of its CPU in `json.loads`,
mostly in `Entry.copy` (every PATCH, bind and status write decodes the stored object to change
a copy of it). `loads` is the controller's own lossless orjson decoder (`kube/jsoncodec.py`
says when orjson may decide and when `json` must); `identical` is the bed's.
"""

from __future__ import annotations

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


__all__ = ["identical", "loads"]
