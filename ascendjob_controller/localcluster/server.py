"""The HTTP side of the local API server: routing, bodies, responses and watch streams.

A ThreadingHTTPServer with HTTP/1.1 keep-alive: clients such as urllib3 and kubectl reuse
connections, and each watch holds one thread while it streams chunked JSON lines.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml

from ascendjob_controller.kube.response_headers import parse_header_lines, read_header_lines
from ascendjob_controller.localcluster import builtin, fastjson
from ascendjob_controller.localcluster.envelope import (
    custom_envelope_error,
    excerpt,
    nesting_error,
    non_object_error,
)
from ascendjob_controller.localcluster.errors import (
    ApiError,
    bad_request,
    injected,
    internal,
    method_not_allowed,
    path_not_found,
    unsupported_media_type,
)
from ascendjob_controller.localcluster.eventsview import EventsView
from ascendjob_controller.localcluster.faults import Faults, resource_matches
from ascendjob_controller.localcluster.gojson_syntax import syntax_error
from ascendjob_controller.localcluster.registry import Registry
from ascendjob_controller.localcluster.resources import ResourceType
from ascendjob_controller.localcluster.store import Entry, Event, dumps
from ascendjob_controller.localcluster.verbs import (
    APPLY_PATCH,
    Api,
    DeleteOptions,
    make_matcher,
)

# What kube-apiserver v1.37.2 (the release whose behaviour this server copies, and which
# hack/realcluster builds) answers on /version.
VERSION_INFO = {
    "major": "1",
    "minor": "37",
    "emulationMajor": "1",
    "emulationMinor": "37",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "36",
    "gitVersion": "v1.37.2",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "1970-01-01T00:00:00Z",
    "goVersion": "go1.26.8",
    "compiler": "gc",
    "platform": "linux/amd64",
}
#: Request lines `parse_request` takes itself; any other goes to the standard library.
_PLAIN_VERSIONS = (b"HTTP/1.1", b"HTTP/1.0")
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
_TABLE_MARK = "as=Table"


@dataclass
class Route:
    """A parsed resource URL."""

    rt: ResourceType
    namespace: str  # "" when not namespaced or all namespaces
    name: str
    subresource: str


@dataclass
class ServerState:
    """Everything the handler threads share; one per LocalCluster."""

    api: Api
    registry: Registry
    faults: Faults
    bookmark_interval: float = 5.0
    stopping: threading.Event = field(default_factory=threading.Event)
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    counts_lock: threading.Lock = field(default_factory=threading.Lock)

    def api_for(self, rt: ResourceType) -> Any:
        """The Api, or the events.k8s.io view of its core Event storage.

        Every request asks, so the imports are module-level: two `from ... import` statements
        here cost about 10 us a request (the import machinery runs even for loaded modules).
        """
        return EventsView(self.api) if rt is builtin.NEW_EVENTS else self.api

    def count(self, verb: str, resource: str) -> None:
        with self.counts_lock:
            self.counts[(verb, resource)] += 1

    def request_count(self, verb: str | None = None, resource: str | None = None) -> int:
        with self.counts_lock:
            return sum(
                n
                for (v, r), n in self.counts.items()
                if (verb is None or v == verb)
                and (resource is None or resource_matches(resource, r))
            )


class ApiHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], state: ServerState) -> None:
        self.state = state
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, ApiHandler)

    def close_connections(self) -> None:
        """Cut every open client connection, so a stopped server is really gone.

        Without this, keep-alive connections would go on being served by their threads.
        """
        with self.connections_lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up mid-response are routine (watch cancelled): no traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        print(f"localcluster: connection from {client_address}: {exc!r}", file=sys.stderr)


def parse_route(registry: Registry, path: str) -> Route | None:
    """Map /api/v1/... and /apis/g/v/... to a resource; None when it names no resource."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if not rest:
        return None
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        ns_type = registry.lookup(group, version, "namespaces")
        if not (ns_type is not None and len(rest) == 3 and rest[2] in ns_type.subresources):
            namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    rt = registry.lookup(group, version, rest[0])
    if rt is None or (namespace and not rt.namespaced):
        return None
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if subresource and subresource not in rt.subresources:
        return None
    return Route(rt, namespace, name, subresource)


