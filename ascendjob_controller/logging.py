"""Structured logs: JSON lines in the cluster, readable lines on a terminal.

structlog does the formatting, and standard-library `logging` (the kubernetes client, urllib3,
our own modules that use `logging.getLogger`) is routed through the same processors by one
`ProcessorFormatter` on the root handler, so every line has the same shape whoever wrote it:
`timestamp` (ISO 8601, UTC), `level`, `event`, `logger`, plus the bound fields.

structlog's own lines do not go through `logging` at all: they are filtered by level before
any work (structlog's filtering bound logger), rendered by structlog's chain, and written to
the root handler's stream under the handler's lock (`_LineSink`), so the two kinds of line
share one stream and never interleave. Through `logging`, each line built a `LogRecord` and
ran the handler's machinery for a line already rendered, and a debug line that is not
written still ran the first processor (figures in docs/benchmarks.md, "Twelfth round").

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
from structlog.typing import EventDict, FilteringBoundLogger, Processor

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


_STAMPER = structlog.processors.TimeStamper(fmt="iso", utc=True)
_LEVEL_OF_METHOD = {"warn": "warning", "exception": "error"}


def _head_fields(logger: Any, method: str, event: EventDict) -> EventDict:
    """timestamp, level, logger and event of one of structlog's own lines, first, at once.

    What `add_log_level`, `add_logger_name`, `TimeStamper` and `_leading_fields_first` do
    one after another for the libraries' lines, in one dict built in the leading order; the
    same values (the timestamp by the same `TimeStamper`).
    """
    head: EventDict = _STAMPER(logger, method, {})
    head["level"] = _LEVEL_OF_METHOD.get(method, method)
    head["logger"] = logger.name
    head["event"] = event.pop("event", None)
    head.update(event)
    return head


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
    formatter = structlog.stdlib.ProcessorFormatter(foreign_pre_chain=foreign, processors=final)

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

    _SINK.handler = handler
    ours: list[Processor] = [*shared, *rendering]
    if log_format == "json":
        # The same line, its leading fields set in one step: `_head_fields`.
        ours = [
            structlog.contextvars.merge_contextvars,
            _head_fields,
            structlog.processors.StackInfoRenderer(),
            _STRUCTURED_TRACEBACKS,
            rendering[-1],  # the renderer the libraries' lines use
        ]
    structlog.configure(
        processors=ours,
        logger_factory=_line_logger,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        cache_logger_on_first_use=False,
    )


class _LineSink:
    """Where structlog's rendered lines go: the stream of the handler `configure` installed.

    Written under the handler's own lock, as `StreamHandler.emit` writes the libraries'
    lines, and flushed after each line like them. A failed write (a closed pipe) drops the
    line: logging must never stop a reconcile.
    """

    def __init__(self) -> None:
        self.handler: logging.StreamHandler[Any] | None = None

    def write(self, line: str) -> None:
        handler = self.handler
        if handler is None:
            return
        handler.acquire()
        try:
            stream = handler.stream
            stream.write(line + handler.terminator)
            stream.flush()
        except Exception:  # as logging.Handler.handleError: a log line never raises
            pass
        finally:
            handler.release()


_SINK = _LineSink()


class _LineLogger:
    """structlog's logger: every level method writes the finished line to `_SINK`.

    `name` is what `add_logger_name` puts in the `logger` field.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def msg(self, line: str) -> None:
        _SINK.write(line)

    debug = info = warning = warn = error = critical = exception = fatal = log = msg


_LINE_LOGGERS: dict[str, _LineLogger] = {}


def _line_logger(name: str = "ascendjob_controller", *_args: Any) -> _LineLogger:
    """One `_LineLogger` per name, shared: they hold nothing but the name."""
    logger = _LINE_LOGGERS.get(name)
    if logger is None:
        logger = _LINE_LOGGERS.setdefault(name, _LineLogger(name))
    return logger


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


def get_logger(name: str) -> FilteringBoundLogger:
    """A logger whose `logger` field is `name` (use the module's `__name__`)."""
    logger: FilteringBoundLogger = structlog.get_logger(name)
    return logger


_JOB_FIELDS = ("namespace", "name", "uid")


def job_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    """`namespace`, `name` and `uid` of a Kubernetes object, for every log line about a job."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(meta, Mapping):
        return {}  # malformed: the line still goes out, just without the job's names
    fields: dict[str, str] = {}
    for key in _JOB_FIELDS:
        value = meta.get(key)
        if value:
            fields[key] = str(value)
    return fields


def bind_job(logger: FilteringBoundLogger, obj: Mapping[str, Any]) -> Any:
    """`logger` with the job's namespace, name and uid bound, so every line names its job."""
    return logger.bind(**job_fields(obj))
