"""Synth cost: what a stack that uses no optional feature imports. Time is
measured in benchmarks/synth_time.py; this checks the cause deterministically: the core path
(a model, an inference-component endpoint, a component) loads the same aws-cdk-lib modules as
the plain L1 app (``aws_iam``, ``aws_sagemaker``), not the bindings of asynchronous inference
(S3, SNS, KMS), of CloudWatch or of Application Auto Scaling."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from conftest import PROJECT_ROOT, new_stack
from jsii._kernel.providers import process as jsii_process

from cdk_sagemaker_llm.constructs.validation import is_unresolved

LIBRARY_APP_PATH = PROJECT_ROOT / "benchmarks" / "synth" / "library_app.py"
CORE_APP = LIBRARY_APP_PATH.read_text()
_spec = importlib.util.spec_from_file_location("library_app", LIBRARY_APP_PATH)
assert _spec is not None and _spec.loader is not None
LIBRARY_APP = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(LIBRARY_APP)


def aws_cdk_modules_loaded(code: str) -> set[str]:
    probe = (
        "import sys, json\n"
        + code
        + "\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('aws_cdk.aws_') "
        "and not m.endswith('._private'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=PROJECT_ROOT,
        check=True,
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_core_path_loads_only_what_plain_l1_loads(tmp_path: object) -> None:
    code = CORE_APP.replace("sys.argv[1]", repr(str(tmp_path)))
    assert aws_cdk_modules_loaded(code) == {"aws_cdk.aws_iam", "aws_cdk.aws_sagemaker"}


def kernel_round_trips(monkeypatch: pytest.MonkeyPatch, build: Callable[[], object]) -> int:
    """How many requests ``build()`` sends to the jsii kernel (each a round trip to Node.js)."""
    sent = [0]
    send = jsii_process._NodeProcess.send

    def counting(self: Any, request: Any, response_type: Any) -> Any:
        sent[0] += 1
        return send(self, request, response_type)

    with monkeypatch.context() as patch:
        patch.setattr(jsii_process._NodeProcess, "send", counting)
        build()
    return sent[0]


def library_sets(sets: int) -> cdk.Stack:
    """The benchmark's library app (``benchmarks/synth/library_app.py``), unsynthesized."""
    stack = new_stack(account=None)
    LIBRARY_APP.add_sets(stack, sets)
    return stack


def test_each_set_costs_a_bounded_number_of_kernel_round_trips(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Per stack, the constructs ask the kernel once for what does not change (the stack, its
    # region, the log-group and repository ARNs, their rendering for cdk-nag, construct
    # paths), and answer literal token checks in Python; the execution roles' log and image
    # pull statements are built once per stack and added to each role's inline policy in one
    # call. A set cost 96 round trips before (the L1 app's costs 11), then 42, then 31, then 24
    # (ARNs read on first use, component names not read back nor asked of Names, one
    # acknowledgment call per role, a model's role created with its image's pull statements);
    # 22 now (no plan metadata that the template's image URI and HF_MODEL_ID already say):
    # what is left is creating the constructs, resources and roles, one acknowledgment per
    # role (its node and one metadata entry), names and the Size API.
    one = kernel_round_trips(monkeypatch, lambda: library_sets(1))
    three = kernel_round_trips(monkeypatch, lambda: library_sets(3))
    assert (three - one) / 2 <= 22


def test_literal_token_checks_ask_no_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    literals = ["ml.g5.2xlarge", "", 4, 2.5, True, None, ["a", "b"], -1.5e3]
    asked = kernel_round_trips(monkeypatch, lambda: [is_unresolved(v) for v in literals])
    assert asked == 0
    assert not any(is_unresolved(value) for value in literals)
    stack = new_stack()
    number = cdk.CfnParameter(stack, "Count", type="Number")
    names = cdk.CfnParameter(stack, "Names", type="CommaDelimitedList")
    tokens = [cdk.Aws.REGION, number.value_as_number, names.value_as_list]
    assert all(is_unresolved(token) for token in tokens)
    assert is_unresolved(cdk.Token.as_any("x"))


def test_unique_resource_names_match_aws_cdk_lib() -> None:
    # Default inference component names are computed in Python from the cached path (no round
    # trip); they must be aws-cdk-lib's Names.unique_resource_name, character for character.
    from constructs import Construct

    from cdk_sagemaker_llm.constructs.synth_cache import unique_resource_name

    app = cdk.App()
    stacks = [
        cdk.Stack(app, "Library"),
        cdk.Stack(cdk.Stage(app, "Prod"), "Inner", stack_name="named-stack"),
        cdk.Stack(app, "S" * 70),
    ]
    paths = [
        ["Endpoint", "Component"],
        ["Default"],
        ["A", "Resource"],
        ["Endpoint", "Endpoint", "Point"],
        ["x" * 80, "y-y_y.z", "Component"],
        ["Ünï", "Default", "Ab"],
    ]
    nested = cdk.NestedStack(stacks[0], "Nested")
    for stack in [*stacks, nested]:
        for ids in paths:
            scope: Construct = stack
            for part in ids:
                child = scope.node.try_find_child(part)
                scope = child if isinstance(child, Construct) else Construct(scope, part)
            for max_length, separator in [(63, "-"), (64, ""), (20, "-")]:
                expected = cdk.Names.unique_resource_name(
                    scope, max_length=max_length, separator=separator
                )
                got = unique_resource_name(scope, max_length=max_length, separator=separator)
                assert got == expected, scope.node.path
