"""Scale: the resources each construct emits, and a stack of 100 model +
endpoint + component sets under CloudFormation's 500-resource limit with shared execution
roles (docs/guides/models-and-endpoints.md, "Many models in one stack")."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import aws_cdk as cdk
from aws_cdk import Size
from conftest import CDK_CONTEXT, role_policies
from hub import hub_token

from cdk_sagemaker_llm import (
    ComponentModel,
    ContainerImage,
    CopyResources,
    InferenceComponentEndpoint,
    InstanceType,
    LmiOptions,
    Model,
    ModelSource,
)

CLOUDFORMATION_RESOURCE_LIMIT = 500
"""Resources per stack (CloudFormation quotas)."""
IAM_INLINE_POLICY_LIMIT = 10_240
"""Characters of all inline policies of one role together (IAM quotas, "Role policy size")."""


def sets(count: int, *, shared: bool) -> dict[str, Any]:
    """A stack of ``count`` model + inference-component endpoint + component sets; with
    ``shared``, the first model's least-privilege role runs every model and endpoint."""
    app = cdk.App(context=CDK_CONTEXT)
    stack = cdk.Stack(app, "Many", env=cdk.Environment(region="us-west-2"))
    image = ContainerImage.lmi("0.31.0")
    role = None
    for index in range(count):
        model = Model(
            stack,
            f"Model{index}",
            image=image,
            source=ModelSource.from_hugging_face(
                "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hub_token()
            ),
            serving=LmiOptions(tensor_parallel_degree=1, max_model_len=4096),
            role=role,
        )
        if shared and role is None:
            role = model.role
        endpoint = InferenceComponentEndpoint(
            stack, f"Endpoint{index}", instance_type=InstanceType.G5_12XLARGE, role=role
        )
        endpoint.add_inference_component(
            "Component",
            serves=ComponentModel.of(model),
            resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(24)),
        )
    return app.synth().get_stack_by_name("Many").template  # type: ignore[no-any-return]


def counts(template: dict[str, Any]) -> Counter[str]:
    return Counter(
        resource["Type"]
        for resource in template["Resources"].values()
        if resource["Type"] != "AWS::CDK::Metadata"
    )


def test_one_set_emits_six_resources_and_shared_roles_leave_four() -> None:
    """The figures the guide states: a role for the model and one for the endpoint, each with
    its statements inline (``Policies``, no separate ``AWS::IAM::Policy``), besides the four
    SageMaker resources, as many as the plain L1 app (benchmarks/synth/l1_app.py); sharing
    one role leaves the four."""
    alone = counts(sets(1, shared=False))
    assert sum(alone.values()) == 6
    assert alone["AWS::IAM::Role"] == 2
    assert alone["AWS::IAM::Policy"] == 0
    two_shared = counts(sets(2, shared=True))
    assert sum(two_shared.values()) == 1 + 2 * 4
    assert two_shared["AWS::IAM::Role"] == 1
    assert two_shared["AWS::IAM::Policy"] == 0


def test_a_hundred_sets_with_shared_roles_stay_under_the_resource_limit() -> None:
    template = sets(100, shared=True)
    by_type = counts(template)
    total = sum(by_type.values())
    assert total == 1 + 100 * 4 < CLOUDFORMATION_RESOURCE_LIMIT, by_type
    # The shared role's policy does not grow with the sets: the same image and log groups.
    ((_, policy),) = role_policies(template)
    assert len(json.dumps(policy, separators=(",", ":"))) < IAM_INLINE_POLICY_LIMIT / 4
