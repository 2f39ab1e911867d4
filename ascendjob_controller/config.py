"""Every setting of the controller, in one frozen `Config`, built from flags and environment.

Each setting is declared once, in `SETTINGS`: its flag, its environment twin
(`ASCENDJOB_<FLAG_UPPER_SNAKE>`), its default and its parser. The argparse flags, the `--help`
text, the README flags table and the validation all derive from that one table, so they cannot
drift apart. Flags win over the environment, the environment over the defaults.

Values are parsed here rather than by argparse `type=` callbacks so that a bad value gives the
same one-line message whether it came from a flag or from the environment, and names its source.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_PREFIX = "ASCENDJOB_"
SERVICE_ACCOUNT_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAMESPACE = "ascendjob-system"
LOG_FORMATS = ("json", "console")
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


@dataclass(frozen=True)
class Config:
    """What `run` and `demo` need to know; immutable so every thread sees the same settings."""

    kubeconfig: str | None = None
    namespaces: tuple[str, ...] = ()
    workers: int = 4
    metrics_bind_address: str = ":8080"
    health_probe_bind_address: str = ":8081"
    leader_elect: bool = False
    leader_election_namespace: str = DEFAULT_NAMESPACE
    leader_election_id: str = "ascendjob-controller-leader"
    leader_election_lease_duration: float = 15.0
    leader_election_renew_deadline: float = 10.0
    leader_election_retry_period: float = 2.0
    log_format: str = "json"
    log_level: str = "info"
    kube_api_qps: float = 20.0
    kube_api_burst: int = 30
    graceful_shutdown_timeout: float = 30.0
    # A status write that only moves replica counts is held this long (a transition carries it).
    status_batch_period: float = 1.0
    # A live pod's progress (bound, Running, an IP, its devices) syncs its job within this long.
    pod_batch_period: float = 0.1
    enable_gang_scheduling: bool = True
    # MindCluster's directory; a job's `ranktable` hostPath volume must point at the same place.
    ranktable_dir: str = "/user/mindx-dl/ranktable"
    metrics_secure: bool = False
    metrics_cert_dir: str | None = None


class ConfigError(ValueError):
    """A bad setting; `source` is the flag or environment variable it came from."""

    def __init__(self, source: str, message: str) -> None:
        super().__init__(f"{source}: {message}")
        self.source = source
        self.message = message


# --- value parsers: str -> value, raising ValueError with the text the user sees --------------

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def parse_positive_int(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError("must be a positive integer") from None
    if value <= 0:
        raise ValueError("must be a positive integer")
    return value


def parse_positive_float(text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError("must be a positive number") from None
    if not value > 0 or value == float("inf"):
        raise ValueError("must be a positive number")
    return value


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError("must be true or false")


def parse_duration(text: str) -> float:
    """Seconds from `30`, `30s`, `1m30s` or `500ms`: Go's duration syntax, as operators type it."""
    stripped = text.strip()
    message = "must be a duration such as 30s, 1m30s or 500ms"
    try:
        value = float(stripped)
    except ValueError:
        if not stripped or _DURATION_PART.sub("", stripped):
            raise ValueError(message) from None
        value = sum(
            float(n) * _DURATION_UNITS[unit] for n, unit in _DURATION_PART.findall(stripped)
        )
    if value < 0 or value == float("inf") or value != value:
        raise ValueError(message)
    return value


def parse_positive_duration(text: str) -> float:
    value = parse_duration(text)
    if value <= 0:
        raise ValueError("must be a positive duration such as 30s")
    return value


def parse_bind_address(text: str) -> str:
    """`host:port`, `:port` (every interface) or `0` (disabled), as controller-runtime takes it."""
    stripped = text.strip()
    if stripped == "0":
        return stripped
    host, sep, port = stripped.rpartition(":")
    bracketed_ipv6 = host.startswith("[") and host.endswith("]")
    if not sep or not port.isdigit() or int(port) > 65535 or (":" in host and not bracketed_ipv6):
        raise ValueError("must be host:port, :port or 0 to disable")
    return stripped


