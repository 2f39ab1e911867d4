"""Command line: `run`, `local-cluster` and `demo` (design section 7).

This is the imperative shell: it turns argv and the environment into a `Config`, sets up
logging, and hands over. The heavy modules (the controller, the local cluster) are imported
lazily so `--help` is quick and a missing piece fails with a clear message, not a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import NoReturn

from ascendjob_controller import config as configuration

PROG = "ascendjob-controller"
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (`prog: error: ...`) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PROG}: error: {message}\n")


def _version() -> str:
    try:
        return metadata.version(PROG)
    except metadata.PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Kubernetes controller for AscendJob (mindxdl.gitee.com/v1).",
        epilog="Every flag of `run` and `demo` can also be set through the environment variable "
        "shown next to it; a flag wins over its variable.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="run the controller against a cluster (in a pod, or through a kubeconfig)",
        description="Run the AscendJob controller until SIGTERM or SIGINT.",
    )
    configuration.add_flags(run)

    lc = sub.add_parser("local-cluster", help="serve the embedded local Kubernetes API server")
    lc.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 picks a free one)")
    lc.add_argument("--kubeconfig", default="kubeconfig.local", help="where to write a kubeconfig")
    lc.add_argument(
        "--no-kubelet", action="store_true", help="do not simulate a kubelet running the pods"
    )

    demo = sub.add_parser(
        "demo",
        help="local cluster + controller + a sample job, showing its status (make run)",
        description="Start the embedded local cluster and the controller in this process, apply "
        "a sample AscendJob, print its status transitions, then keep serving until Ctrl-C. "
        "--kubeconfig names the kubeconfig the demo writes (default ./kubeconfig.local).",
    )
    configuration.add_flags(demo)
    demo.add_argument(
        "--sample",
        default=None,
        metavar="FILE",
        help="AscendJob manifest to apply (default manifests/samples/"
        "pytorch_multinodes_acjob_910b.yaml)",
    )
    demo.add_argument(
        "--exit-when-done",
        action="store_true",
        help="stop once the job has finished instead of serving until Ctrl-C (for scripts)",
    )
    return parser


def load_config(
    args: argparse.Namespace, env: Mapping[str, str], *, stdout_is_tty: bool
) -> configuration.Config:
    """The `Config` of a parsed `run`/`demo` command line; usage errors exit 2 in one line."""
    flags = {s.field: getattr(args, s.field, None) for s in configuration.SETTINGS}
    try:
        return configuration.build(flags, env, stdout_is_tty=stdout_is_tty)
    except configuration.ConfigError as err:
        sys.stderr.write(f"{PROG}: error: {err}\n")
        raise SystemExit(EXIT_USAGE) from None


def _present(module: str) -> bool:
    """Whether a lazily imported module exists; a module that exists but fails must still raise."""
    return importlib.util.find_spec(module) is not None


def _missing(what: str) -> int:
    sys.stderr.write(f"{PROG}: error: {what} is not part of this build yet\n")
    return 1


def _run(config: configuration.Config) -> int:
    from ascendjob_controller import logging as logs

    logs.configure(config.log_format, config.log_level)
    if not _present("ascendjob_controller.controller"):
        return _missing("the controller (ascendjob_controller.controller)")
    controller = importlib.import_module("ascendjob_controller.controller")
    result: int = controller.run(config)
    return result


def _demo(config: configuration.Config, sample: str | None, exit_when_done: bool) -> int:
    if not _present("ascendjob_controller.demo"):
        return _missing("the demo (ascendjob_controller.demo)")
    demo = importlib.import_module("ascendjob_controller.demo")
    result: int = demo.main(config, sample=sample, exit_when_done=exit_when_done)
    return result


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    environ = os.environ if env is None else env
    if args.command == "local-cluster":
        from ascendjob_controller.localcluster.main import serve_forever

        return serve_forever(
            port=args.port, kubeconfig=args.kubeconfig, kubelet=not args.no_kubelet
        )
    config = load_config(args, environ, stdout_is_tty=sys.stdout.isatty())
    if args.command == "run":
        return _run(config)
    if args.command == "demo":
        return _demo(config, args.sample, args.exit_when_done)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
