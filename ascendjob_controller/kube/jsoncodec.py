"""JSON for request and response bodies: orjson where it gives the same result, else `json`.

The official client spent about a tenth of the controller's CPU in `json` encoding and
decoding API bodies; orjson does the same work several times faster. It is not a drop-in
replacement, though:
- decoding, an integer beyond 64 bits comes back as a float (silently lossy), and it refuses
  what Python's decoder accepts (NaN, Infinity, lone surrogates). So orjson decodes only bytes
  with no run of 19 or more digits (a number that could exceed int64; a false alarm inside a
  string only costs the slow path), and `json` takes over whenever orjson refuses;
- encoding, it refuses integers beyond 64 bits and non-string keys; `json` takes those.
The local cluster's hot paths use the same `loads` (`localcluster/fastjson.py`).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_LONG_DIGITS = re.compile(rb"\d{19}")


def loads(raw: bytes | str) -> Any:
    """`json.loads(raw)`, faster when that cannot change the result."""
    data = raw.encode() if isinstance(raw, str) else raw
    if _LONG_DIGITS.search(data) is None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON of `obj`: what `json.dumps` gives, but NaN and Infinity (which JSON
    cannot carry and the API server refuses) become null."""
    try:
        return orjson.dumps(obj)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(obj, separators=(",", ":")).encode()


__all__ = ["dumps", "loads"]
