"""Shared fixtures: one jsii kernel per session, fresh stacks per test, real template checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from cfnlint.api import ManualArgs, lint

PROJECT_ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = PROJECT_ROOT / "benchmarks"


def benchmark_module(name: str) -> Any:
    """Import ``benchmarks/<name>.py`` (the benchmark scripts are not a package) under ``name``,
    with ``benchmarks/`` on the path so its sibling imports resolve."""
    import importlib.util

    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


CDK_CONTEXT: dict[str, Any] = json.loads((PROJECT_ROOT / "cdk.json").read_text())["context"]
"""The feature flags of cdk.json, so tests synthesize what ``cdk synth`` does."""


def new_app() -> cdk.App:
    """A fresh app with the project's feature flags."""
    return cdk.App(context=CDK_CONTEXT)


def new_stack(region: str | None = "us-west-2", account: str | None = "123456789012") -> cdk.Stack:
    """A fresh stack in its own app; ``region=None`` makes it region-agnostic."""
    app = new_app()
    env = cdk.Environment(region=region, account=account) if region else None
    return cdk.Stack(app, "TestStack", env=env)


@pytest.fixture(autouse=True)
def api_contract(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every boto3 call a test makes (moto, Stubber, real clients) is validated against
    botocore's service model, enums included, before it is sent (``contracts.py``).
    Returns the ``service:Operation`` names called, in order."""
    import botocore.client
    from contracts import validate_operation

    calls: list[str] = []
    original = botocore.client.BaseClient._make_api_call

    def make_api_call(self: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
        model = self.meta.service_model
        validate_operation(model.operation_model(operation_name), api_params)
        calls.append(f"{model.service_name}:{operation_name}")
        return original(self, operation_name, api_params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", make_api_call)
    return calls


@pytest.fixture
def stack() -> cdk.Stack:
    """A fresh stack in us-west-2."""
    return new_stack()


def cfn_lint_findings(template: dict[str, Any], region: str = "us-west-2") -> list[str]:
    """cfn-lint's errors and warnings on ``template`` (informational findings ignored)."""
    matches = lint(json.dumps(template), config=ManualArgs(regions=[region]))
    return [
        f"{match.rule.id} {match.message} at {'/'.join(map(str, match.path))}"
        for match in matches
        if match.rule.id[0] in "EW"
    ]


def assert_cfn_lint_clean(stack: cdk.Stack) -> dict[str, Any]:
    """Synthesize ``stack``, fail on any cfn-lint error or warning, return the template."""
    template = Template.from_stack(stack).to_json()
    region = stack.region if not cdk.Token.is_unresolved(stack.region) else "us-east-1"
    findings = cfn_lint_findings(template, region)
    assert findings == [], "\n".join(findings)
    return template


@pytest.fixture
def lint_clean() -> Callable[[cdk.Stack], dict[str, Any]]:
    """``lint_clean(stack)``: synthesize, assert cfn-lint finds nothing, return the template."""
    return assert_cfn_lint_clean


def cloudformation_schema(resource_type: str, region: str = "us-east-1") -> dict[str, Any]:
    """CloudFormation's resource schema for ``resource_type`` as the installed cfn-lint ships it
    (the schema the tests lint templates against)."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    schema: dict[str, Any] = PROVIDER_SCHEMA_MANAGER.get_resource_schema(
        region, resource_type
    ).schema
    return schema


def role_policies(template: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(role logical id, policy document) of every identity policy on a role in ``template``:
    each ``AWS::IAM::Policy`` per role it is attached to (aws-cdk-lib roles' default policies)
    and each inline policy in a role's ``Policies`` (the library's execution roles)."""
    found = []
    for logical_id, resource in template["Resources"].items():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::IAM::Policy":
            for role in properties.get("Roles", []):
                found.append((role["Ref"] if isinstance(role, dict) else role, properties))
        elif resource["Type"] == "AWS::IAM::Role":
            found += [(logical_id, policy) for policy in properties.get("Policies", [])]
    return [(role, policy["PolicyDocument"]) for role, policy in found]


def role_statements(template: dict[str, Any], role_prefix: str = "") -> list[dict[str, Any]]:
    """Every statement of the policies on roles whose logical id starts with ``role_prefix``
    (all roles by default), separate or inline (``role_policies``)."""
    return [
        statement
        for role, document in role_policies(template)
        if role.startswith(role_prefix)
        for statement in document["Statement"]
    ]


def resources_of_type(template: dict[str, Any], resource_type: str) -> list[dict[str, Any]]:
    """The properties of every resource of ``resource_type`` in ``template``."""
    return [
        resource.get("Properties", {})
        for resource in template["Resources"].values()
        if resource["Type"] == resource_type
    ]


@pytest.fixture(scope="session")
def held_out() -> tuple[list[Any], list[Any]]:
    """Every measured row (``benchmarks/measurements/``) and its leave-one-source-out prediction
    (``profile_fitting.leave_one_source_out``: a refit per source, the source's bursts replayed
    through the scheduler simulation), computed once per session: minutes of CPU, which the
    conformal table's check and the quoted validation figures share."""
    fitting = benchmark_module("profile_fitting")
    rows, skipped = fitting.load_rows()
    assert not skipped, skipped
    return rows, fitting.leave_one_source_out(rows)


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation site: ``$CDK_SAGEMAKER_LLM_SITE`` when set (``scripts/test.sh`` builds
    it once with ``mkdocs build --strict`` and passes it on), else built here, once."""
    built = os.environ.get("CDK_SAGEMAKER_LLM_SITE")
    if built:
        root = Path(built).resolve()
        assert (root / "index.html").is_file(), f"CDK_SAGEMAKER_LLM_SITE={built} has no site"
        return root
    root = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(root)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    return root
