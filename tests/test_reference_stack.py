"""The reference app: snapshot of every stack, cfn-lint clean, deterministic output."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from conftest import assert_cfn_lint_clean, new_app

from app import build_app
from cdk_sagemaker_llm.snapshot import normalized_template


@pytest.fixture(scope="module")
def reference_stacks() -> list[cdk.Stack]:
    return build_app(new_app())


def test_reference_stacks_are_cfn_lint_clean(reference_stacks: list[cdk.Stack]) -> None:
    for stack in reference_stacks:
        assert_cfn_lint_clean(stack)


def test_reference_stacks_match_snapshot(reference_stacks: list[cdk.Stack], snapshot: Any) -> None:
    for stack in reference_stacks:
        assert normalized_template(stack) == snapshot(name=stack.stack_name)


def test_synthesis_is_deterministic(reference_stacks: list[cdk.Stack]) -> None:
    again = build_app(new_app())
    for first, second in zip(reference_stacks, again, strict=True):
        assert json.dumps(normalized_template(first), sort_keys=True) == json.dumps(
            normalized_template(second), sort_keys=True
        )
