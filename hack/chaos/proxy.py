"""`BlackholeProxy` (tests/integration/kube/helpers.py) with a connection teardown that loses
nothing, for the replicas of the chaos run.

Why not the proxy as it is: when one direction of a proxied connection ends (the API server
closes a watch it cut, a client drops a connection), its pump thread `close()`s both sockets
while the other pump is still using them. A bare close() neither wakes the other pump nor
tells the peer, and it frees the descriptor number for the next accepted connection while the
other pump may be about to read from it. Under the chaos run's churn (every watch cut every
2 s) that loses requests: the client's next request on its pooled connection is read by a
stale pump, or lands on a socket nobody forwards, and the client waits for an answer that
never comes until its read timeout (about 40 s for a watch). A stress run (8 clients,
watches cut every 0.3 s, 40 s): 45 of 355 requests hung with the original, 0 of 1,064 with
this one. A lost request is a fault the run does not mean to inject, so it is fixed here
instead of measured; the owner of helpers.py should get the same fix.

The fix: an ending pump shuts both sockets down (which wakes the other pump and tells both
peers), and only the second pump of a connection to end closes the sockets, so no thread ever
touches a descriptor that may already belong to another connection. Blackholed connections
are left alone, as before: they must stay silently open.

`reset()` here is a real reset: SO_LINGER 0 and a read shutdown (which wakes the pumps without
sending a FIN), so that the last pump's close() sends RST to both peers. The client sees
ECONNRESET in the middle of whatever it was doing, as behind a load balancer that dropped the
flow; the original sent FIN, which a client reads as an orderly end.
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
        self._ended: dict[threading.Event, int] = {}  # per connection: pumps that ended
        self._resetting: set[threading.Event] = set()  # connections reset(), not yet closed
        self._ended_lock = threading.Lock()
        super().__init__(upstream_port)

    def _pump(self, src: Any, dst: Any, dead: threading.Event) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if dead.is_set():
                    continue  # blackholed: swallow, the peer never hears of it
                dst.sendall(data)
        except OSError:
            pass
        finally:
            if not dead.is_set():
                with self._ended_lock:
                    resetting = dead in self._resetting
                _shutdown(src, dst, how=socket.SHUT_RD if resetting else socket.SHUT_RDWR)
                self._last_out_closes(src, dst, dead)

    def _last_out_closes(self, src: Any, dst: Any, dead: threading.Event) -> None:
        with self._ended_lock:
            ended = self._ended.get(dead, 0) + 1
            self._ended[dead] = ended
            if ended < 2:
                return
            del self._ended[dead]
            self._resetting.discard(dead)
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.close()

    def reset(self) -> int:
        """Reset every open connection (RST to both peers, mid-stream); returns how many."""
        with self._lock:
            conns, self._conns = self._conns, []
        for client, upstream, dead in conns:
            with self._ended_lock:
                self._resetting.add(dead)
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
            _shutdown(client, upstream, how=socket.SHUT_RD)
        return len(conns)
