#!/usr/bin/env python3
"""Reference app: synthesizes the reference stacks with no AWS account and no credentials.

Context:
  -c region=eu-west-1   deploy region of the reference stacks (default us-west-2)
  -c nag=true           apply the cdk-nag AwsSolutions pack; findings fail the synth
"""

import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk

from cdk_sagemaker_llm.stacks import LlamaInferenceComponentStack


def build_app(app: cdk.App) -> list[cdk.Stack]:
    """Add the reference stacks to ``app``; returns them."""
    region = app.node.try_get_context("region") or "us-west-2"
    return [
        LlamaInferenceComponentStack(
            app, "LlamaInferenceComponents", env=cdk.Environment(region=region)
        ),
    ]


def apply_nag(app: cdk.App) -> None:
    """Run the AwsSolutions rules over every stack at synth (cdk-nag 3 validation plugin)."""
    from cdk_nag import AwsSolutionsChecks

    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))


if __name__ == "__main__":
    app = cdk.App()
    build_app(app)
    if str(app.node.try_get_context("nag")).lower() == "true":
        apply_nag(app)
    app.synth()