def parse_body(raw: bytes, content_type: str, kind: str = "") -> Any:
    """JSON, or YAML when the client says so; 400 for anything that does not parse.

    `kind` (the resource's) words the error as the real decoder does: "the object provided
    is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error:
    ...". Without one (patches), the error is the patch handler's "invalid JSON patch".
    """
    if "protobuf" in content_type:
        from ascendjob_controller.localcluster import protobuf

        try:
            return protobuf.decode(raw)
        except protobuf.ProtobufError as err:
            raise unsupported_media_type(
                content_type, ["application/json", "application/yaml"]
            ) from err
    try:
        if not raw.strip():
            raise ValueError("unexpected end of JSON input")
        if "yaml" in content_type:
            # Through JSON so YAML-only values (timestamps, dates) arrive as JSON would.
            as_json = json.dumps(yaml.safe_load(raw.decode()), default=_yaml_scalar)
            return json.loads(as_json, parse_constant=_refuse_constant)
        if kind and raw.startswith(_UTF8_BOM):
            # Go's decoder takes no byte-order mark; Python's would skip it.
            raise _GoSyntaxError("invalid character '\u00ef' looking for beginning of value")
        too_deep = nesting_error(raw) if kind else None
        if too_deep is not None:
            raise _GoSyntaxError(too_deep)
        return _loads_as_go(raw)
    except (ValueError, TypeError, yaml.YAMLError) as err:
        if not kind:
            raise bad_request("invalid JSON patch") from err
        raise bad_request(
            f"the object provided is unrecognized (must be of type {kind}): couldn't get "
            f"version/kind; json parse error: "
            f"{_go_json_error(raw, err, json_body='yaml' not in content_type)} ({excerpt(raw)})"
        ) from err


def _yaml_scalar(value: Any) -> str:
    """A YAML timestamp as sigs.k8s.io/yaml hands it on: RFC 3339, `Z` for UTC (a date stays
    a date); `str(datetime)` had a space and `+00:00`, which metav1.Time does not parse."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.isoformat().replace("+00:00", "Z")
    return str(value)


def _loads_as_go(raw: bytes) -> Any:
    """JSON as Go's encoding/json reads it: bytes that are no UTF-8 inside a string are
    stored as U+FFFD. orjson refuses such a body whole, so it is read again with them
    replaced (only after a failure: the common body pays nothing)."""
    try:
        return fastjson.loads(raw, parse_constant=_refuse_constant)
    except ValueError:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            fixed = raw.decode("utf-8", "replace").encode("utf-8")
            return fastjson.loads(fixed, parse_constant=_refuse_constant)
        raise


_UTF8_BOM = b"\xef\xbb\xbf"


class _GoSyntaxError(ValueError):
    """A syntax error found before decoding, already in Go's words."""


class _NonFinite(ValueError):
    """NaN, Infinity or -Infinity: Python's decoder takes them, Go's (and JSON) does not."""

    def __init__(self, constant: str) -> None:
        super().__init__(constant)
        self.constant = constant


def _refuse_constant(constant: str) -> Any:
    """Refuse NaN and the infinities as kube-apiserver does; no stored object holds one (the
    store's encoder, fastjson.dumps, may then write JSON's own null for any other float)."""
    raise _NonFinite(constant)