def split_bind_address(address: str) -> tuple[str, int] | None:
    """(host, port) to bind, `None` when disabled; an empty host means every interface."""
    if address == "0":
        return None
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def parse_namespace(text: str) -> str:
    value = text.strip()
    if len(value) > 63 or not _DNS1123_LABEL.match(value):
        raise ValueError(f"{value!r} is not a valid namespace name (RFC 1123 label)")
    return value


def _choice(options: Sequence[str]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value == "warn":
            value = "warning"
        if value not in options:
            raise ValueError("must be one of " + ", ".join(options))
        return value

    return parse


def _text(text: str) -> str:
    value = text.strip()
    if not value:
        raise ValueError("must not be empty")
    return value


# --- the table of settings ---------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One setting: how it is spelled on the command line and in the environment, and parsed."""

    field: str
    help: str
    parse: Callable[[str], Any]
    metavar: str
    kind: str = "value"  # "value" | "bool" (Go-style: --flag or --flag=false) | "list" (repeatable)

    @property
    def flag(self) -> str:
        name = "namespace" if self.field == "namespaces" else self.field
        return "--" + name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.flag[2:].replace("-", "_").upper()


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "kubeconfig",
        "kubeconfig file when not running in a pod (else $KUBECONFIG, then ~/.kube/config)",
        _text,
        "FILE",
    ),
    Setting(
        "namespaces",
        "watch only this namespace; repeat for several "
        "(env: comma-separated; default every namespace)",
        parse_namespace,
        "NS",
        kind="list",
    ),
    Setting("workers", "concurrent reconciles", parse_positive_int, "N"),
    Setting(
        "metrics_bind_address", "where /metrics listens (0 disables)", parse_bind_address, "ADDR"
    ),
    Setting(
        "health_probe_bind_address",
        "where /healthz and /readyz listen (0 disables)",
        parse_bind_address,
        "ADDR",
    ),
    Setting(
        "leader_elect",
        "elect a leader through a Lease so only one replica works",
        parse_bool,
        "BOOL",
        kind="bool",
    ),
    Setting(
        "leader_election_namespace",
        f"namespace of the Lease (default: the pod's own namespace, else {DEFAULT_NAMESPACE})",
        parse_namespace,
        "NS",
    ),
    Setting("leader_election_id", "name of the Lease", _text, "NAME"),
    Setting(
        "leader_election_lease_duration",
        "how long a standby waits before taking over",
        parse_positive_duration,
        "DURATION",
    ),
    Setting(
        "leader_election_renew_deadline",
        "how long the leader retries renewing before it stops working",
        parse_positive_duration,
        "DURATION",
    ),
    Setting(
        "leader_election_retry_period",
        "pause between attempts to acquire or renew",
        parse_positive_duration,
        "DURATION",
    ),
    Setting(
        "log_format",
        "json (one object a line) or console (readable); default json unless stdout is a terminal",
        _choice(LOG_FORMATS),
        "FORMAT",
    ),
    Setting("log_level", "debug, info, warning or error", _choice(LOG_LEVELS), "LEVEL"),
    Setting(
        "kube_api_qps", "steady rate of requests to the API server", parse_positive_float, "QPS"
    ),
    Setting("kube_api_burst", "requests allowed above the QPS in a burst", parse_positive_int, "N"),
    Setting(
        "graceful_shutdown_timeout",
        "time in-flight reconciles get to finish on SIGTERM/SIGINT",
        parse_duration,
        "DURATION",
    ),
    Setting(
        "status_batch_period",
        "how long a status write that only moves replica counts is held (0: never)",
        parse_duration,
        "DURATION",
    ),
    Setting(
        "pod_batch_period",
        "how long a job's sync may wait for more of what can wait: its pods' progress (bound, "
        "Running, an IP, devices), its own status write's echo, the events of the children it "
        "made or deleted; a spec change, failure or restart is synced at once (0: all at once)",
        parse_duration,
        "DURATION",
    ),
    Setting(
        "enable_gang_scheduling",
        "create Volcano PodGroups for jobs with schedulerName: volcano",
        parse_bool,
        "BOOL",
        kind="bool",
    ),
    Setting(
        "metrics_secure",
        "serve /metrics over HTTPS, to callers allowed to get /metrics (TokenReview, SAR)",
        parse_bool,
        "BOOL",
        kind="bool",
    ),
    Setting(
        "metrics_cert_dir",
        "tls.crt and tls.key for --metrics-secure (default: a self-signed certificate)",
        _text,
        "DIR",
    ),
    Setting(
        "ranktable_dir",
        "where file-mode rank tables go: <dir>/<namespace>.<job>/hccl.json",
        _text,
        "DIR",
    ),
)


