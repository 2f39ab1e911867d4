"""The one way the local cluster writes a metav1.Time.

The API server, the apply patcher and the simulated kubelet all stamp objects; a single
formatter keeps their stamps comparable (whole seconds, UTC, a trailing Z), as a real
cluster's are.
"""

from __future__ import annotations

import time
from datetime import datetime

_last: tuple[int, str] = (-1, "")


def now_rfc3339(now: datetime | None = None) -> str:
    """`now` (default: the current time) as RFC 3339 with whole seconds.

    The current time's string is made once per second: every write stamps something, and
    formatting a datetime each time showed up in the bed's profile."""
    if now is not None:
        return now.strftime("%Y-%m-%dT%H:%M:%SZ")
    global _last
    second = int(time.time())
    cached_second, text = _last
    if cached_second != second:
        text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
        _last = (second, text)
    return text
