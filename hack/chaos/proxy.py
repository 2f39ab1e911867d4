"""`BlackholeProxy` (tests/integration/kube/helpers.py) with a real reset, for the replicas
of the chaos run.

The lossless teardown this run needed (an ending pump shuts both sockets down; only the
second pump of a connection closes them, so no descriptor is touched after reuse) now lives
in `BlackholeProxy` itself. What stays here is `reset()` as a load balancer dropping a flow
does it: SO_LINGER 0 and a read shutdown (which wakes the pumps without sending a FIN), so the
last pump's close() sends RST to both peers and the client sees ECONNRESET mid-stream. The
base proxy's reset sends FIN, which a client reads as an orderly end.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from typing import Any

from tests.integration.kube.helpers import BlackholeProxy

LINGER_RESET = struct.pack("ii", 1, 0)  # on, 0 s: close() sends RST


def _shutdown(*socks: Any, how: int = socket.SHUT_RDWR) -> None:
    for sock in socks:
        with contextlib.suppress(OSError):
            sock.shutdown(how)


class ChaosProxy(BlackholeProxy):
    def __init__(self, upstream_port: int) -> None:
        self._resetting: set[threading.Event] = set()  # connections reset(), not yet closed
        self._reset_lock = threading.Lock()
        super().__init__(upstream_port)

    def _shutdown_how(self, dead: threading.Event) -> int:
        # A reset connection gets only a read shutdown: no FIN, so its close() sends RST.
        with self._reset_lock:
            return socket.SHUT_RD if dead in self._resetting else socket.SHUT_RDWR

    def _connection_closed(self, dead: threading.Event) -> None:
        with self._reset_lock:
            self._resetting.discard(dead)

    def reset(self) -> int:
        """Reset every open connection (RST to both peers, mid-stream); returns how many."""
        with self._lock:
            conns, self._conns = self._conns, []
        for client, upstream, dead in conns:
            with self._reset_lock:
                self._resetting.add(dead)
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
            _shutdown(client, upstream, how=socket.SHUT_RD)
        return len(conns)
