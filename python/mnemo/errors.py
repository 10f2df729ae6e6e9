"""Typed exceptions: one class per error code of the API.

Every failure of the API is `{"error": {"code", "message"}}` with a 4xx or
503 status (docs/reference/http-api.md); both modes raise the class of its
code, so `except mnemo.NotFound` works in-process and against a server.
"""

from __future__ import annotations

import json


class MnemoError(Exception):
    """A failed call: `code` is the API's stable code, `status` the HTTP status."""

    def __init__(self, message: str, *, code: str = "internal", status: int = 500) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, status={self.status}, message={self.message!r})"


class InvalidInput(MnemoError, ValueError):
    """The request was refused as malformed or invalid; nothing was written."""


class Unauthorized(MnemoError):
    """No key, a wrong key, or a key that does not cover the namespace."""


class NotFound(MnemoError, LookupError):
    """No such memory, session, entity or key."""


class Conflict(MnemoError):
    """The request conflicts with what is stored (code `conflict`)."""


class TooLarge(MnemoError, ValueError):
    """The request's body is over the server's limit."""


class ReadOnly(MnemoError):
    """The store cannot be written (a read-only file or mount)."""


class Unavailable(MnemoError):
    """A provider or the engine cannot answer now (503); retry later."""


class ServerError(MnemoError):
    """The store or the engine failed (`storage`, `internal`)."""


class Unreachable(MnemoError, ConnectionError):
    """Client mode: the server could not be reached."""


CLASSES: dict[str, type[MnemoError]] = {
    "malformed_json": InvalidInput,
    "invalid_input": InvalidInput,
    "invalid_request": InvalidInput,
    "unsupported_media_type": InvalidInput,
    "method_not_allowed": InvalidInput,
    "unauthorized": Unauthorized,
    "forbidden": Unauthorized,
    "not_found": NotFound,
    "conflict": Conflict,
    "payload_too_large": TooLarge,
    "read_only": ReadOnly,
    "unavailable": Unavailable,
    "storage": ServerError,
    "internal": ServerError,
}


def from_answer(status: int, body: bytes) -> MnemoError:
    """The exception an error answer stands for."""
    try:
        error = json.loads(body)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        code = "internal" if status >= 500 else "invalid_request"
        message = body.decode("utf-8", "replace").strip() or f"HTTP {status}"
    return CLASSES.get(code, MnemoError)(message, code=code, status=status)
