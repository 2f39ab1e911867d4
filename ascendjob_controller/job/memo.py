"""Remembering a pure function's answer by a digest of the JSON it read.

The planner derives the same things from a job on every plan: whether its spec is valid and
its parsed view. Neither depends on the job's status, which our own writes change between
plans, so a digest of the parts they read hits on every plan of a job whose spec did not
change (a digest of the resourceVersion would hit on about one plan in four).

The digest is of orjson's encoding, exact for anything decoded from JSON. Values JSON cannot
carry could share a digest with others (orjson writes NaN as null, a tuple as a list); no API
server sends them. What orjson cannot encode at all (ints past 64 bits, non-string keys,
nesting past 255 levels) gets no digest, and is then worked out every time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import orjson

T = TypeVar("T")


def content_key(parts: list[Any]) -> bytes | None:
    """A 16-byte digest of `parts` as JSON; None when orjson cannot encode them."""
    try:
        raw = orjson.dumps(parts)
    except (TypeError, orjson.JSONEncodeError):
        return None
    return hashlib.blake2b(raw, digest_size=16).digest()


class BoundedMemo(Generic[T]):
    """Answers by content key, emptied when full.

    A few jobs' specs change at a time, so what matters is holding every live job's answer,
    not evicting well; emptying is O(1) amortised and needs no bookkeeping per hit.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.answers: dict[bytes, T] = {}

    def get_or_make(self, key: bytes | None, make: Callable[[], T]) -> T:
        """The remembered answer for `key`, else `make()`'s (remembered unless key is None)."""
        if key is not None and (known := self.answers.get(key)) is not None:
            return known
        answer = make()
        if key is not None:
            if len(self.answers) >= self.size:
                self.answers.clear()
            self.answers[key] = answer
        return answer

    def clear(self) -> None:
        self.answers.clear()

    def __len__(self) -> int:
        return len(self.answers)
