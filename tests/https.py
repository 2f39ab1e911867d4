"""GET over HTTPS with an optional bearer token: the scrape of a secure /metrics in tests."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request


def get(url: str, context: ssl.SSLContext, token: str | None = None) -> tuple[int, str]:
    """(status, body) of a GET; HTTP errors are answers here, not exceptions."""
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
