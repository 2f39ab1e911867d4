"""Command line: `run`, `local-cluster` and `demo` (design section 7)."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ascendjob-controller",
        description="Kubernetes controller for AscendJob (mindxdl.gitee.com/v1).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    lc = sub.add_parser("local-cluster", help="serve the embedded local Kubernetes API server")
    lc.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 picks a free one)")
    lc.add_argument("--kubeconfig", default="kubeconfig.local", help="where to write a kubeconfig")
    lc.add_argument(
        "--no-kubelet", action="store_true", help="do not simulate a kubelet running the pods"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "local-cluster":
        from ascendjob_controller.localcluster.main import serve_forever

        return serve_forever(port=args.port, kubeconfig=args.kubeconfig, kubelet=not args.no_kubelet)
    return 2


if __name__ == "__main__":
    sys.exit(main())
