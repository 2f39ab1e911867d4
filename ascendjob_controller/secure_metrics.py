"""`/metrics` over HTTPS for callers the API server vouches for (`--metrics-secure`).

controller-runtime's secure metrics, rebuilt: TLS with a certificate from `--metrics-cert-dir`
(`tls.crt`/`tls.key`, e.g. a mounted Secret) or a self-signed one made at start; each caller's
bearer token checked with a TokenReview, then a SubjectAccessReview for `get` on the
non-resource URL `/metrics`. So a scrape needs a ServiceAccount bound to the
`ascendjob-controller-metrics-reader` ClusterRole, exactly as for controller-runtime operators.

Answers: no or unknown token 401, known but not allowed 403, the API server unreachable 500.
Decisions are cached for `ttl` seconds per token (hashed), so a Prometheus scraping every 15 s
costs two reviews a minute, not two per scrape.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ascendjob_controller.kube.client import KubeClient, Resource
from ascendjob_controller.logging import get_logger

log = get_logger(__name__)

TOKENREVIEWS = Resource(
    "authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False
)
SUBJECTACCESSREVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)
METRICS_PATH = "/metrics"

Decision = tuple[int, str]  # (HTTP status, message)


class Authorizer:
    """Bearer token -> 200/401/403 by TokenReview + SubjectAccessReview, cached per token."""

    def __init__(
        self,
        client: KubeClient,
        ttl: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[Decision, float]] = {}

    def __call__(self, authorization: str | None) -> Decision:
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return 401, "Unauthorized"
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self._clock()
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[1] > now:
            return cached[0]
        decision = self._review(token)
        if decision[0] != 500:  # never cache the API server being down
            with self._lock:
                if len(self._cache) > 1024:
                    self._cache.clear()
                self._cache[key] = (decision, now + self._ttl)
        return decision

    def _review(self, token: str) -> Decision:
        try:
            user = self._authenticate(token)
            if user is None:
                return 401, "Unauthorized"
            if not self._authorize(user):
                name = user.get("username", "")
                return 403, f"Forbidden (user={name}, verb=get, resource=, subresource=)"
        except Exception as err:
            log.warning("metrics_review_failed", error=str(err))
            return 500, "Internal Server Error"
        return 200, "OK"

    def _authenticate(self, token: str) -> dict[str, Any] | None:
        review = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        status = self._client.create(TOKENREVIEWS, None, review).get("status") or {}
        return status.get("user") if status.get("authenticated") else None

    def _authorize(self, user: dict[str, Any]) -> bool:
        spec: dict[str, Any] = {
            "user": user.get("username", ""),
            "groups": user.get("groups") or [],
            "uid": user.get("uid", ""),
            "nonResourceAttributes": {"path": METRICS_PATH, "verb": "get"},
        }
        if user.get("extra"):
            spec["extra"] = user["extra"]
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        status = self._client.create(SUBJECTACCESSREVIEWS, None, review).get("status") or {}
        return bool(status.get("allowed"))


def serving_certificate(cert_dir: str | None, scratch: Path) -> tuple[Path, Path]:
    """(tls.crt, tls.key): the mounted pair when `cert_dir` has one, else a fresh self-signed."""
    if cert_dir:
        cert, key = Path(cert_dir) / "tls.crt", Path(cert_dir) / "tls.key"
        if cert.is_file() and key.is_file():
            return cert, key
        log.warning("metrics_cert_missing", cert_dir=cert_dir, using="self-signed")
    return self_signed(scratch)


def self_signed(directory: Path, days: int = 365) -> tuple[Path, Path]:
    """A self-signed serving certificate for this host (as controller-runtime makes one)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    host = socket.gethostname()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}-metrics")])
    now = dt.datetime.now(dt.UTC)
    alt = x509.SubjectAlternativeName(
        [
            x509.DNSName(host),
            x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(alt, critical=False)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "tls.crt", directory / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.touch(mode=0o600)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path
