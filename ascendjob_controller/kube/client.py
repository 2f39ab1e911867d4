"""Raw-JSON access to any Kubernetes resource, with retries, throttling and request metrics.

We use the official client only for its configuration, credentials and connection pool:
requests go out through `transport.Transport` on that pool, and bodies are read as raw JSON
dicts (`jsoncodec`). Deserialising into generated models is slow, memory-hungry and loses
unknown fields; its request layer was a quarter of our CPU.

Retry policy (client-go semantics, stated once here):

* A request the server surely did not process (connection refused, 429 Too Many Requests, any
  response carrying Retry-After) is retried for every verb.
* A request that may have been processed (read timeout, connection reset after sending, 5xx) is
  retried only for idempotent verbs: get, list, watch start, update (guarded by resourceVersion),
  merge/strategic/apply patch and delete.
* A create in that ambiguous state is never blindly re-sent: we GET the name. If the object exists
  it is returned as ours; if not, the create is sent again. A create with `generateName` has no
  name to look up, so it is not retried at all.

Back-off is capped exponential with jitter; Retry-After is honoured. A client-side token bucket
(QPS/burst) spaces every request, including the start of watches.

Once the process begins to shut down (`cancel_retries`), a failed request is not retried and a
back-off in progress ends at once, as client-go's requests end when the manager cancels their
context. Without that, a reconcile in flight against an API server that had gone away kept
the process retrying for seconds after SIGTERM.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import random
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import kubernetes
import urllib3

from ascendjob_controller import metrics
from ascendjob_controller.kube import jsoncodec
from ascendjob_controller.kube.ratelimit import TokenBucket
from ascendjob_controller.kube.transport import Timeout, Transport

log = logging.getLogger(__name__)

JSON = dict[str, Any]


# --- resources ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Resource:
    """Where a kind lives in the REST API."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def api_path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path; a namespaced resource with namespace None means all namespaces."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        path = f"{base}/{self.plural}"
        if name is not None:
            path += f"/{name}"
            if subresource:
                path += f"/{subresource}"
        return path


PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
EVENTS = Resource("", "v1", "events", "Event")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
ASCENDJOBS = Resource("mindxdl.gitee.com", "v1", "ascendjobs", "AscendJob")
PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")


# --- errors ---------------------------------------------------------------------------------
class ApiError(Exception):
    """A failed API call. status 0 means no HTTP status (connection problem, timeout)."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str = "",
        body: JSON | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        self.retry_after = retry_after

    @classmethod
    def from_status(cls, status: int, data: bytes, headers: Any = None) -> ApiError:
        body: JSON | None = None
        try:
            parsed = json.loads(data) if data else None
            body = parsed if isinstance(parsed, dict) else None
        except ValueError:
            body = None
        reason = (body or {}).get("reason") or "Unknown"
        message = (body or {}).get("message") or (data[:200].decode("utf-8", "replace"))
        retry_after = _parse_retry_after(headers.get("Retry-After") if headers else None)
        return cls(status, str(reason), str(message), body, retry_after)


class ApiConnectionError(ApiError):
    """No usable HTTP response. `ambiguous` means the request may have reached the server."""

    def __init__(self, message: str, *, ambiguous: bool) -> None:
        super().__init__(0, "ConnectionError", message)
        self.ambiguous = ambiguous


class WatchTimeoutError(ApiError):
    """A watch stream sent nothing for longer than its client read timeout (dead connection)."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "WatchReadTimeout", message)


def _status_of(e: BaseException) -> int | None:
    return e.status if isinstance(e, ApiError) else None


def is_not_found(e: BaseException) -> bool:
    return _status_of(e) == 404


def is_conflict(e: BaseException) -> bool:
    return _status_of(e) == 409 and getattr(e, "reason", "") != "AlreadyExists"


def is_already_exists(e: BaseException) -> bool:
    return _status_of(e) == 409 and getattr(e, "reason", "") == "AlreadyExists"


def is_invalid(e: BaseException) -> bool:
    """422 Invalid: the object fails the server's validation, and sending it again cannot
    help. Like apimachinery's IsInvalid, a 422 without a known reason counts too."""
    status, reason = _status_of(e), getattr(e, "reason", "")
    return reason == "Invalid" if reason not in ("", "Unknown") else status == 422


