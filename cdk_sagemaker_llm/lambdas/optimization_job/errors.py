"""Errors of ``OptimizationJob``'s handlers: a malformed event, and what SageMaker says
about a job that does not exist."""

from __future__ import annotations

from ..runtime_support import (
    HandlerError,
    error_code,
)


class InvalidEvent(HandlerError):
    """An event or property that fails validation; its message names the field."""


def error_message(error: BaseException) -> str:
    """The service's message of a ``ClientError`` (empty for anything else)."""
    response = getattr(error, "response", None)
    if not isinstance(response, dict):
        return ""
    return str(response.get("Error", {}).get("Message", ""))


def is_absent(error: BaseException) -> bool:
    """SageMaker's answer about a job that does not exist."""
    code = error_code(error)
    message = error_message(error).lower()
    return code == "ResourceNotFound" or (
        code == "ValidationException" and ("not exist" in message or "not found" in message)
    )
