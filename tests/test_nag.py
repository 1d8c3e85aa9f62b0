"""cdk-nag's AwsSolutions pack over every reference stack: zero unacknowledged findings."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from conftest import CDK_CONTEXT

from app import apply_nag, build_app


def nag_app(outdir: Path) -> tuple[cdk.App, list[cdk.Stack]]:
    app = cdk.App(outdir=str(outdir), context=CDK_CONTEXT)
    stacks = build_app(app)
    apply_nag(app)
    return app, stacks


def test_reference_app_has_no_nag_findings(tmp_path: Path) -> None:
    app, _ = nag_app(tmp_path)
    app.synth()  # raises ValidationFailed on any unacknowledged finding


def test_the_pack_really_runs(tmp_path: Path) -> None:
    """Negative control: one wildcard policy added to the same app makes the synth fail."""
    app, stacks = nag_app(tmp_path)
    role = iam.Role(stacks[0], "Unscoped", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    role.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
    with pytest.raises(RuntimeError, match="AwsSolutions-IAM5"):
        app.synth()
