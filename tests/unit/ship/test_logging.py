"""Logging: JSON lines with the agreed fields, stdlib logging routed through structlog."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from ascendjob_controller import logging as logs


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    buffer = io.StringIO()
    yield buffer
    logs.configure("json", "info", stream=io.StringIO())  # leave nothing pointing at buffer


def lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_structlog_lines_are_json_with_the_fields(stream: io.StringIO) -> None:
    logs.configure("json", "info", stream=stream)
    logs.get_logger("ascendjob_controller.test").info("reconcile_finished", duration=0.25)
    [line] = lines(stream)
    assert line["event"] == "reconcile_finished"
    assert line["level"] == "info"
    assert line["logger"] == "ascendjob_controller.test"
    assert line["duration"] == 0.25
    assert line["timestamp"].endswith("Z")
    assert "T" in line["timestamp"]
    assert list(line)[:4] == ["timestamp", "level", "logger", "event"]


def test_fields_any_encoder_would_refuse_are_still_written(stream: io.StringIO) -> None:
    logs.configure("json", "info", stream=stream)

    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    log = logs.get_logger("t")
    log.info("big", count=2**70, name="caf\u00e9", nan=float("nan"), thing=Opaque())
    log.info("keys", by_number={1: "a"})
    big, keys = lines(stream)
    assert (big["count"], big["name"], big["thing"]) == (2**70, "caf\u00e9", "<opaque>")
    assert big["nan"] is None or big["nan"] != big["nan"]  # null (orjson) or NaN (json)
    assert keys["by_number"] == {"1": "a"}


def test_stdlib_logging_goes_through_the_same_processors(stream: io.StringIO) -> None:
    logs.configure("json", "info", stream=stream)
    logging.getLogger("some.library").warning("disk %s is full", "sda")
    [line] = lines(stream)
    assert line == {
        "event": "disk sda is full",
        "level": "warning",
        "logger": "some.library",
        "timestamp": line["timestamp"],
    }


def test_stdlib_extra_fields_are_kept(stream: io.StringIO) -> None:
    logs.configure("json", "info", stream=stream)
    logging.getLogger("ascendjob_controller.kube.runner").info(
        "reconcile finished", extra={"key": "default/j1", "duration": 0.5}
    )
    [line] = lines(stream)
    assert (line["event"], line["key"], line["duration"]) == (
        "reconcile finished",
        "default/j1",
        0.5,
    )
    assert "message" not in line


def test_level_filters_both_worlds(stream: io.StringIO) -> None:
    logs.configure("json", "warning", stream=stream)
    logs.get_logger("a").info("hidden")
    logging.getLogger("b").info("hidden too")
    logs.get_logger("a").error("shown")
    assert [line["event"] for line in lines(stream)] == ["shown"]


def test_noisy_libraries_are_quiet_unless_debug(stream: io.StringIO) -> None:
    logs.configure("json", "info", stream=stream)
    logging.getLogger("urllib3.connectionpool").info("Starting new HTTP connection")
    assert lines(stream) == []
    logs.configure("json", "debug", stream=stream)
    logging.getLogger("urllib3.connectionpool").debug("Starting new HTTP connection")
    assert [line["event"] for line in lines(stream)] == ["Starting new HTTP connection"]


def test_bind_job_adds_namespace_name_uid(stream: io.StringIO) -> None:
    logs.configure("json", "info", stream=stream)
    job = {"metadata": {"namespace": "default", "name": "j1", "uid": "u-1", "labels": {}}}
    logs.bind_job(logs.get_logger("x"), job).info("job_created")
    [line] = lines(stream)
    assert (line["namespace"], line["name"], line["uid"]) == ("default", "j1", "u-1")


def test_job_fields_skip_what_is_missing() -> None:
    assert logs.job_fields({"metadata": {"name": "j"}}) == {"name": "j"}
    assert logs.job_fields({}) == {}


def test_reconfiguring_does_not_duplicate_lines(stream: io.StringIO) -> None:
    logs.configure("json", "info", stream=stream)
    logs.configure("json", "info", stream=stream)
    logs.get_logger("x").info("once")
    assert len(lines(stream)) == 1


def test_exceptions_are_structured_in_json(stream: io.StringIO) -> None:
    logs.configure("json", "info", stream=stream)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logs.get_logger("x").exception("reconcile_failed")
    [line] = lines(stream)
    assert line["event"] == "reconcile_failed"
    assert line["level"] == "error"
    assert "boom" in json.dumps(line["exception"])


def test_console_format_is_readable(stream: io.StringIO) -> None:
    logs.configure("console", "info", stream=stream)
    logs.get_logger("ascendjob_controller.x").info("job_created", name="j1")
    text = stream.getvalue()
    assert "job_created" in text
    assert "name=j1" in text
    assert not text.lstrip().startswith("{")


def test_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown log level"):
        logs.configure("json", "chatty", stream=io.StringIO())


def test_no_caller_thread_or_process_is_looked_up_for_a_line(stream: io.StringIO) -> None:
    """What no line prints is not computed: the caller's frame (a stack walk per line), the
    thread and process names. Seen on the records the handler gets: only the standard
    library's line makes one (ours never reach `logging`)."""
    logs.configure("json", "info", stream=stream)
    records: list[logging.LogRecord] = []
    [handler] = [h for h in logging.getLogger().handlers if h.get_name() == "ascendjob-controller"]
    keep = logging.Filter()
    keep.filter = lambda record: records.append(record) or True  # type: ignore[method-assign]
    handler.addFilter(keep)
    try:
        logs.get_logger("ascendjob_controller.test").info("reconciled", state="Running")
        logging.getLogger("ascendjob_controller.plain").info("from the standard library")
    finally:
        handler.removeFilter(keep)
    assert [line["event"] for line in lines(stream)] == ["reconciled", "from the standard library"]
    [record] = records
    assert record.name == "ascendjob_controller.plain"
    assert (record.funcName, record.lineno) == ("(unknown function)", 0)
    assert record.threadName is None and record.processName is None


