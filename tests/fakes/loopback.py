"""The lifecycle both fake model APIs share: a threaded HTTP server on 127.0.0.1, started and stopped
by the fake that owns it (directly or as a context manager)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self


class LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], api: Any) -> None:
        super().__init__(address, handler)
        self.api = api


class LoopbackFake:
    """Base of a fake API: subclasses set `handler` and `thread_name`, and call `_init_loopback(port)`."""

    handler: ClassVar[type[BaseHTTPRequestHandler]]
    thread_name: ClassVar[str] = "fake-api"
    poll_interval_s: ClassVar[float] = 0.05

    def _init_loopback(self, port: int) -> None:
        self._port = port
        self._server: LoopbackServer | None = None
        self._thread: threading.Thread | None = None
        self.stopping = threading.Event()

    def start(self) -> Self:
        self.stopping.clear()
        self._server = LoopbackServer(("127.0.0.1", self._port), self.handler, self)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": self.poll_interval_s},
                                        name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()