def is_bad_request(e: BaseException) -> bool:
    """400 BadRequest: the server could not decode the body (a field of the wrong JSON
    type), and sending the same body again cannot help."""
    return _status_of(e) == 400


def is_gone(e: BaseException) -> bool:
    return _status_of(e) == 410


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


# --- the client -----------------------------------------------------------------------------
_PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
_NOT_SENT = (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError)

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
Query = list[tuple[str, str]]  # module level: inside KubeClient, `list` is a method


class KubeClient:
    """Thread-safe: one instance is shared by every informer, worker and elector."""

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        *,
        qps: float = 20.0,
        burst: int = 30,
        max_retries: int = 5,
        request_timeout: float = 30.0,
        backoff_base: float = 0.1,
        backoff_cap: float = 10.0,
        transport: Transport | None = None,
        user_agent: str | None = None,
        retries_cancelled: threading.Event | None = None,
    ) -> None:
        self._api = api_client
        if user_agent:
            # Sent on every request, as client-go's rest.Config.UserAgent: the API server
            # names our writes' managedFields entries and audit records after its product.
            api_client.user_agent = user_agent
        self._transport = transport or Transport(api_client)
        self._bucket = TokenBucket(qps, burst)
        self.max_retries = max_retries
        self.request_timeout = request_timeout
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        # Shared with the clones of `with_rate_limit`: the whole process stops retrying at once.
        self._retries_cancelled = retries_cancelled or threading.Event()
        self.host = urlparse(api_client.configuration.host).netloc or "unknown"
        self._metrics: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    # --- construction ---------------------------------------------------------------------
    @classmethod
    def from_kubeconfig(
        cls, path: str | None = None, context: str | None = None, **kw: Any
    ) -> KubeClient:
        if path is None:
            # Read $KUBECONFIG now: the kubernetes package snapshots it at import time.
            path = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
        cfg = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(
            config_file=path, context=context, client_configuration=cfg
        )
        return cls(_api_client(cfg), **kw)

    @classmethod
    def in_cluster(
        cls,
        *,
        token_file: str = SERVICE_ACCOUNT_DIR + "/token",
        ca_file: str = SERVICE_ACCOUNT_DIR + "/ca.crt",
        **kw: Any,
    ) -> KubeClient:
        """Service-account token and CA of the pod; host from KUBERNETES_SERVICE_HOST/PORT.

        The projected token rotates: the loader's refresh hook re-reads the file when it ages.
        """
        from kubernetes.config.incluster_config import InClusterConfigLoader

        cfg = kubernetes.client.Configuration()
        InClusterConfigLoader(token_filename=token_file, cert_filename=ca_file).load_and_set(cfg)
        return cls(_api_client(cfg), **kw)

    @classmethod
    def auto(cls, kubeconfig: str | None = None, **kw: Any) -> KubeClient:
        """An explicit kubeconfig wins; in a pod use the service account; else KUBECONFIG/~."""
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            return cls.in_cluster(**kw)
        return cls.from_kubeconfig(kubeconfig, **kw)

    def close(self) -> None:
        self._api.close()

    def cancel_retries(self) -> None:
        """From now on every request gets one attempt, and a back-off under way ends now; a
        request that would wait for the rate limiter's next token is not sent (`_throttle`).

        For shutdown (this client and its `with_rate_limit` clones): what is in flight ends
        with its last error instead of retrying against a server that may be gone.
        """
        self._retries_cancelled.set()

    def with_rate_limit(self, qps: float, burst: int) -> KubeClient:
        """The same connection pool and credentials behind a separate token bucket.

        Leader election uses one so that its renewals never queue behind a burst of the
        controller's own requests (which could make it miss its renew deadline).
        """
        clone = KubeClient(
            self._api,
            qps=qps,
            burst=burst,
            max_retries=self.max_retries,
            request_timeout=self.request_timeout,
            backoff_base=self._backoff_base,
            backoff_cap=self._backoff_cap,
            transport=self._transport,
            retries_cancelled=self._retries_cancelled,
        )
        return clone

    # --- verbs ----------------------------------------------------------------------------
    def get(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        *,
        timeout: float | None = None,
        retries: int | None = None,
    ) -> JSON:
        """`timeout`/`retries` override the client's defaults for one call (leader election
        must bound every call by its renew deadline)."""
        return self._json(
            "GET", res.api_path(namespace, name), idempotent=True, timeout=timeout, retries=retries
        )

    def probe(self, res: Resource, namespace: str | None = None) -> None:
        """One LIST page of one item: is this resource served and may we list it?

        Raises ApiError (404 when the API is not served). Unlike `list`, it never follows
        continue tokens, so its cost does not grow with the number of objects.
        """
        self._json("GET", res.api_path(namespace), query=[("limit", "1")], idempotent=True)

    def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 500,
        transform: Callable[[JSON], JSON] | None = None,
        decode: Callable[[bytes], JSON] | None = None,
    ) -> JSON:
        """Every page merged into one list; the resourceVersion is the (consistent) list's.

        `transform` is applied to each item as its page arrives (an informer's cache
        transform), so only one page of full objects is ever decoded at a time: with 50,000
        pods, the merged full list would be over a gigabyte. A continue token that expired
        mid-way (410) restarts the paged list once from the start, then falls back to one
        unpaged list, as client-go's pager does. `decode` replaces `json.loads` for the pages'
        bodies (an informer's decoder that skips what its transform drops).
        """
        base: Query = []
        if label_selector:
            base.append(("labelSelector", label_selector))
        if field_selector:
            base.append(("fieldSelector", field_selector))
        for page_size in (limit, limit, 0) if limit else (0,):
            try:
                return self._list_pages(res, namespace, base, page_size, transform, decode)
            except _ContinueExpired:
                log.info("list continue token expired, listing again", extra={"path": res.plural})
        raise AssertionError("unreachable: an unpaged list has no continue token")

    def _list_pages(
        self,
        res: Resource,
        namespace: str | None,
        base: Query,
        limit: int,
        transform: Callable[[JSON], JSON] | None,
        decode: Callable[[bytes], JSON] | None,
    ) -> JSON:
        """One paged (limit > 0) or unpaged list; _ContinueExpired when a token expired.

        The next page is requested as soon as a page's continue token is known, on a helper
        thread, so the server renders it while this one is transformed: at most two pages
        are held at a time.
        """
        path = res.api_path(namespace)
        load = decode or jsoncodec.loads

        def fetch(token: str | None) -> JSON:
            query = [*base, ("limit", str(limit))] if limit else list(base)
            if token:
                query.append(("continue", token))
            try:
                data = self._request("GET", path, query=query, idempotent=True).data
            except ApiError as e:
                if token and is_gone(e):
                    raise _ContinueExpired() from e
                raise
            return load(data) if data else {}

        items: list[JSON] = []
        page = fetch(None)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="list-ahead") as ahead:
            while True:
                meta = page.get("metadata") or {}
                token = meta.get("continue") or None
                following = ahead.submit(fetch, token) if token else None
                page_items = page.get("items") or []
                items.extend(map(transform, page_items) if transform else page_items)
                if following is None:
                    return {
                        "apiVersion": page.get("apiVersion", res.api_version),
                        "kind": page.get("kind", f"{res.kind}List"),
                        "metadata": {"resourceVersion": meta.get("resourceVersion", "")},
                        "items": items,
                    }
                del page, page_items
                page = following.result()

    def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int,
        allow_bookmarks: bool = True,
        read_timeout: float,
        decode: Callable[[bytes], JSON] | None = None,
    ) -> WatchStream:
        """Open a watch; iterate it for (type, object). 410 raises ApiError(410).

        `decode` replaces `jsoncodec.loads` for each event line (an informer's decoder that
        skips what its transform drops); it must give ERROR events their Status whole."""
        query = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(int(timeout_seconds))),
        ]
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        resp = self._request(
            "GET",
            res.api_path(namespace),
            query=query,
            idempotent=True,
            timeout=(min(10.0, read_timeout), read_timeout),
            stream=True,
            verb="WATCH",
        )
        return WatchStream(resp, read_timeout, on_silence=self.drop_idle_connections, decode=decode)

    def drop_idle_connections(self) -> None:
        """Close every pooled connection not in use, so the next requests dial afresh.

        Called when a watch has been silent past its deadline: the path to the server is then
        presumed dead (a failed load balancer, a conntrack flush), and so are the idle
        keep-alive connections that share it. Without this, the first write after such a
        partition waits its whole request timeout on a dead socket. client-go gets the same
        from HTTP/2, where one failed health ping closes the connection every request shares.
        """
        with contextlib.suppress(Exception):
            self._transport.clear()

    def create(
        self,
        res: Resource,
        namespace: str | None,
        body: JSON,
        *,
        timeout: float | None = None,
        retries: int | None = None,
        read_back: bool = True,
        decode: bool = True,
    ) -> JSON:
        """POST `body`. An attempt whose answer was lost is never blindly re-sent: the name is
        read back first (`read_back`), or, for callers that may not GET the resource (the
        event recorder has only create and patch), re-sent and an AlreadyExists taken as the
        lost attempt having landed, in which case `body` itself is returned.

        `decode=False` is for callers that do not read the created object (a pod is ~9 KB of
        JSON): the answer's body is not decoded and `{}` comes back; errors are as ever."""
        name = (body.get("metadata") or {}).get("name")
        path = res.api_path(namespace)
        attempts = (self.max_retries if retries is None else retries) + 1
        ambiguous = False
        for attempt in range(attempts):
            try:
                return self._json(
                    "POST",
                    path,
                    body=body,
                    idempotent=False,
                    timeout=timeout,
                    retries=retries,
                    decode=decode,
                )
            except ApiError as e:
                if ambiguous and is_already_exists(e) and name:
                    # An earlier attempt we could not confirm did land: that object is ours.
                    return self.get(res, namespace, name) if read_back else body
                if not _is_ambiguous(e) or not name or self._no_more_attempts(attempt, attempts):
                    raise
                ambiguous = True
                if read_back:
                    found = self._read_back(res, namespace, name, e, timeout)
                    if found is not None:
                        return found
                else:
                    log.warning("create ambiguous, re-sending", extra={"object": f"{name}"})
                if not self._sleep_backoff(attempt, e):
                    raise
        raise AssertionError("unreachable")

    def _read_back(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        cause: ApiError,
        timeout: float | None,
    ) -> JSON | None:
        """The object a create whose answer was lost may have made; None if it did not land."""
        log.warning("create ambiguous, reading back", extra={"object": f"{name}"})
        try:
            return self.get(res, namespace, name, timeout=timeout)
        except ApiError as read_err:
            if not is_not_found(read_err):
                raise cause from read_err
        return None

    def update(
        self,
        res: Resource,
        namespace: str | None,
        body: JSON,
        *,
        timeout: float | None = None,
        retries: int | None = None,
    ) -> JSON:
        name = body["metadata"]["name"]
        return self._json(
            "PUT",
            res.api_path(namespace, name),
            body=body,
            idempotent=True,
            timeout=timeout,
            retries=retries,
        )

    def update_status(self, res: Resource, namespace: str | None, body: JSON) -> JSON:
        name = body["metadata"]["name"]
        return self._json(
            "PUT", res.api_path(namespace, name, "status"), body=body, idempotent=True
        )

    def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> JSON:
        content_type = _PATCH_TYPES[patch_type]
        query: Query = []
        if field_manager:
            query.append(("fieldManager", field_manager))
        if force is not None:
            query.append(("force", "true" if force else "false"))
        payload = json.dumps(body) if patch_type == "apply" else body
        return self._json(
            "PATCH",
            res.api_path(namespace, name, subresource),
            query=query,
            body=payload,
            content_type=content_type,
            # A JSON patch may append to a list: re-sending it is not safe.
            idempotent=patch_type != "json",
        )

    def delete(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        *,
        propagation_policy: str | None = None,
        preconditions: dict[str, str] | None = None,
        grace_period_seconds: int | None = None,
        decode: bool = True,
    ) -> JSON | None:
        """Delete; returns the object (or Status). None if a retried delete found it gone.

        `decode=False` is for callers that do not read the answer (the object as deleted, a
        Service's or a job's with its managedFields): `{}` comes back; errors are as ever."""
        options: JSON = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = preconditions
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        path = res.api_path(namespace, name)
        try:
            return self._json("DELETE", path, body=options, idempotent=True, decode=decode)
        except _RetriedNotFound:
            return None

    # --- transport ------------------------------------------------------------------------
    def _json(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str | None = None,
        idempotent: bool,
        timeout: Timeout | None = None,
        retries: int | None = None,
        decode: bool = True,
    ) -> JSON:
        resp = self._request(
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            idempotent=idempotent,
            timeout=timeout,
            retries=retries,
        )
        data = resp.data
        return jsoncodec.loads(data) if data and decode else {}

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str | None = None,
        idempotent: bool,
        timeout: Timeout | None = None,
        stream: bool = False,
        verb: str | None = None,
        retries: int | None = None,
    ) -> Any:
        """Send with the retry policy of the module docstring; return a 2xx response."""
        attempts = (self.max_retries if retries is None else retries) + 1
        retried_ambiguously = False
        for attempt in range(attempts):
            try:
                return self._send_once(
                    method, path, query, body, content_type, timeout, stream, verb or method
                )
            except ApiError as e:
                if method == "DELETE" and retried_ambiguously and is_not_found(e):
                    raise _RetriedNotFound() from e
                retry = _server_did_not_process(e) or (idempotent and _is_ambiguous(e))
                if not retry or self._no_more_attempts(attempt, attempts):
                    raise
                retried_ambiguously = retried_ambiguously or _is_ambiguous(e)
                log.info(
                    "retrying request",
                    extra={"method": method, "path": path, "status": e.status, "try": attempt + 1},
                )
                if not self._sleep_backoff(attempt, e):
                    raise
        raise AssertionError("unreachable")

    def _send_once(
        self,
        method: str,
        path: str,
        query: Query | None,
        body: Any,
        content_type: str | None,
        timeout: Timeout | None,
        stream: bool,
        verb: str,
    ) -> Any:
        self._bucket.acquire(self._throttle)
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        elif body is not None:
            headers["Content-Type"] = "application/json"
        start = time.monotonic()
        code = "<error>"
        try:
            resp = self._transport.send(
                method,
                path,
                query,
                body,
                headers,
                timeout if timeout is not None else self.request_timeout,
                stream,
            )
            code = str(resp.status)
            if not 200 <= resp.status < 300:
                data = resp.read() if stream else resp.data
                if stream:
                    resp.release_conn()
                raise ApiError.from_status(resp.status, data or b"", resp.headers)
            return resp
        except ApiError:
            raise
        except Exception as e:
            raise _connection_error(e) from e
        finally:
            counter, latency = self._metric_children(code, method, verb)
            counter.inc()
            latency.observe(time.monotonic() - start)

    def _metric_children(self, code: str, method: str, verb: str) -> tuple[Any, Any]:
        """The request counter's and latency histogram's children for these labels.

        `.labels()` checks and joins its arguments under a lock on every call: 4.6 us of a
        request's 6.4 us of metrics. The children never change once made (nothing removes
        them), so each label set is looked up once; a race only makes the same child twice.
        """
        key = (code, method, verb)
        children = self._metrics.get(key)
        if children is None:
            children = (
                metrics.REST_REQUESTS.labels(code=code, method=method, host=self.host),
                metrics.REST_LATENCY.labels(verb=verb, host=self.host),
            )
            self._metrics[key] = children
        return children

    def _no_more_attempts(self, attempt: int, attempts: int) -> bool:
        """This attempt was the last: the retries are used up, or cancelled for shutdown."""
        return attempt == attempts - 1 or self._retries_cancelled.is_set()

    def _throttle(self, delay: float) -> None:
        """Wait for the rate limiter's token, unless the client is stopping.

        After `cancel_retries` a request that must wait for a token is not sent at all, as
        client-go's limiter gives up when the request's context is cancelled: otherwise the
        rest of a slow-start batch of creates drained at the client's QPS (seconds for a
        large batch at 20 QPS) before the process could exit.
        """
        if self._retries_cancelled.wait(delay):
            raise ApiConnectionError(
                "client rate limiter Wait returned an error: the client is stopping",
                ambiguous=False,
            )

    def _sleep_backoff(self, attempt: int, e: ApiError) -> bool:
        """Wait before the next attempt; False when retries were cancelled meanwhile."""
        if e.retry_after is not None:
            delay = min(e.retry_after, 30.0)
        else:
            delay = min(self._backoff_cap, self._backoff_base * 2**attempt)
            delay *= 0.5 + random.random() / 2
        return not self._retries_cancelled.wait(delay)


