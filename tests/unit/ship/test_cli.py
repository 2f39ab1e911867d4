"""The CLI hands a built Config to the controller and degrades clearly when a piece is missing."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from ascendjob_controller import cli
from ascendjob_controller import config as cfg


def fake_module(monkeypatch: pytest.MonkeyPatch, name: str, **attrs: Any) -> None:
    module = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(cli, "_present", lambda _: True)


def test_run_passes_the_config_and_returns_its_exit_code(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[cfg.Config] = []

    def run(config: cfg.Config) -> int:
        seen.append(config)
        return 7

    fake_module(monkeypatch, "ascendjob_controller.controller", run=run)
    monkeypatch.setattr("ascendjob_controller.logging.configure", lambda *a, **k: None)
    code = cli.main(["run", "--workers", "3"], env={"ASCENDJOB_LEADER_ELECT": "true"})
    assert code == 7
    [config] = seen
    assert (config.workers, config.leader_elect) == (3, True)


def test_demo_passes_the_config_and_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[cfg.Config, str | None, bool]] = []

    def main(config: cfg.Config, sample: str | None = None, exit_when_done: bool = False) -> int:
        seen.append((config, sample, exit_when_done))
        return 0

    fake_module(monkeypatch, "ascendjob_controller.demo", main=main)
    argv = ["demo", "--sample", "x.yaml", "--log-level", "debug", "--exit-when-done"]
    assert cli.main(argv, env={}) == 0
    [(config, sample, exit_when_done)] = seen
    assert (config.log_level, sample, exit_when_done) == ("debug", "x.yaml", True)


def test_missing_controller_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "_present", lambda _: False)
    monkeypatch.setattr("ascendjob_controller.logging.configure", lambda *a, **k: None)
    assert cli.main(["run"], env={}) == 1
    err = capsys.readouterr().err
    assert err == (
        "ascendjob-controller: error: the controller (ascendjob_controller.controller) "
        "is not part of this build yet\n"
    )


def test_a_command_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main([], env={})
    assert info.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1
