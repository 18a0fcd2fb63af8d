"""ASGI middleware: request body size limits and security headers on every response."""

from __future__ import annotations

import json
from typing import Any

from trainsizer.web.errors import ErrorBody, ErrorDetail

Scope = dict[str, Any]

# Everything the pages load comes from this server; inline styles and scripts are the report's own
# (self-contained HTML). connect-src 'self' means no page can send data anywhere else.
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
       "script-src 'self' 'unsafe-inline'; connect-src 'self'; frame-src 'self'; frame-ancestors 'self'; "
       "form-action 'self'; base-uri 'none'; object-src 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"SAMEORIGIN"),
]


class _TooLarge(Exception):
    pass


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value
    return None


class LimitsMiddleware:
    """413 for bodies over the limit (multipart uploads have their own, larger limit), counted while
    streaming so a missing or false Content-Length cannot get past it; security headers on responses."""

    def __init__(self, app: Any, max_json_bytes: int, max_upload_bytes: int) -> None:
        self.app = app
        self.max_json_bytes = max_json_bytes
        self.max_upload_bytes = max_upload_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ctype = (_header(scope, b"content-type") or b"").lower()
        limit = self.max_upload_bytes if ctype.startswith(b"multipart/") else self.max_json_bytes
        started = False

        async def send_with_headers(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = list(message.get("headers", [])) + SECURITY_HEADERS
            await send(message)

        length = _header(scope, b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await self._refuse(send_with_headers, int(length), limit)
            return
        received = 0

        async def counted_receive() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, counted_receive, send_with_headers)
        except _TooLarge:
            if not started:
                await self._refuse(send_with_headers, received, limit)

    @staticmethod
    async def _refuse(send: Any, size: int, limit: int) -> None:
        detail = ErrorDetail(kind="limit", field="body",
                             message=f"body: {size} bytes or more is larger than this server's limit of "
                                     f"{limit} bytes")
        body = json.dumps(ErrorBody(error=detail).model_dump(mode="json")).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
