"""A deadline for a request's headers, which uvicorn 0.54 does not have.

uvicorn closes a keep-alive connection that stays idle after a response (`timeout_keep_alive`) and
caps the size of incomplete headers (`h11_max_incomplete_event_size`), but a client that connects
and sends nothing, or part of a request line or of its headers, keeps its connection open for ever
(no timer runs until a first response is sent; the keep-alive timer is cancelled by any byte that
arrives). Enough of them use up the process's file descriptors. This protocol closes such a
connection `header_timeout_s` after it opened, or after the first bytes of a next request on a
keep-alive connection, unless the request's headers are complete by then. A body that does not
arrive is the ASGI app's to time out (service.BodySizeLimit answers 408).
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class HeaderTimeoutH11Protocol(H11Protocol):
    header_timeout_s: float = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._header_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:  # part of a request, or of the next one: its headers are due
            self._arm_header_timer()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:  # a whole request line and headers arrived
            self._cancel_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_overdue)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_overdue(self) -> None:
        self._header_timer = None
        # no request to answer (h11 cannot send a response before one), so the connection just ends
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.logger.info(
                "closing a connection whose request headers did not arrive within %g s", self.header_timeout_s
            )
            self.transport.close()


def h11_with_header_timeout(timeout_s: float) -> type[HeaderTimeoutH11Protocol]:
    """The protocol class for uvicorn's `http` setting, closing connections whose headers are
    not complete within timeout_s."""
    return type("H11ProtocolWithHeaderTimeout", (HeaderTimeoutH11Protocol,), {"header_timeout_s": float(timeout_s)})
