"""The one way the local cluster writes a metav1.Time.

The API server, the apply patcher and the simulated kubelet all stamp objects; a single
formatter keeps their stamps comparable (whole seconds, UTC, a trailing Z), as a real
cluster's are.
"""

from __future__ import annotations

from datetime import UTC, datetime


def now_rfc3339(now: datetime | None = None) -> str:
    """`now` (default: the current time) as RFC 3339 with whole seconds."""
    return (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
