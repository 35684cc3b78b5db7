"""A real HTTP/1.1 upstream (a thread per connection) that meets a reused keep-alive connection the way a
server that closed it for idleness does: the first request on each connection is answered with
``connection: keep-alive`` and then the next request on it is met by a reset (RST). uvicorn, vLLM's
server, closes idle connections after 5 s and httpx keeps them 5 s too, so a client can reuse one the
instant it is closed; the differential run saw that once (a tap 502 ``ReadError``).

Used from a test's own thread or event loop alike: the server runs in its own threads."""

from __future__ import annotations

import re
import socket
import socketserver
import struct
import threading

RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST


class ResetsReusedConnections(socketserver.ThreadingTCPServer):
    """``body``: the JSON each answered request gets (200). ``second``: what a connection's second request
    meets: ``"reset"`` (RST before any byte of an answer) or ``"headers"`` (a 200 status line and headers
    promising 5000 bytes, one byte, then RST). ``first="reset"`` resets every connection at its first
    request instead. ``seen`` lists ``(path, outcome)`` per request; ``connections`` counts accepted
    connections; ``base_url`` is ``http://127.0.0.1:<port>``. A context manager: serves on enter,
    shuts down on exit."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, body: bytes, second: str = "reset", first: str = "answer") -> None:
        self.body, self.second, self.first = body, second, first
        self.seen: list[tuple[str, str]] = []
        self.connections = 0
        super().__init__(("127.0.0.1", 0), _Handler)
        self.base_url = "http://127.0.0.1:%d" % self.server_address[1]

    def __enter__(self) -> "ResetsReusedConnections":
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


class _Handler(socketserver.BaseRequestHandler):
    server: ResetsReusedConnections

    def _read_request(self, buffer: bytes) -> tuple[str, bytes] | None:
        """``(path, bytes past this request)``, or ``None`` when the client closed first."""
        while b"\r\n\r\n" not in buffer:
            chunk = self.request.recv(65536)
            if not chunk:
                return None
            buffer += chunk
        head, _, rest = buffer.partition(b"\r\n\r\n")
        found = re.search(rb"(?im)^content-length: *(\d+)", head)
        length = int(found.group(1)) if found else 0
        while len(rest) < length:
            rest += self.request.recv(65536)
        return head.split(b" ")[1].decode(), rest[length:]

    def _reset(self) -> None:
        self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET)

    def handle(self) -> None:
        server = self.server
        server.connections += 1
        first = self._read_request(b"")
        if first is None:
            return
        path, leftover = first
        if server.first == "reset":
            server.seen.append((path, "reset"))
            return self._reset()
        self.request.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: keep-alive\r\n"
                             b"content-length: %d\r\n\r\n%s" % (len(server.body), server.body))
        server.seen.append((path, "answered"))
        second = self._read_request(leftover)
        if second is None:
            return
        server.seen.append((second[0], server.second))
        if server.second == "headers":
            self.request.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 5000\r\n\r\n{")
        self._reset()
