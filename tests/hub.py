"""The Hugging Face token secret a test passes for a gated Hub model, written as a user would:
an existing Secrets Manager secret imported by name."""

from __future__ import annotations

from aws_cdk import App, Stack
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

TOKEN_SECRET_NAME = "hugging-face-token"
"""The secret's name in these tests."""

_SHARED = Stack(App(), "HubToken")
"""Where a token imported before any stack exists lives (an import creates no resource: its
ARN is built from pseudo parameters, so any stack may use it)."""


def hub_token(scope: Construct | None = None) -> secretsmanager.ISecret:
    """The token secret imported into ``scope``'s stack (once per stack), or into a shared
    stack when the test builds the source before its stack."""
    stack = Stack.of(scope) if scope is not None else _SHARED
    found = stack.node.try_find_child("HuggingFaceToken")
    if found is not None:
        return found  # type: ignore[return-value]  # the import below, made earlier
    return secretsmanager.Secret.from_secret_name_v2(stack, "HuggingFaceToken", TOKEN_SECRET_NAME)
