"""Rolling deployments: SageMaker's batch ranges at synth time, alarm reads for the guardrails."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import Size
from aws_cdk import aws_cloudwatch as cloudwatch
from conftest import assert_cfn_lint_clean, new_stack, resources_of_type, role_policies

from cdk_sagemaker_llm import (
    ComponentModel,
    ComponentScaling,
    ContainerImage,
    CopyResources,
    Endpoint,
    InferenceComponentEndpoint,
    InstanceType,
    ManagedInstanceScaling,
    Model,
    ProductionVariant,
    RollingDeployment,
    ValidationError,
    VariantScaling,
)


def component(stack: Any, copies: int, deployment: RollingDeployment) -> Any:
    endpoint = InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_type=InstanceType.G5_12XLARGE,
        instance_scaling=ManagedInstanceScaling(max_instance_count=25),
    )
    return endpoint.add_inference_component(
        "Llm",
        serves=ComponentModel.of(Model(stack, "Model", image=ContainerImage.lmi("0.31.0"))),
        resources=CopyResources(min_memory=Size.gibibytes(8)),
        copy_count=copies,
        deployment=deployment,
    )


def endpoint(stack: Any, instances: int, deployment: RollingDeployment) -> Endpoint:
    return Endpoint(
        stack,
        "Endpoint",
        variants=[
            ProductionVariant(
                model=Model(stack, "Model", image=ContainerImage.lmi("0.31.0")),
                instance_type=InstanceType.G5_2XLARGE,
                initial_instance_count=instances,
            )
        ],
        deployment=deployment,
    )


@pytest.mark.parametrize(
    ("copies", "batch", "ok"),
    [(10, 9, False), (10, 5, True), (10, 6, False), (1, 1, True), (2, 1, True), (3, 2, False),
     (100, 4, False), (100, 5, True), (100, 50, True)],
)  # fmt: skip
def test_a_components_batch_is_5_to_50_percent_of_its_copies(
    copies: int, batch: int, ok: bool
) -> None:
    deployment = RollingDeployment(batch_size=batch)
    if ok:
        component(new_stack(), copies, deployment)
        return
    with pytest.raises(ValidationError, match=r"deployment\.batch_size=.*5 %-50 % of the copy"):
        component(new_stack(), copies, deployment)


def test_the_batch_is_checked_against_the_fewest_copies_scaling_allows() -> None:
    stack = new_stack()
    ten = component(stack, 10, RollingDeployment(batch_size=5))
    ComponentScaling(stack, "Fine", component=ten, max_copies=20, min_copies=10)
    # Another stack: a second target on the same component is refused as a duplicate first.
    stack = new_stack()
    ten = component(stack, 10, RollingDeployment(batch_size=5))
    with pytest.raises(ValidationError, match=r"min_copies: 2\), i\.e\. 1 to 1"):
        ComponentScaling(stack, "Fewer", component=ten, max_copies=20, min_copies=2)


def test_an_endpoints_batch_is_5_to_50_percent_of_each_variants_instances() -> None:
    endpoint(new_stack(), 4, RollingDeployment(batch_size=2))
    with pytest.raises(ValidationError, match="variant's instance count"):
        endpoint(new_stack(), 4, RollingDeployment(batch_size=3))
    stack = new_stack()
    four = endpoint(stack, 4, RollingDeployment(batch_size=2))
    with pytest.raises(ValidationError, match="min_instances: 2"):
        VariantScaling(stack, "Scaling", endpoint=four, max_instances=8, min_instances=2)
    endpoint(new_stack(), 1, RollingDeployment(batch_percent=50))  # percentages: no count


@pytest.mark.parametrize(
    ("rollback", "prop"),
    [
        ({"rollback_batch_percent": 0}, "rollback_batch_percent"),
        ({"rollback_batch_percent": 101}, "rollback_batch_percent"),
        ({"rollback_batch_size": 0}, "rollback_batch_size"),
        (
            {"rollback_batch_size": 1, "rollback_batch_percent": 10},
            "rollback_batch_percent/rollback_batch_size",
        ),
    ],
)
def test_rollback_batch_ranges(rollback: dict[str, int], prop: str) -> None:
    with pytest.raises(ValidationError, match=f"deployment.{prop}="):
        component(new_stack(), 2, RollingDeployment(batch_size=1, **rollback))


def test_the_rollback_batch_is_rendered() -> None:
    stack = new_stack()
    component(stack, 4, RollingDeployment(batch_size=2, rollback_batch_size=1))
    (properties,) = resources_of_type(
        assert_cfn_lint_clean(stack), "AWS::SageMaker::InferenceComponent"
    )
    policy = properties["DeploymentConfig"]["RollingUpdatePolicy"]
    assert policy["RollbackMaximumBatchSize"] == {"Type": "COPY_COUNT", "Value": 1}
    stack = new_stack()
    endpoint(stack, 4, RollingDeployment(batch_size=1, rollback_batch_percent=50))
    (properties,) = resources_of_type(assert_cfn_lint_clean(stack), "AWS::SageMaker::Endpoint")
    policy = properties["DeploymentConfig"]["RollingUpdatePolicy"]
    assert policy["RollbackMaximumBatchSize"] == {"Type": "CAPACITY_PERCENT", "Value": 50}


def describe_alarms_statements(template: dict[str, Any]) -> list[tuple[str, Any]]:
    """(role logical id, resources) of every statement allowing cloudwatch:DescribeAlarms."""
    found = []
    for role, document in role_policies(template):
        for statement in document["Statement"]:
            if statement["Action"] == "cloudwatch:DescribeAlarms":
                found.append((role, statement["Resource"]))
    return found


def alarm(stack: Any) -> cloudwatch.Alarm:
    metric = cloudwatch.Metric(namespace="AWS/SageMaker", metric_name="Invocation5XXErrors")
    return cloudwatch.Alarm(stack, "Errors", metric=metric, threshold=1, evaluation_periods=1)


def test_the_execution_roles_may_read_exactly_the_rollback_alarms() -> None:
    stack = new_stack()
    errors = alarm(stack)
    llm = component(stack, 2, RollingDeployment(batch_size=1, rollback_alarms=[errors]))
    template = assert_cfn_lint_clean(stack)
    granted = describe_alarms_statements(template)
    arn = {"Fn::GetAtt": [stack.get_logical_id(errors.node.default_child), "Arn"]}
    roles = {stack.get_logical_id(llm.endpoint.role.node.default_child),
             stack.get_logical_id(llm.model.role.node.default_child)}  # fmt: skip
    assert {role for role, _ in granted} == roles
    assert all(resource == arn for _, resource in granted)

    stack = new_stack()
    errors = alarm(stack)
    instances = endpoint(stack, 2, RollingDeployment(batch_size=1, rollback_alarms=[errors]))
    granted = describe_alarms_statements(assert_cfn_lint_clean(stack))
    model_role = instances.variants[0].model.role.node.default_child
    assert granted == [(stack.get_logical_id(model_role), {"Fn::GetAtt": [
        stack.get_logical_id(errors.node.default_child), "Arn"]})]  # fmt: skip


def test_no_alarms_no_grant() -> None:
    stack = new_stack()
    component(stack, 2, RollingDeployment(batch_size=1))
    assert describe_alarms_statements(assert_cfn_lint_clean(stack)) == []


def test_rolling_deployments_are_refused_on_multi_variant_endpoints() -> None:
    """Deployment guardrails, Exclusions: no rolling deployment on multi-variant endpoints."""
    stack = new_stack()
    model = Model(stack, "Model", image=ContainerImage.lmi("0.31.0"))
    variants = [
        ProductionVariant(model=model, instance_type=InstanceType.G5_2XLARGE, variant_name=name)
        for name in ("Blue", "Green")
    ]
    with pytest.raises(ValidationError, match="excludes multi-variant endpoints") as raised:
        Endpoint(stack, "Endpoint", variants=variants, deployment=RollingDeployment(batch_size=1))
    assert raised.value.prop == "deployment" and "blue/green" in raised.value.fix


def test_rolling_deployments_are_refused_on_serverless_endpoints() -> None:
    from cdk_sagemaker_llm import ServerlessConfig

    stack = new_stack()
    model = Model(stack, "Model", image=ContainerImage.pytorch_cpu("2.5.1"))
    variant = ProductionVariant(
        model=model, serverless=ServerlessConfig(memory_size=Size.gibibytes(4), max_concurrency=2)
    )
    with pytest.raises(ValidationError, match="excludes serverless endpoints"):
        Endpoint(
            stack, "Endpoint", variants=[variant], deployment=RollingDeployment(batch_percent=50)
        )
