"""What SageMaker says about an optimization job that does not exist (a malformed event is
``event_checks.EventError``)."""

from __future__ import annotations

from ..runtime_support import (
    error_code,
)


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
