"""Structured logs: JSON lines in the cluster, readable lines on a terminal.

structlog does the formatting, and standard-library `logging` (the kubernetes client, urllib3,
our own modules that use `logging.getLogger`) is routed through the same processors by one
`ProcessorFormatter` on the root handler (structlog's own lines are rendered by those
processors in structlog's chain and only written by the handler), so every line has the same
shape whoever wrote it:
`timestamp` (ISO 8601, UTC), `level`, `event`, `logger`, plus the bound fields.

Convention for callers: one event name per line (`"reconcile finished"`, not a sentence with
values spliced in); values go in fields so they can be queried.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any, TextIO

import orjson
import structlog
from structlog.tracebacks import ExceptionDictTransformer
from structlog.typing import EventDict, Processor

# Libraries that are chatty at DEBUG/INFO; they only speak up at WARNING unless we run at debug.
NOISY_LOGGERS = ("urllib3", "kubernetes", "kubernetes.client.rest")

_HANDLER_NAME = "ascendjob-controller"


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]


_LEADING_FIELDS = ("timestamp", "level", "logger", "event")

#: Exceptions as structured frames, without the frames' local variables. structlog's
#: `dict_tracebacks` shows them by default, and a local may hold a secret: the bearer token
#: the transport puts in a request's headers, a kubeconfig's credentials. A log line is read
#: by more people than the Secret it would leak. The type, message and file/line/function of
#: every frame are still written.
_STRUCTURED_TRACEBACKS = structlog.processors.ExceptionRenderer(
    ExceptionDictTransformer(show_locals=False)
)


def _leading_fields_first(_logger: Any, _method: str, event: EventDict) -> EventDict:
    """timestamp, level, logger, event first: a human scanning JSON lines reads them first."""
    ordered = {key: event[key] for key in _LEADING_FIELDS if key in event}
    ordered.update((key, value) for key, value in event.items() if key not in ordered)
    return ordered


def _drop_formatter_fields(_logger: Any, _method: str, event: EventDict) -> EventDict:
    """`logging.Formatter` leaves `message` on the record; it repeats `event`, so drop it."""
    event.pop("message", None)
    return event


def _json_line(
    event: EventDict, default: Callable[[Any], Any] | None = None, **_ignored: Any
) -> str:
    """One compact JSON line, by orjson: 0.75 us for a reconcile's line against `json.dumps`'s
    4.1 (log lines were about 6 % of the controller's CPU in the peers benchmark, one info
    line per change). What orjson refuses (an integer beyond 64 bits) goes to `json`; both
    keep the field order, and call `default` (structlog's repr fallback) for anything else
    they cannot encode."""
    try:
        return orjson.dumps(event, default=default, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(event, default=default, separators=(",", ":"))


def _renderer(log_format: str) -> Processor:
    if log_format == "console":
        # The standard library's traceback text: with `rich` or `better_exceptions` installed
        # the default would print every frame's locals (see _STRUCTURED_TRACEBACKS).
        return structlog.dev.ConsoleRenderer(
            colors=False, sort_keys=False, exception_formatter=structlog.dev.plain_traceback
        )
    return structlog.processors.JSONRenderer(serializer=_json_line)


def configure(
    log_format: str = "json", log_level: str = "info", stream: TextIO | None = None
) -> None:
    """Install our formatting on the root logger; calling it again replaces the previous set-up.

    Re-configuring is allowed (tests and `demo` do it); the handler we installed before is
    removed, so lines are never written twice.
    """
    level = logging.getLevelName(log_level.upper())
    if not isinstance(level, int):
        raise ValueError(f"unknown log level {log_level!r}")
    shared = _shared_processors()
    rendering: list[Processor] = []
    if log_format == "json":
        rendering += [_STRUCTURED_TRACEBACKS, _leading_fields_first]
    rendering.append(_renderer(log_format))
    final = [structlog.stdlib.ProcessorFormatter.remove_processors_meta, *rendering]
    foreign: list[Processor] = [*shared, structlog.stdlib.ExtraAdder(), _drop_formatter_fields]
    formatter = _Formatter(foreign_pre_chain=foreign, processors=final)

    handler = logging.StreamHandler(stream if stream is not None else sys.stdout)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    _skip_unused_record_fields()
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(level if level <= logging.DEBUG else logging.WARNING)

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.PositionalArgumentsFormatter(),
            *rendering,
            _as_rendered_record,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )


#: Marks a LogRecord whose message structlog rendered already (see `_Formatter`).
_RENDERED = "_ascendjob_rendered"


def _as_rendered_record(_logger: Any, _method: str, line: Any) -> tuple[Any, ...]:
    """structlog's last step: hand logging the finished line, marked as such.

    structlog's own lines used to reach the handler as an event dict, which
    `ProcessorFormatter` rendered after copying the record (a second LogRecord, with its
    path parsing) and re-running its chain: about 10 of an info line's 25 us. They are now
    rendered in structlog's chain, by the same processors, and only written by logging.
    """
    return (line,), {"extra": {_RENDERED: True}}


class _Formatter(structlog.stdlib.ProcessorFormatter):
    """Lines structlog rendered pass as they are; any other record (the libraries',
    `logging.getLogger` users') goes through the shared processors as before."""

    def format(self, record: logging.LogRecord) -> str:
        if record.__dict__.get(_RENDERED):
            return str(record.msg)
        return super().format(record)


def _skip_unused_record_fields() -> None:
    """Stop `logging` from filling LogRecord fields no line of ours prints.

    The Logging HOWTO's "Optimization" section: without `_srcfile` no caller frame is looked
    up (`findCaller` walked the stack for every line), and the thread, process and
    multiprocessing names are not read. Our lines carry timestamp, level, logger, event and
    the fields given, never the caller, thread or process: an info line went from 39 to 30 us.
    """
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """A logger whose `logger` field is `name` (use the module's `__name__`)."""
    logger: structlog.stdlib.BoundLogger = structlog.stdlib.get_logger(name)
    return logger


def job_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    """`namespace`, `name` and `uid` of a Kubernetes object, for every log line about a job."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(meta, Mapping):
        return {}  # malformed: the line still goes out, just without the job's names
    fields = {key: meta.get(key) for key in ("namespace", "name", "uid")}
    return {key: str(value) for key, value in fields.items() if value}


def bind_job(logger: structlog.stdlib.BoundLogger, obj: Mapping[str, Any]) -> Any:
    """`logger` with the job's namespace, name and uid bound, so every line names its job."""
    return logger.bind(**job_fields(obj))