class _ContinueExpired(Exception):
    """A list's continue token answered 410: the paged list must start over."""


class _RetriedNotFound(Exception):
    """A retried delete found the object gone: an earlier attempt most likely deleted it."""


#: Connections kept open to the API server, as client-go's transport keeps (its
#: `idleConnsPerHost`). The official Python client keeps cpu_count * 5: 10 on 2 cores, fewer
#: than the watches, workers, parallel pod creates and Event sender use at once, so every
#: batch of creates dialled (and the server accepted) a new connection per request past the
#: tenth, then dropped it.
IDLE_CONNS_PER_HOST = 25


def user_agent(component: str, version: str) -> str:
    """A User-Agent in client-go's shape, `<command>/<version> (<os>/<arch>) <runtime>`.

    The API server takes the part before the first "/" as the field manager of a write that
    names none, so managedFields say who wrote (the official client's default names no one:
    "OpenAPI-Generator").
    """
    system = platform.system().lower() or "unknown"
    machine = platform.machine()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine) or "unknown"
    return f"{component}/v{version} ({system}/{arch}) python/{platform.python_version()}"


def _api_client(cfg: Any) -> kubernetes.client.ApiClient:
    # We retry ourselves (and must not let urllib3 re-send a create); no hidden retries below.
    cfg.retries = False
    cfg.connection_pool_maxsize = max(cfg.connection_pool_maxsize or 0, IDLE_CONNS_PER_HOST)
    # TCP keepalive on every connection, with client-go's timings: a peer that vanished (a
    # node gone, a NAT entry dropped) is noticed by the kernel, not only by our read timeouts.
    cfg.keep_alive = True
    return kubernetes.client.ApiClient(configuration=cfg)