def default_of(setting: Setting) -> Any:
    return {f.name: f.default for f in dataclasses.fields(Config)}[setting.field]


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Declare every setting as a flag; values stay raw strings (None when absent) for `build`."""
    for setting in SETTINGS:
        default = default_of(setting)
        shown = {
            "namespaces": None,
            "kubeconfig": None,
            "log_format": None,
            "leader_election_namespace": None,
        }.get(setting.field, default)
        if isinstance(shown, bool):
            shown = str(shown).lower()
        if isinstance(shown, float) and setting.metavar == "DURATION":
            shown = f"{shown:g}s"
        suffix = f" [env {setting.env}" + ("" if shown is None else f"; default {shown}") + "]"
        common: dict[str, Any] = {
            "dest": setting.field,
            "metavar": setting.metavar,
            "help": setting.help + suffix,
            "default": None,
        }
        if setting.kind == "list":
            parser.add_argument(setting.flag, action="append", **common)
        elif setting.kind == "bool":
            parser.add_argument(setting.flag, nargs="?", const="true", **common)
        else:
            parser.add_argument(setting.flag, **common)


def _pod_namespace(namespace_file: Path) -> str | None:
    try:
        value = namespace_file.read_text().strip()
    except OSError:
        return None
    return value or None


def build(
    flags: Mapping[str, Any],
    env: Mapping[str, str],
    *,
    stdout_is_tty: bool = False,
    namespace_file: Path = SERVICE_ACCOUNT_NAMESPACE_FILE,
) -> Config:
    """Merge flags over environment over defaults; raise `ConfigError` on the first bad value.

    `flags` maps field names to raw strings (lists for repeatable flags), None when not given,
    as `add_flags` leaves them in an argparse namespace.
    """
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        raw = flags.get(setting.field)
        source = setting.flag
        if raw is None and env.get(setting.env, "").strip():
            raw = env[setting.env]
            source = setting.env
            if setting.kind == "list":
                raw = [part for part in raw.split(",") if part.strip()]
        if raw is None:
            continue
        try:
            if setting.kind == "list":
                values[setting.field] = tuple(dict.fromkeys(setting.parse(v) for v in raw))
            else:
                values[setting.field] = setting.parse(raw)
        except ValueError as err:
            raise ConfigError(source, str(err)) from None
    if "log_format" not in values:
        values["log_format"] = "console" if stdout_is_tty else "json"
    if "leader_election_namespace" not in values:
        values["leader_election_namespace"] = _pod_namespace(namespace_file) or DEFAULT_NAMESPACE
    config = Config(**values)
    _check_leader_election_timing(config)
    return config


def _check_leader_election_timing(config: Config) -> None:
    """client-go's rules: a leader must give up before its lease can expire under a standby."""
    if config.leader_election_renew_deadline >= config.leader_election_lease_duration:
        raise ConfigError(
            "--leader-election-renew-deadline", "must be less than --leader-election-lease-duration"
        )
    if config.leader_election_retry_period >= config.leader_election_renew_deadline:
        raise ConfigError(
            "--leader-election-retry-period", "must be less than --leader-election-renew-deadline"
        )
