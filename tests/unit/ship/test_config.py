"""Config: flags, environment twins, precedence, defaults and one-line usage errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ascendjob_controller import cli
from ascendjob_controller import config as cfg


def build(argv: list[str], env: dict[str, str] | None = None, **kw: Any) -> cfg.Config:
    args = cli.build_parser().parse_args(["run", *argv])
    flags = {s.field: getattr(args, s.field) for s in cfg.SETTINGS}
    kw.setdefault("namespace_file", Path("/nonexistent/namespace"))
    return cfg.build(flags, env or {}, **kw)


def test_defaults_match_design_section_7() -> None:
    config = build([])
    assert config == cfg.Config(
        kubeconfig=None,
        namespaces=(),
        workers=4,
        metrics_bind_address=":8080",
        health_probe_bind_address=":8081",
        leader_elect=False,
        leader_election_namespace="ascendjob-system",
        leader_election_id="ascendjob-controller-leader",
        log_format="json",
        log_level="info",
        kube_api_qps=20.0,
        kube_api_burst=30,
        graceful_shutdown_timeout=30.0,
        enable_gang_scheduling=True,
    )


def test_every_flag_is_parsed() -> None:
    config = build(
        [
            "--kubeconfig", "/tmp/kc",
            "--namespace", "team-a", "--namespace", "team-b",
            "--workers", "8",
            "--metrics-bind-address", "127.0.0.1:9090",
            "--health-probe-bind-address", "[::1]:9091",
            "--leader-elect",
            "--leader-election-namespace", "ops",
            "--leader-election-id", "my-lease",
            "--leader-election-lease-duration", "4s",
            "--leader-election-renew-deadline", "3s",
            "--leader-election-retry-period", "500ms",
            "--log-format", "console",
            "--log-level", "DEBUG",
            "--kube-api-qps", "50.5",
            "--kube-api-burst", "100",
            "--graceful-shutdown-timeout", "1m30s",
            "--status-batch-period", "250ms",
            "--enable-gang-scheduling=false",
        ]
    )  # fmt: skip
    assert config.kubeconfig == "/tmp/kc"
    assert config.namespaces == ("team-a", "team-b")
    assert config.workers == 8
    assert config.metrics_bind_address == "127.0.0.1:9090"
    assert config.health_probe_bind_address == "[::1]:9091"
    assert config.leader_elect is True
    assert config.leader_election_namespace == "ops"
    assert config.leader_election_id == "my-lease"
    assert (config.leader_election_lease_duration, config.leader_election_renew_deadline) == (4, 3)
    assert config.leader_election_retry_period == 0.5
    assert config.log_format == "console"
    assert config.log_level == "debug"
    assert config.kube_api_qps == 50.5
    assert config.kube_api_burst == 100
    assert config.graceful_shutdown_timeout == 90.0
    assert config.status_batch_period == 0.25
    assert config.enable_gang_scheduling is False


def test_every_setting_has_an_env_twin_named_after_its_flag() -> None:
    for setting in cfg.SETTINGS:
        assert (
            setting.env == "ASCENDJOB_" + setting.flag.removeprefix("--").replace("-", "_").upper()
        )
    assert {s.field for s in cfg.SETTINGS} == {f for f in cfg.Config.__dataclass_fields__}


def test_env_twins_are_read() -> None:
    env = {
        "ASCENDJOB_WORKERS": "7",
        "ASCENDJOB_NAMESPACE": "a, b,,a",
        "ASCENDJOB_LEADER_ELECT": "true",
        "ASCENDJOB_LOG_LEVEL": "warning",
        "ASCENDJOB_GRACEFUL_SHUTDOWN_TIMEOUT": "5",
        "ASCENDJOB_ENABLE_GANG_SCHEDULING": "0",
        "ASCENDJOB_METRICS_BIND_ADDRESS": "0",
    }
    config = build([], env)
    assert config.workers == 7
    assert config.namespaces == ("a", "b")
    assert config.leader_elect is True
    assert config.log_level == "warning"
    assert config.graceful_shutdown_timeout == 5.0
    assert config.enable_gang_scheduling is False
    assert config.metrics_bind_address == "0"


def test_flags_override_env() -> None:
    env = {"ASCENDJOB_WORKERS": "7", "ASCENDJOB_NAMESPACE": "a,b", "ASCENDJOB_LEADER_ELECT": "1"}
    config = build(["--workers", "2", "--namespace", "c", "--leader-elect=false"], env)
    assert (config.workers, config.namespaces, config.leader_elect) == (2, ("c",), False)


def test_empty_env_value_means_unset() -> None:
    assert build([], {"ASCENDJOB_WORKERS": ""}).workers == 4


def test_log_format_follows_the_terminal_unless_set() -> None:
    assert build([], stdout_is_tty=True).log_format == "console"
    assert build([], stdout_is_tty=False).log_format == "json"
    assert build(["--log-format", "json"], stdout_is_tty=True).log_format == "json"


def test_leader_election_namespace_defaults_to_the_pods_namespace(tmp_path: Path) -> None:
    ns_file = tmp_path / "namespace"
    ns_file.write_text("ml-platform\n")
    assert build([], namespace_file=ns_file).leader_election_namespace == "ml-platform"
    assert build([]).leader_election_namespace == "ascendjob-system"
    env = {"ASCENDJOB_LEADER_ELECTION_NAMESPACE": "other"}
    assert build([], env, namespace_file=ns_file).leader_election_namespace == "other"


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--workers", "0"], {}, "--workers: must be a positive integer"),
        (["--workers", "two"], {}, "--workers: must be a positive integer"),
        ([], {"ASCENDJOB_WORKERS": "-1"}, "ASCENDJOB_WORKERS: must be a positive integer"),
        (["--kube-api-qps", "0"], {}, "--kube-api-qps: must be a positive number"),
        (["--kube-api-qps", "nan"], {}, "--kube-api-qps: must be a positive number"),
        (["--kube-api-burst", "1.5"], {}, "--kube-api-burst: must be a positive integer"),
        (["--log-format", "xml"], {}, "--log-format: must be one of json, console"),
        (["--log-level", "loud"], {}, "--log-level: must be one of"),
        (["--leader-elect=maybe"], {}, "--leader-elect: must be true or false"),
        (["--graceful-shutdown-timeout", "10x"], {}, "--graceful-shutdown-timeout: must be a"),
        (["--graceful-shutdown-timeout", "-1"], {}, "--graceful-shutdown-timeout: must be a"),
        (["--metrics-bind-address", "8080"], {}, "--metrics-bind-address: must be host:port"),
        (["--health-probe-bind-address", ":99999"], {}, "--health-probe-bind-address: must be"),
        (["--namespace", "Team_A"], {}, "--namespace: 'Team_A' is not a valid namespace name"),
        (["--leader-election-id", " "], {}, "--leader-election-id: must not be empty"),
        (
            ["--leader-election-lease-duration", "5s", "--leader-election-renew-deadline", "5s"],
            {},
            "--leader-election-renew-deadline: must be less than",
        ),
        (
            ["--leader-election-retry-period", "10s"],
            {},
            "--leader-election-retry-period: must be less than",
        ),
    ],
)
def test_bad_values_name_their_source(argv: list[str], env: dict[str, str], message: str) -> None:
    with pytest.raises(cfg.ConfigError) as info:
        build(argv, env)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30", 30.0), ("30s", 30.0), ("1m30s", 90.0), ("500ms", 0.5), ("1h", 3600.0), ("0", 0.0)],
)
def test_durations(text: str, seconds: float) -> None:
    assert cfg.parse_duration(text) == seconds


def test_split_bind_address() -> None:
    assert cfg.split_bind_address(":8080") == ("", 8080)
    assert cfg.split_bind_address("127.0.0.1:0") == ("127.0.0.1", 0)
    assert cfg.split_bind_address("[::1]:9") == ("::1", 9)
    assert cfg.split_bind_address("0") is None


def test_config_is_frozen() -> None:
    config = cfg.Config()
    with pytest.raises(AttributeError):
        config.workers = 3  # type: ignore[misc]


def run_cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ascendjob_controller", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_bad_flag_exits_2_with_one_line() -> None:
    out = run_cli("run", "--workers", "0")
    assert out.returncode == 2
    assert out.stderr == "ascendjob-controller: error: --workers: must be a positive integer\n"
    assert out.stdout == ""


def test_bad_env_value_exits_2_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    env = dict(os.environ, ASCENDJOB_KUBE_API_BURST="lots")
    out = run_cli("run", env=env)
    assert out.returncode == 2
    assert out.stderr == (
        "ascendjob-controller: error: ASCENDJOB_KUBE_API_BURST: must be a positive integer\n"
    )


def test_unknown_flag_exits_2_with_one_line() -> None:
    out = run_cli("run", "--no-such-flag")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1
    assert "unrecognized arguments: --no-such-flag" in out.stderr


def test_help_lists_every_flag_with_its_env_twin() -> None:
    out = run_cli("run", "--help")
    assert out.returncode == 0
    text = " ".join(out.stdout.split())
    for setting in cfg.SETTINGS:
        assert setting.flag in text
        assert setting.env in text


def test_top_level_help_names_the_subcommands() -> None:
    out = run_cli("--help")
    assert out.returncode == 0
    for command in ("run", "local-cluster", "demo"):
        assert command in out.stdout


def test_the_status_batch_period_reaches_the_plan_options() -> None:
    from ascendjob_controller.controller import _options

    def batch(*flags: str) -> float:
        config = build([*flags, "--enable-gang-scheduling=false"], {})
        # Gang scheduling off: the client is never asked whether PodGroups are served.
        return _options(config, client=None).plan_options.status_batch_seconds  # type: ignore[arg-type]

    assert batch("--status-batch-period", "3s") == 3.0
    assert batch() == 1.0
    assert batch("--status-batch-period", "0") == 0.0


def test_the_pod_batch_period_reaches_the_controller_options() -> None:
    from ascendjob_controller.controller import _options

    def period(*flags: str) -> float:
        config = build([*flags, "--enable-gang-scheduling=false"], {})
        return _options(config, client=None).pod_batch_seconds  # type: ignore[arg-type]

    assert period() == 0.1
    assert period("--pod-batch-period", "1s") == 1.0
    assert period("--pod-batch-period", "0") == 0.0
    env = build(["--enable-gang-scheduling=false"], {"ASCENDJOB_POD_BATCH_PERIOD": "500ms"})
    assert env.pod_batch_period == 0.5