def _go_json_error(raw: bytes, err: Exception, json_body: bool = True) -> str:
    """Go's encoding/json wording of the error: its scanner's (`gojson_syntax`) for a JSON
    body it refuses; otherwise (a YAML body, or one only Python refuses) the closest wording
    for the common cases."""
    if isinstance(err, _GoSyntaxError):
        return str(err)
    found = syntax_error(raw) if json_body else None
    if found is not None:
        return found
    if isinstance(err, _NonFinite):
        if err.constant.startswith("-"):
            return "invalid character 'I' in numeric literal"
        return f"invalid character {err.constant[0]!r} looking for beginning of value"
    position = getattr(err, "pos", None)
    text = raw.decode("utf-8", "replace")
    if position is None or position >= len(text.rstrip()):
        return "unexpected end of JSON input"
    return f"invalid character {text[position]!r} looking for beginning of object key string"


def _flag(value: str | None) -> bool:
    return value in ("true", "1", "True")


_DATE_HEADER: list[Any] = [-1, ""]  # (second, its HTTP date): shared by every handler


class ApiHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: ApiHTTPServer
    raw_requestline: bytes  # set by http.server before parse_request
    server_version = "ascendjob-localcluster"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The Date header, formatted once per second (email.utils was 3% of the bed)."""
        if timestamp is not None:
            return super().date_time_string(timestamp)
        second = int(time.time())
        cached = _DATE_HEADER
        if cached[0] != second:
            cached[:] = [second, super().date_time_string(second)]
        return str(cached[1])

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a busy test run would otherwise print a line per request."""

    def parse_request(self) -> bool:
        """The standard library's request parsing, without the email parser for the headers.

        `http.server` hands every request's header block to `email.parser`, a general MIME
        parser; reading it here took the bed's CPU per Event POST from 257 to 243 us (one
        client posting 3,000 Events, measured from /proc). A plain `METHOD PATH HTTP/1.x`
        line is taken here and its header block read by `parse_header_lines` (the
        controller's response-header parser: the same HTTPMessage, the email parser only for
        an unusual block); any other request line goes to the standard library whole, so its
        errors and HTTP/0.9 handling stay as they are. Connection and Expect are then read as
        the standard library reads them.
        """
        words = self.raw_requestline.split()
        if len(words) != 3 or words[2] not in _PLAIN_VERSIONS:
            return super().parse_request()
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        self.command, path, self.request_version = (w.decode("iso-8859-1") for w in words)
        # The standard library's guard against open redirects: '//host/x' is not a path.
        self.path = "/" + path.lstrip("/") if path.startswith("//") else path
        self.close_connection = self.request_version == "HTTP/1.0"
        try:
            self.headers = parse_header_lines(read_header_lines(self.rfile))
        except http.client.LineTooLong as err:
            self.send_error(431, "Line too long", str(err))
            return False
        except http.client.HTTPException as err:
            self.send_error(431, "Too many headers", str(err))
            return False
        connection = self.headers.get("Connection", "").lower()
        if connection == "close":
            self.close_connection = True
        elif connection == "keep-alive":
            self.close_connection = False
        expect = self.headers.get("Expect", "").lower()
        if expect == "100-continue" and self.request_version == "HTTP/1.1":
            return self.handle_expect_100()
        return True

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    # --- plumbing ----------------------------------------------------------------------------
    def _handle(self, method: str) -> None:
        state = self.server.state
        self._streaming = False
        try:
            body = self._read_body()
            url = urlsplit(self.path)
            query = dict(parse_qsl(url.query, keep_blank_values=True))
            route = parse_route(state.registry, url.path)
            if route is None:
                state.count("get" if method == "GET" else method.lower(), "")
                self._non_resource(method, url.path)
                return
            verb = self._verb(method, route, query)
            resource = route.rt.plural + (f"/{route.subresource}" if route.subresource else "")
            state.count(verb, resource)
            delay = state.faults.delay_for(verb)
            if delay > 0:
                time.sleep(delay)
            code = state.faults.failure_for(verb, resource)
            if code is not None:
                raise injected(code)
            self._resource(verb, route, query, body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except ApiError as err:
            if self._streaming:  # a watch already answered 200: just end it
                self.close_connection = True
                return
            self._send_json(err.code, dumps(err.status()), headers=err.headers)
        except Exception as err:  # never a stack trace to the client; one line to stderr
            print(f"localcluster: {method} {self.path}: {err!r}", file=sys.stderr)
            if self._streaming:
                self.close_connection = True
                return
            self._send_json(500, dumps(internal(str(err)).status()))

    def _read_body(self) -> bytes:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError as err:
            self.close_connection = True
            raise bad_request("invalid Content-Length") from err
        if length:
            return self.rfile.read(length)
        if "chunked" in (self.headers.get("Transfer-Encoding") or ""):
            chunks = []
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        return b""

    def _send_json(
        self,
        code: int,
        payload: bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-cache, private")
        for key, value in (headers or {}).items():
            # Go writes header values as raw UTF-8 bytes; http.server encodes Latin-1 and would
            # raise (leaving the request unanswered) on any other character. Same bytes as Go.
            self.send_header(key, value.encode("utf-8", "replace").decode("latin-1"))
        # Headers and body in one write: fewer syscalls on the hot path.
        self._headers_buffer.append(b"\r\n")  # type: ignore[attr-defined]
        if self.command != "HEAD":
            self._headers_buffer.append(payload)  # type: ignore[attr-defined]
        self.flush_headers()

    def _send_obj(self, code: int, obj: Any, content_type: str = "application/json") -> None:
        self._send_json(code, dumps(obj), content_type)

    @staticmethod
    def _verb(method: str, route: Route, query: dict[str, str]) -> str:
        if method == "GET":
            if route.name:
                return "get"
            return "watch" if _flag(query.get("watch")) else "list"
        if method == "POST":
            if route.name and route.subresource != "binding":
                raise method_not_allowed()
            return "create"
        if method in ("PUT", "PATCH"):
            if not route.name:
                raise method_not_allowed()
            return "update" if method == "PUT" else "patch"
        if method == "DELETE":
            return "delete" if route.name else "deletecollection"
        raise method_not_allowed()

    def _wants_table(self) -> bool:
        return _TABLE_MARK in (self.headers.get("Accept") or "")

    # --- non-resource endpoints -------------------------------------------------------------
    def _non_resource(self, method: str, path: str) -> None:
        if method != "GET":
            raise path_not_found() if path.startswith(("/api", "/apis")) else method_not_allowed()
        path = path.rstrip("/") or "/"
        if path == "/version":
            self._send_obj(200, VERSION_INFO)
            return
        if path.split("/")[1] in ("healthz", "readyz", "livez"):
            self._send_json(200, b"ok", "text/plain; charset=utf-8")
            return
        if path.startswith(("/api", "/apis")):
            self._discovery(path)
            return
        if path.startswith("/openapi"):
            self._openapi(path)
            return
        raise path_not_found()

    def _discovery(self, path: str) -> None:
        from ascendjob_controller.localcluster import discovery

        resources = self.server.state.registry.all()
        parts = [p for p in path.split("/") if p]
        aggregated = "as=APIGroupDiscoveryList" in (self.headers.get("Accept") or "")
        if len(parts) == 1 and aggregated:
            doc = discovery.aggregated_discovery(resources, parts[0] == "api")
            self._send_obj(200, doc, AGGREGATED)
            return
        if parts == ["api"]:
            self._send_obj(200, discovery.api_versions())
            return
        if parts == ["apis"]:
            self._send_obj(200, discovery.api_group_list(resources))
            return
        if len(parts) == 2 and parts[0] == "apis":
            groups = discovery.api_group_list(resources).get("groups", [])
            for group in groups:
                if group.get("name") == parts[1]:
                    self._send_obj(200, {"kind": "APIGroup", "apiVersion": "v1", **group})
                    return
            raise path_not_found()
        group_version = parts[1] if parts[0] == "api" and len(parts) == 2 else "/".join(parts[1:3])
        if len(parts) in (2, 3) and any(r.group_version == group_version for r in resources):
            self._send_obj(200, discovery.api_resource_list(group_version, resources))
            return
        if parts[0] == "apis":
            # Under /apis, what no group serves falls through to Go's plain NotFound handler.
            self._send_json(404, b"404 page not found\n", "text/plain; charset=utf-8")
            return
        raise path_not_found()

    def _openapi(self, path: str) -> None:
        from ascendjob_controller.localcluster import openapi

        resources = self.server.state.registry.all()
        if path == "/openapi/v2":
            if "protobuf" in (self.headers.get("Accept") or ""):
                # kubectl asks only for protobuf and parses nothing else; answer with the
                # dotted Content-Type because Go's MIME parser rejects the "@" it sent.
                self._send_json(
                    200,
                    openapi.openapi_v2_protobuf(),
                    openapi.OPENAPI_V2_PROTOBUF_CONTENT_TYPE,
                )
                return
            self._send_obj(200, openapi.openapi_v2(resources))
            return
        if path == "/openapi/v3":
            self._send_obj(200, openapi.openapi_v3_index(resources))
            return
        prefix = "/openapi/v3/"
        if path.startswith(prefix):
            rest = path[len(prefix) :].split("/")
            if rest[0] == "api" and len(rest) == 2:
                group_version = rest[1]
            elif rest[0] == "apis" and len(rest) == 3:
                group_version = f"{rest[1]}/{rest[2]}"
            else:
                raise path_not_found()
            doc = openapi.openapi_v3_document(group_version, resources)
            if doc is not None:
                self._send_obj(200, doc)
                return
        raise path_not_found()

    # --- resource verbs -------------------------------------------------------------------------
    def _resource(self, verb: str, route: Route, query: dict[str, str], raw: bytes) -> None:
        api = self.server.state.api_for(route.rt)
        rt = route.rt
        ns = route.namespace if rt.namespaced else ""
        dry_run = query.get("dryRun") == "All"
        validation = query.get("fieldValidation", "")
        if verb == "get" and route.subresource == "log":
            self._log(api.get(rt, ns, route.name), query)
        elif verb == "get":
            entry = api.get(rt, ns, route.name)
            if route.subresource not in ("", "status"):
                raise method_not_allowed()
            self._send_entry(200, rt, entry)
        elif verb == "list":
            self._list(route, query)
        elif verb == "watch":
            self._watch(route, query)
        elif verb == "create" and route.subresource == "binding":
            body = parse_body(raw, self.headers.get("Content-Type") or "", "Binding")
            self._send_obj(201, api.bind(ns, route.name, body))
        elif verb in ("create", "deletecollection") and rt.namespaced and not route.namespace:
            raise method_not_allowed()  # only namespaced collections take these
        elif verb == "create":
            body = self._write_body(rt, raw)
            result = api.create(rt, ns, body, validation, dry_run, self._manager(query))
            self._send_entry(result.code, rt, result.entry, result.warnings)
        elif route.subresource in ("binding", "log") or (route.subresource and verb == "delete"):
            raise method_not_allowed()
        elif verb == "update":
            body = self._write_body(rt, raw)
            result = api.update(
                rt, ns, route.name, body, route.subresource, validation, dry_run,
                self._manager(query),
            )  # fmt: skip
            self._send_entry(result.code, rt, result.entry, result.warnings)
        elif verb == "patch":
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            body = parse_body(raw, "yaml" if content_type == APPLY_PATCH else "json")
            result = api.patch(
                rt,
                ns,
                route.name,
                content_type,
                body,
                route.subresource,
                query.get("fieldManager", ""),
                validation,
                dry_run,
                self._manager(query),
                _flag(query.get("force")),
            )
            self._send_entry(result.code, rt, result.entry, result.warnings)
        elif verb == "delete":
            opts = self._delete_options(query, raw)
            result = api.delete(rt, ns, route.name, opts)
            if result.answer is not None and result.answer.get("kind") == "Status":
                self._send_obj(result.code, result.answer)
            else:
                self._send_entry(result.code, rt, result.entry)
        elif verb == "deletecollection":
            opts = self._delete_options(query, raw)
            entries = api.delete_collection(
                rt, ns or None, query.get("labelSelector", ""), query.get("fieldSelector", ""), opts
            )
            self._send_list(rt, entries, api.store.resource_version, "", None)

    def _write_body(self, rt: ResourceType, raw: bytes) -> Any:
        """The body of a create or update; a custom resource's apiVersion and kind are
        checked here, against the bytes sent, since the decoder's errors quote them."""
        content_type = self.headers.get("Content-Type") or ""
        body = parse_body(raw, content_type, rt.kind)
        sent = fastjson.dumps(body) if "yaml" in content_type and not rt.builtin else raw
        error = non_object_error(rt, body, sent) or custom_envelope_error(rt, body, sent)
        if error is not None:
            raise error
        return {} if body is None else body

    def _manager(self, query: dict[str, str]) -> str:
        """Who writes, for managedFields: fieldManager, else the User-Agent's product name."""
        if query.get("fieldManager"):
            return query["fieldManager"]
        agent = (self.headers.get("User-Agent") or "").split("/")[0]
        return "".join(c for c in agent if c.isprintable())[:128]

    def _log(self, entry: Entry, query: dict[str, str]) -> None:
        from ascendjob_controller.localcluster.logs import LogError, pod_log

        try:
            text = pod_log(entry.obj, query.get("container", ""), _flag(query.get("previous")))
        except LogError as err:
            raise bad_request(str(err)) from err
        self._send_json(200, text.encode(), "text/plain")

    def _delete_options(self, query: dict[str, str], raw: bytes) -> DeleteOptions:
        body: dict[str, Any] = {}
        if raw.strip():
            parsed = parse_body(raw, self.headers.get("Content-Type") or "", "DeleteOptions")
            if isinstance(parsed, dict):
                body = parsed
        pre = body.get("preconditions") or {}
        grace = body.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        propagation = body.get("propagationPolicy") or query.get("propagationPolicy")
        orphan = body.get("orphanDependents", query.get("orphanDependents"))
        dry = body.get("dryRun") or ([query["dryRun"]] if "dryRun" in query else [])
        return DeleteOptions(
            propagation=propagation,
            grace_period=int(grace) if grace not in (None, "") else None,
            uid=pre.get("uid"),
            resource_version=pre.get("resourceVersion"),
            dry_run="All" in dry,
            orphan_dependents=None if orphan in (None, "") else orphan in (True, "true"),
        )

    def _send_entry(
        self, code: int, rt: ResourceType, entry: Entry, warnings: list[str] | None = None
    ) -> None:
        headers = (
            {"Warning": ", ".join(f'299 - "{_escape(w)}"' for w in warnings)} if warnings else None
        )
        if self._wants_table():
            table = self._table(rt, [entry.obj])
            table["metadata"] = {"resourceVersion": entry.obj["metadata"]["resourceVersion"]}
            self._send_json(code, dumps(table), headers=headers)
            return
        self._send_json(code, entry.raw, headers=headers)

    def _table(self, rt: ResourceType, objects: list[dict[str, Any]]) -> dict[str, Any]:
        from ascendjob_controller.localcluster import printers

        include = self._query_value("includeObject") or "Metadata"
        result: dict[str, Any] = printers.to_table(rt, objects, include, datetime.now(UTC))
        return result

    def _query_value(self, key: str) -> str:
        return dict(parse_qsl(urlsplit(self.path).query)).get(key, "")

    def _list(self, route: Route, query: dict[str, str]) -> None:
        """A list; resourceVersion semantics as kube-apiserver's (see _list_rv)."""
        from ascendjob_controller.localcluster import listoptions

        api = self.server.state.api_for(route.rt)
        listoptions.check(query, watch=False)
        limit = _int_param(query.get("limit") or "0")
        rv = self._list_rv(query)
        selectors = (query.get("labelSelector", ""), query.get("fieldSelector", ""))
        if rv is not None and query.get("resourceVersionMatch") == listoptions.EXACT:
            result = api.list_at(route.rt, route.namespace or None, rv, *selectors)
        else:
            result = api.list_objects(
                route.rt,
                route.namespace or None,
                *selectors,
                0 if query.get("resourceVersion") == "0" else limit,  # served from cache
                query.get("continue", ""),
            )
        self._send_list(
            route.rt,
            result.entries,
            result.resource_version,
            result.continue_token,
            result.remaining,
        )

    def _list_rv(self, query: dict[str, str]) -> int | None:
        """The resourceVersion a list asks for; waits (3 s at most) for one not reached yet."""
        from ascendjob_controller.localcluster import listoptions

        text = query.get("resourceVersion", "")
        if text in ("", "0"):
            return None
        rv = _int_param(text, f"invalid resource version: {text}")
        store = self.server.state.api.store
        if not store.wait_for_rv(rv, 3.0):
            raise listoptions.too_large(rv, store.resource_version)
        return rv

    def _send_list(
        self,
        rt: ResourceType,
        entries: list[Entry],
        rv: int,
        continue_token: str,
        remaining: int | None,
    ) -> None:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if continue_token:
            meta["continue"] = continue_token
        if remaining is not None:
            meta["remainingItemCount"] = remaining
        if self._wants_table():
            table = self._table(rt, [e.obj for e in entries])
            table["metadata"] = meta
            self._send_obj(200, table)
            return
        head = {"kind": rt.list_kind, "apiVersion": rt.group_version, "metadata": meta}
        payload = dumps(head)[:-1] + b',"items":[' + b",".join(e.raw for e in entries) + b"]}"
        self._send_json(200, payload)

    # --- watch ------------------------------------------------------------------------------
    def _watch(self, route: Route, query: dict[str, str]) -> None:
        from ascendjob_controller.localcluster import listoptions

        listoptions.check(query, watch=True)
        state = self.server.state
        store = state.api.store
        rt = route.rt
        stored = _storage_type(rt)
        match = make_matcher(
            query.get("labelSelector", ""), query.get("fieldSelector", ""), route.rt
        )
        try:
            timeout = float(query.get("timeoutSeconds") or 1800)
        except ValueError as err:
            raise bad_request("invalid timeoutSeconds") from err
        bookmarks = _flag(query.get("allowWatchBookmarks"))
        rv_param = query.get("resourceVersion", "")
        send_initial = _flag(query.get("sendInitialEvents"))
        initial: list[Entry] = []
        error: ApiError | None = None
        position = store.head()
        current_rv = store.resource_version
        if state.faults.take_expire(rt.plural):
            error = ApiError(410, "Expired", "too old resource version: forced by fault injection")
        elif rv_param in ("", "0") or send_initial:
            entries, position, current_rv = store.snapshot(
                stored.group_resource, route.namespace or None
            )
            initial = [e for e in entries if match is None or match(e.obj)]
        else:
            try:
                position = store.position_after(int(rv_param))
                current_rv = int(rv_param)  # until the first fetch catches up
            except ValueError as err:
                raise bad_request(f"invalid resourceVersion {rv_param!r}") from err
            except ApiError as err:
                error = err
        self._streaming = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        table = self._wants_table()
        line = self._event_line(rt, table)
        if error is not None:
            self._chunk(dumps({"type": "ERROR", "object": error.status()}) + b"\n")
            self._chunk(b"")
            return
        if initial:
            self._chunk(b"".join(line("ADDED", e) for e in initial))
        if send_initial and bookmarks:
            # the WatchList protocol: a bookmark marks the end of the initial state
            self._chunk(self._bookmark(rt, current_rv, initial_events_end=True))
        epoch = state.faults.watch_epoch
        deadline = time.monotonic() + timeout
        next_bookmark = time.monotonic() + state.bookmark_interval
        while True:
            now = time.monotonic()
            if now >= deadline:
                if bookmarks:
                    self._chunk(self._bookmark(rt, current_rv))
                self._chunk(b"")
                return
            if state.stopping.is_set() or state.faults.watch_epoch != epoch:
                self._chunk(b"")
                self.close_connection = True
                return
            wait = min(deadline - now, 1.0)
            if bookmarks:
                wait = min(wait, max(0.0, next_bookmark - now))
            try:
                events, position, current_rv = store.wait_events(
                    position, wait, stored.group_resource
                )
            except ApiError as err:
                self._chunk(dumps({"type": "ERROR", "object": err.status()}) + b"\n")
                self._chunk(b"")
                return
            out = [
                chunk
                for ev in events
                if ev.resource == stored.group_resource
                and (not route.namespace or ev.namespace == route.namespace)
                for chunk in self._filtered(ev, match, line)
            ]
            if out:
                self._chunk(b"".join(out))
            if bookmarks and time.monotonic() >= next_bookmark:
                self._chunk(self._bookmark(rt, current_rv))
                next_bookmark = time.monotonic() + state.bookmark_interval

    @staticmethod
    def _filtered(
        ev: Event,
        match: Callable[[dict[str, Any]], bool] | None,
        line: Callable[[str, Entry], bytes],
    ) -> list[bytes]:
        """Selector transitions as a real watch reports them: in -> ADDED, out -> DELETED."""
        if match is None:
            return [line(ev.type, ev.entry)]
        now_in = match(ev.entry.obj)
        if ev.type == "MODIFIED":
            was_in = ev.prev is not None and match(ev.prev)
            if now_in and was_in:
                return [line("MODIFIED", ev.entry)]
            if now_in:
                return [line("ADDED", ev.entry)]
            if was_in and ev.prev is not None:
                # Leaving the selection: the object as it was when it matched, at the
                # event's resourceVersion (the watch cache's convertToWatchEvent).
                before = json.loads(dumps(ev.prev))
                before["metadata"]["resourceVersion"] = str(ev.rv)
                return [line("DELETED", Entry(before, dumps(before)))]
            return []
        return [line(ev.type, ev.entry)] if now_in else []

    def _event_line(self, rt: ResourceType, table: bool) -> Callable[[str, Entry], bytes]:
        from ascendjob_controller.localcluster.eventsview import convert_entry

        convert = convert_entry if _storage_type(rt) is not rt else None
        if table:

            def table_line(kind: str, entry: Entry) -> bytes:
                obj = self._table(rt, [entry.obj])
                obj["metadata"] = {"resourceVersion": entry.obj["metadata"]["resourceVersion"]}
                return dumps({"type": kind, "object": obj}) + b"\n"

            return table_line

        def raw_line(kind: str, entry: Entry) -> bytes:
            raw = convert(entry).raw if convert is not None else entry.raw
            return b'{"type":"' + kind.encode() + b'","object":' + raw + b"}\n"

        return raw_line

    @staticmethod
    def _bookmark(rt: ResourceType, rv: int, initial_events_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_events_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": rt.kind, "apiVersion": rt.group_version, "metadata": meta}
        return dumps({"type": "BOOKMARK", "object": obj}) + b"\n"

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _storage_type(rt: ResourceType) -> ResourceType:
    """Where a resource's objects are stored: events.k8s.io Events are core/v1 Events."""
    return builtin.EVENTS if rt is builtin.NEW_EVENTS else rt


def _int_param(text: str, message: str = "") -> int:
    """An integer query parameter; 400 with Go's strconv wording when it is not one."""
    try:
        return int(text)
    except ValueError as err:
        raise bad_request(message or f'strconv.ParseInt: parsing "{text}": invalid syntax') from err


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
