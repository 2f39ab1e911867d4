"""A plain-HTTP front for a real kube-apiserver, for `bench_peers --backend real`.

The counting proxy (proxy.py) relays plain TCP and each contender's kubeconfig carries no
credentials, as on the local cluster. A real kube-apiserver serves only HTTPS and wants a
client certificate, so on the real backend the proxies and the bench's own driver reach it
through this bridge: it listens on plain TCP and, for each connection, opens one TLS
connection upstream with the cluster's admin certificate and passes the bytes on, both ways,
unchanged. Nothing is parsed, so it adds no behaviour of its own; its CPU is the cost of TLS
and of one more hop, reported with the bed's.

One asyncio loop serves every connection. An SSL object must not be read and written from two
threads at once, which rules out proxy.py's two threads per connection; in one loop each
connection's TLS state is only ever touched by that loop.

    python -m hack.peers.tlsbridge --upstream https://127.0.0.1:6443 \\
        --ca pki/ca.crt --cert pki/admin.crt --key pki/admin.key

prints `ready http://127.0.0.1:<port>` once it listens, and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ssl
import sys
from urllib.parse import urlsplit

_CHUNK = 65536


def client_context(ca: str, cert: str, key: str) -> ssl.SSLContext:
    """TLS towards the API server: its CA verified, our client certificate presented."""
    context = ssl.create_default_context(cafile=ca)
    context.load_cert_chain(cert, key)
    return context


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Pass bytes from `reader` to `writer` until the end of the stream, then close `writer`
    (the other side learns the end as the API server or the client meant it)."""
    try:
        while chunk := await reader.read(_CHUNK):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass  # either end went away: closing the other is all there is to do
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            await writer.wait_closed()


class Bridge:
    """Relays every accepted connection to `upstream` over TLS."""

    def __init__(self, upstream: str, context: ssl.SSLContext) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError(f"upstream must be an https URL, not {upstream!r}")
        self.host = parts.hostname
        self.port = parts.port or 443
        self.context = context

    async def serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(
                self.host, self.port, ssl=self.context, server_hostname=self.host
            )
        except (OSError, ssl.SSLError) as err:
            print(f"tlsbridge: upstream refused: {err}", file=sys.stderr, flush=True)
            client_w.close()
            return
        await asyncio.gather(pump(client_r, up_w), pump(up_r, client_w))


async def _main(args: argparse.Namespace) -> None:
    bridge = Bridge(args.upstream, client_context(args.ca, args.cert, args.key))
    server = await asyncio.start_server(bridge.serve, "127.0.0.1", args.port)
    port = server.sockets[0].getsockname()[1]
    print(f"ready http://127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the API server's https URL")
    parser.add_argument("--ca", required=True, help="the CA that signed its certificate")
    parser.add_argument("--cert", required=True, help="our client certificate")
    parser.add_argument("--key", required=True, help="its key")
    parser.add_argument("--port", type=int, default=0, help="where to listen (0: any free)")
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
