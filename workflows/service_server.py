"""Running the service: in this process until interrupted (`serve`), or on a background thread
(BackgroundServer, for tests and notebooks), with the connection timeouts of its settings."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI

from citescope.workflows.http_timeouts import h11_with_header_timeout
from citescope.workflows.service_http import configure_json_logging
from citescope.workflows.service_settings import ServiceSettings


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run the app in this process until interrupted (the `serve` command)."""
    configure_json_logging()
    uvicorn.run(app, host=host, port=port, log_config=None, **uvicorn_options(app))


def uvicorn_options(app: Any) -> dict[str, Any]:
    """uvicorn settings for the app: no access log of its own (AccessLog writes one), and the
    connection timeouts of its ServiceSettings (create_app keeps them on app.state; another ASGI
    app gets the defaults)."""
    settings = getattr(getattr(app, "state", None), "settings", None)
    settings = settings if isinstance(settings, ServiceSettings) else ServiceSettings()
    return {
        "access_log": False,
        "http": h11_with_header_timeout(settings.header_timeout_s),
        "timeout_keep_alive": settings.keep_alive_timeout_s,
    }


class BackgroundServer:
    """An ASGI app served by uvicorn on a daemon thread (tests, notebooks); port 0 = a free port."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0):
        self.host = host
        self._server = uvicorn.Server(
            uvicorn.Config(app, host=host, port=port, log_level="warning", ws="wsproto", **uvicorn_options(app))
        )
        self._thread = threading.Thread(target=self._server.run, name="uvicorn", daemon=True)

    def start(self, timeout_s: float = 30.0) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start on {self.host}")
            time.sleep(0.02)
        return self

    @property
    def port(self) -> int:
        return self._server.servers[0].sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