def _connection_error(e: BaseException) -> ApiError:
    reason = e.reason if isinstance(e, urllib3.exceptions.MaxRetryError) else e
    if isinstance(reason, _NOT_SENT):
        return ApiConnectionError(f"{type(reason).__name__}: {reason}", ambiguous=False)
    return ApiConnectionError(f"{type(reason).__name__}: {reason}", ambiguous=True)


def _server_did_not_process(e: ApiError) -> bool:
    if isinstance(e, ApiConnectionError):
        return not e.ambiguous
    return e.status == 429 or (e.status >= 500 and e.retry_after is not None)


def _is_ambiguous(e: ApiError) -> bool:
    if isinstance(e, ApiConnectionError):
        return e.ambiguous
    return e.status >= 500 and e.retry_after is None


# --- watch streams ----------------------------------------------------------------------------
class WatchStream:
    """An iterator of (event type, object) over one watch response.

    `close()` may be called from any thread: it shuts the socket down, which wakes a reader
    blocked in `next()`. Iteration ends when the server ends the watch (its timeoutSeconds).
    """

    def __init__(
        self,
        resp: Any,
        read_timeout: float,
        on_silence: Callable[[], None] | None = None,
        decode: Callable[[bytes], JSON] | None = None,
    ) -> None:
        self._resp = resp
        self._read_timeout = read_timeout
        self._on_silence = on_silence
        self._decode: Callable[[bytes], JSON] = decode or jsoncodec.loads
        self._lines = self._iter_lines()
        self._closed = False

    def __iter__(self) -> Iterator[tuple[str, JSON]]:
        return self

    def __next__(self) -> tuple[str, JSON]:
        while True:
            line = next(self._lines)
            if not line.strip():
                continue
            event = self._decode(line)
            kind = event.get("type", "")
            obj = event.get("object") or {}
            if kind == "ERROR":
                raise ApiError(
                    int(obj.get("code") or 500),
                    str(obj.get("reason") or "Unknown"),
                    str(obj.get("message") or ""),
                    obj,
                )
            return kind, obj

    def _chunks(self) -> Iterator[bytes]:
        resp = self._resp
        if resp.chunked and resp.supports_chunked_reads():
            yield from resp.read_chunked(decode_content=True)
            return
        while True:
            data = resp.read1(65536)
            if not data:
                return
            yield data

    def _iter_lines(self) -> Iterator[bytes]:
        buf = b""
        try:
            for chunk in self._chunks():
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    yield line
            if buf.strip():
                yield buf
        except Exception as e:
            if self._closed:
                return
            if isinstance(e, urllib3.exceptions.ReadTimeoutError | TimeoutError):
                if self._on_silence is not None:
                    self._on_silence()
                raise WatchTimeoutError(f"no data for {self._read_timeout}s") from e
            raise _connection_error(e) from e
        finally:
            self.close()

    def close(self) -> None:
        """Close the connection; safe to call twice and from another thread."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._resp.shutdown()
        with contextlib.suppress(Exception):
            self._resp.close()
        with contextlib.suppress(Exception):
            self._resp.release_conn()

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