def test_our_lines_are_rendered_once_and_never_become_records(
    stream: io.StringIO, mocker: Any
) -> None:
    """structlog renders its own lines and writes them to the handler's stream: no
    LogRecord, no copy of one, no second run of the chain. The libraries' lines are still
    formatted by the handler."""
    logs.configure("json", "info", stream=stream)
    made = mocker.spy(logging.Logger, "makeRecord")
    copies = mocker.spy(logging, "makeLogRecord")
    logs.get_logger("ascendjob_controller.t").info("ours", n=1)
    assert (made.call_count, copies.call_count) == (0, 0)
    logging.getLogger("some.library").info("theirs")
    assert (made.call_count, copies.call_count) == (1, 1)  # the record, ProcessorFormatter's copy
    ours, theirs = lines(stream)
    assert (ours["event"], ours["n"], theirs["event"]) == ("ours", 1, "theirs")


def test_lines_below_the_level_cost_no_processing(stream: io.StringIO, mocker: Any) -> None:
    """A debug line at level info reaches no processor (structlog's filtering logger makes
    the method a no-op), and is written once the level allows it."""
    head = mocker.spy(logs, "_head_fields")  # before configure, which puts it in the chain
    logs.configure("json", "info", stream=stream)
    log = logs.get_logger("ascendjob_controller.t")
    log.debug("no_op", n=1)
    assert head.call_count == 0 and lines(stream) == []
    logs.configure("json", "debug", stream=stream)
    log.debug("no_op", n=2)  # the same module-level logger follows the new level
    assert [(line["event"], line["level"], line["n"]) for line in lines(stream)] == [
        ("no_op", "debug", 2)
    ]


def test_lines_from_many_threads_never_interleave(stream: io.StringIO) -> None:
    """Ours and the libraries' lines share one stream and one lock: each line whole."""
    logs.configure("json", "info", stream=stream)

    def write(i: int) -> None:
        for n in range(200):
            logs.get_logger("ascendjob_controller.t").info("ours", thread=i, n=n, pad="x" * 300)
            logging.getLogger("some.library").info("theirs %d %d", i, n)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    written = lines(stream)  # json.loads of each line: a torn line would fail here
    assert len(written) == 4 * 200 * 2
    assert sum(line["event"] == "ours" for line in written) == 800


def test_a_failed_write_drops_the_line_and_never_raises() -> None:
    """A closed stdout (the pipe's reader gone) must not stop a reconcile."""
    closed = io.StringIO()
    logs.configure("json", "info", stream=closed)
    closed.close()
    try:
        logs.get_logger("ascendjob_controller.t").info("lost")
        logs.get_logger("ascendjob_controller.t").error("lost too")
    finally:
        logs.configure("json", "info", stream=io.StringIO())


def _fail_holding(secret: str) -> None:
    headers = {"Authorization": f"Bearer {secret}"}
    raise RuntimeError(f"request failed with {len(headers)} header")


@pytest.mark.parametrize("log_format", ["json", "console"])
def test_an_exceptions_frames_are_logged_without_their_locals(
    stream: io.StringIO, log_format: str
) -> None:
    """A local may hold a credential (the transport's Authorization header): the traceback
    keeps the frames, the type and the message, never the variables."""
    logs.configure(log_format, "info", stream=stream)
    secret = "tok-3f9a1c"
    try:
        _fail_holding(secret)
    except RuntimeError:
        logs.get_logger("x").exception("request_failed")
    text = stream.getvalue()
    assert secret not in text
    assert "request failed with 1 header" in text
    assert "_fail_holding" in text
    if log_format == "json":
        [line] = lines(stream)
        [exc] = line["exception"]
        assert exc["exc_type"] == "RuntimeError"
        assert all("locals" not in frame for frame in exc["frames"])
