"""Endpoints: variants, inference-component endpoints, importers, grants, metrics, errors."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import Duration, Size
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match, Template
from conftest import assert_cfn_lint_clean, new_stack, resources_of_type

from cdk_sagemaker_llm import (
    ComponentModel,
    ContainerImage,
    ContainerStartup,
    CopyResources,
    DataCapture,
    Endpoint,
    InferenceComponent,
    InferenceComponentEndpoint,
    InstanceType,
    LmiOptions,
    ManagedInstanceScaling,
    Model,
    ProductionVariant,
    RollingDeployment,
    RoutingStrategy,
    StorageVolume,
    ValidationError,
    VariantPlatform,
)


def lmi_model(stack: Any, id: str = "Model", degree: int | None = None) -> Model:
    serving = LmiOptions(tensor_parallel_degree=degree) if degree else None
    return Model(stack, id, image=ContainerImage.lmi("0.31.0"), serving=serving)


def test_instance_endpoint_with_weighted_variants() -> None:
    stack = new_stack()
    endpoint = Endpoint(
        stack,
        "Endpoint",
        variants=[
            ProductionVariant(
                model=lmi_model(stack, "A", degree=4),
                instance_type=InstanceType.G5_12XLARGE,
                initial_instance_count=2,
                initial_weight=3,
                container_startup_health_check_timeout=Duration.minutes(10),
                model_data_download_timeout=Duration.minutes(20),
                routing_strategy=RoutingStrategy.LEAST_OUTSTANDING_REQUESTS,
            ),
            ProductionVariant(
                model=Model(stack, "B", image=ContainerImage.lmi_neuronx("0.29.0")),
                instance_type=InstanceType.INF2_24XLARGE,
                initial_weight=1,
                volume_size=Size.gibibytes(100),
            ),
        ],
    )
    template = assert_cfn_lint_clean(stack)
    (config,) = resources_of_type(template, "AWS::SageMaker::EndpointConfig")
    first, second = config["ProductionVariants"]
    assert first["VariantName"] == "Variant1" and second["VariantName"] == "Variant2"
    assert first["InstanceType"] == "ml.g5.12xlarge"
    assert first["InitialInstanceCount"] == 2
    assert first["InitialVariantWeight"] == 3
    assert first["ContainerStartupHealthCheckTimeoutInSeconds"] == 600
    assert first["ModelDataDownloadTimeoutInSeconds"] == 1200
    assert first["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}
    assert second["VolumeSizeInGB"] == 100
    assert endpoint.default_variant_name == "Variant1"


def test_a_single_variant_endpoint_renders_its_rolling_deployment() -> None:
    """(Multi-variant endpoints are excluded from rolling deployments: test_service_rules.)"""
    stack = new_stack()
    alarm = cloudwatch.Alarm.from_alarm_name(stack, "Alarm", "my-errors")
    Endpoint(
        stack,
        "Endpoint",
        variants=[
            ProductionVariant(
                model=lmi_model(stack, "A", degree=4),
                instance_type=InstanceType.G5_12XLARGE,
                initial_instance_count=2,
            )
        ],
        deployment=RollingDeployment(batch_percent=25, rollback_alarms=[alarm]),
    )
    template = assert_cfn_lint_clean(stack)
    (resource,) = resources_of_type(template, "AWS::SageMaker::Endpoint")
    assert resource["DeploymentConfig"] == {
        "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": "my-errors"}]},
        "RollingUpdatePolicy": {
            "MaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 25},
            "WaitIntervalInSeconds": 120,
        },
    }


def test_a_gpu_image_on_a_type_stated_to_have_no_accelerators_is_refused() -> None:
    """A type outside the catalog whose accelerators are stated is checked as the docs say
    ("State them and the checks run"): the early return looked only at the catalog."""
    stack = new_stack()
    model = Model(stack, "Model", image=ContainerImage.lmi("0.31.0"))
    cpu_only = InstanceType.of("ml.c7i.4xlarge", accelerator_count=0)
    with pytest.raises(ValidationError, match="the lmi image needs NVIDIA GPUs"):
        Endpoint(
            stack, "Endpoint", variants=[ProductionVariant(model=model, instance_type=cpu_only)]
        )


def test_single_variant_is_all_traffic_with_kms_and_data_capture() -> None:
    stack = new_stack()
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    bucket = s3.Bucket(stack, "Capture", enforce_ssl=True)
    model = Model(stack, "Model", image=ContainerImage.pytorch_cpu("2.5.1"))
    Endpoint(
        stack,
        "Endpoint",
        variants=[ProductionVariant(model=model, instance_type=InstanceType.of("ml.c5.xlarge"))],
        kms_key=key,
        data_capture=DataCapture(
            bucket=bucket, prefix="capture/", sampling_percentage=20, capture_output=False
        ),
    )
    template = assert_cfn_lint_clean(stack)
    (config,) = resources_of_type(template, "AWS::SageMaker::EndpointConfig")
    assert config["ProductionVariants"][0]["VariantName"] == "AllTraffic"
    assert config["KmsKeyId"] == {
        "Fn::GetAtt": [stack.get_logical_id(key.node.default_child), "Arn"]
    }
    capture = config["DataCaptureConfig"]
    assert capture["CaptureOptions"] == [{"CaptureMode": "Input"}]
    assert capture["InitialSamplingPercentage"] == 20
    assert capture["EnableCapture"] is True


def test_grant_invoke_covers_streaming() -> None:
    stack = new_stack()
    endpoint = Endpoint.from_endpoint_name(stack, "Imported", "My-Endpoint")
    role = iam.Role(stack, "Caller", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    endpoint.grant_invoke(role)
    (policy,) = resources_of_type(Template.from_stack(stack).to_json(), "AWS::IAM::Policy")
    assert policy["PolicyDocument"]["Statement"] == [
        {
            "Action": ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
            "Effect": "Allow",
            "Resource": "arn:aws:sagemaker:us-west-2:123456789012:endpoint/my-endpoint",
        }
    ]


def test_import_by_arn_and_metrics() -> None:
    stack = new_stack()
    endpoint = Endpoint.from_endpoint_arn(
        stack, "Imported", "arn:aws:sagemaker:us-east-1:111122223333:endpoint/prod-llm"
    )
    assert endpoint.endpoint_name == "prod-llm"
    metric = endpoint.metric_invocations()
    assert metric.metric_name == "Invocations" and metric.namespace == "AWS/SageMaker"
    assert metric.dimensions == {"EndpointName": "prod-llm", "VariantName": "AllTraffic"}
    assert endpoint.metric_model_latency().statistic == "p90"
    assert (
        endpoint.metric_invocation_errors(status_class="4XX").metric_name == "Invocation4XXErrors"
    )
    concurrency = endpoint.metric_concurrent_requests()
    assert concurrency.metric_name == "ConcurrentRequestsPerModel"
    assert concurrency.period.to_seconds() == 10
    gpu = endpoint.metric_gpu_utilization(variant_name="Blue")
    assert gpu.namespace == "/aws/sagemaker/Endpoints"
    assert gpu.dimensions == {"EndpointName": "prod-llm", "VariantName": "Blue"}
    with pytest.raises(ValidationError, match="status_class='3XX'"):
        endpoint.metric_invocation_errors(status_class="3XX")
    with pytest.raises(ValidationError, match="endpoint_arn="):
        Endpoint.from_endpoint_arn(
            stack, "Bad", "arn:aws:sagemaker:us-east-1:111122223333:endpoint"
        )


def test_inference_component_endpoint_has_role_and_no_model() -> None:
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_type=InstanceType.G6E_12XLARGE,
        instance_scaling=ManagedInstanceScaling(
            initial_instance_count=2, min_instance_count=1, max_instance_count=4
        ),
        platform=VariantPlatform(routing_strategy=RoutingStrategy.RANDOM),
        startup=ContainerStartup(health_check_timeout=Duration.minutes(15)),
    )
    endpoint.add_inference_component(
        "Llm",
        serves=ComponentModel.of(lmi_model(stack)),
        resources=CopyResources(min_memory=Size.gibibytes(16)),
    )
    template = assert_cfn_lint_clean(stack)
    (config,) = resources_of_type(template, "AWS::SageMaker::EndpointConfig")
    assert "ExecutionRoleArn" in config
    (variant,) = config["ProductionVariants"]
    assert "ModelName" not in variant
    assert variant["ManagedInstanceScaling"] == {
        "MaxInstanceCount": 4,
        "MinInstanceCount": 1,
        "Status": "ENABLED",
    }
    assert variant["InitialInstanceCount"] == 2
    assert variant["RoutingConfig"] == {"RoutingStrategy": "RANDOM"}
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 900


def test_scale_to_zero_bounds_warn_about_regions() -> None:
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_type=InstanceType.G5_2XLARGE,
        instance_scaling=ManagedInstanceScaling(min_instance_count=0, max_instance_count=2),
    )
    assert endpoint.min_instance_count == 0

    warnings = Annotations.from_stack(stack).find_warning(
        "*", Match.string_like_regexp("not accepted in every region")
    )
    assert len(warnings) == 1


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {
                "instance_scaling": ManagedInstanceScaling(
                    min_instance_count=3, max_instance_count=2
                )
            },
            "min_instance_count/initial_instance_count/max_instance_count=(3, 1, 2)",
        ),
        (
            {"instance_scaling": ManagedInstanceScaling(initial_instance_count=0)},
            "instance_scaling.initial_instance_count=0: must be at least 1",
        ),
        (
            {"instance_scaling": ManagedInstanceScaling(min_instance_count=-1)},
            "instance_scaling.min_instance_count=-1",
        ),
        ({"storage": "KEY"}, "storage.kms_key="),
        ({"storage": StorageVolume(size=Size.gibibytes(50))}, "storage.size='50 GiB'"),
        (
            {"startup": ContainerStartup(health_check_timeout=Duration.seconds(30))},
            "startup.health_check_timeout (seconds)=30",
        ),
        (
            {"startup": ContainerStartup(download_timeout=Duration.hours(2))},
            "startup.download_timeout (seconds)=7200",
        ),
        ({"endpoint_name": "under_score"}, "endpoint_name='under_score'"),
        ({"variant_name": "-bad"}, "variant_name='-bad'"),
    ],
)
def test_inference_component_endpoint_errors(kwargs: dict[str, Any], expected: str) -> None:
    stack = new_stack()
    if kwargs.get("storage") == "KEY":
        kwargs["storage"] = StorageVolume(kms_key=kms.Key(stack, "Key"))
    with pytest.raises(ValidationError) as error:
        InferenceComponentEndpoint(
            stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE, **kwargs
        )
    assert expected in str(error.value)
    assert "Fix: " in str(error.value)


def test_kms_key_allowed_without_local_storage() -> None:
    stack = new_stack()
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_type=InstanceType.INF2_48XLARGE,
        storage=StorageVolume(kms_key=key),
    )
    (config,) = resources_of_type(
        Template.from_stack(stack).to_json(), "AWS::SageMaker::EndpointConfig"
    )
    assert "KmsKeyId" in config


@pytest.mark.parametrize(
    ("variant_kwargs", "expected"),
    [
        (
            {"instance_type": InstanceType.G5_2XLARGE, "degree": 4},
            "serving.tensor_parallel_degree=4",
        ),
        ({"instance_type": InstanceType.INF2_XLARGE}, "variants[0].instance_type='ml.inf2.xlarge'"),
        (
            {"instance_type": InstanceType.G5_2XLARGE, "initial_instance_count": 0},
            "variants[0].initial_instance_count=0",
        ),
        (
            {"instance_type": InstanceType.G5_2XLARGE, "initial_weight": -1},
            "variants[0].initial_weight=-1",
        ),
        (
            {"instance_type": InstanceType.G5_2XLARGE, "volume_size": Size.gibibytes(10)},
            "variants[0].volume_size",
        ),
        (
            {"instance_type": InstanceType.INF2_8XLARGE, "volume_size": Size.gibibytes(1000)},
            "variants[0].volume_size (GiB)=1000",
        ),
        (
            {"instance_type": InstanceType.G5_2XLARGE, "variant_name": "a b"},
            "variants[0].variant_name='a b'",
        ),
    ],
)
def test_variant_errors(variant_kwargs: dict[str, Any], expected: str) -> None:
    stack = new_stack()
    degree = variant_kwargs.pop("degree", None)
    image_for_kind = (
        ContainerImage.lmi_neuronx("0.29.0")
        if variant_kwargs["instance_type"] is InstanceType.INF2_8XLARGE
        else ContainerImage.lmi("0.31.0")
    )
    model = Model(
        stack,
        "M",
        image=image_for_kind,
        serving=LmiOptions(tensor_parallel_degree=degree) if degree else None,
    )
    with pytest.raises(ValidationError) as error:
        Endpoint(stack, "Endpoint", variants=[ProductionVariant(model=model, **variant_kwargs)])
    assert expected in str(error.value)


def test_endpoint_level_errors() -> None:
    stack = new_stack()
    model = lmi_model(stack)
    with pytest.raises(ValidationError, match=r"variants=0"):
        Endpoint(stack, "None", variants=[])
    same = ProductionVariant(
        model=model, instance_type=InstanceType.G5_2XLARGE, variant_name="Blue"
    )
    with pytest.raises(ValidationError, match="variant names must be unique"):
        Endpoint(stack, "Twice", variants=[same, same])
    with pytest.raises(ValidationError, match="exactly one of batch_percent and batch_size"):
        Endpoint(
            stack,
            "Rolling",
            variants=[ProductionVariant(model=model, instance_type=InstanceType.G5_2XLARGE)],
            deployment=RollingDeployment(),
        )
    with pytest.raises(ValidationError, match=r"deployment.batch_percent=80"):
        Endpoint(
            stack,
            "Rolling2",
            variants=[ProductionVariant(model=model, instance_type=InstanceType.G5_2XLARGE)],
            deployment=RollingDeployment(batch_percent=80),
        )
    bucket = s3.Bucket.from_bucket_name(stack, "B", "bucket")
    with pytest.raises(ValidationError, match=r"data_capture.sampling_percentage=150"):
        Endpoint(
            stack,
            "Capture",
            variants=[ProductionVariant(model=model, instance_type=InstanceType.G5_2XLARGE)],
            data_capture=DataCapture(bucket=bucket, sampling_percentage=150),
        )
    with pytest.raises(ValidationError, match=r"data_capture.prefix='no-slash'"):
        Endpoint(
            stack,
            "Capture2",
            variants=[ProductionVariant(model=model, instance_type=InstanceType.G5_2XLARGE)],
            data_capture=DataCapture(bucket=bucket, prefix="no-slash"),
        )


def test_inference_components_only_where_cloudformation_offers_them() -> None:
    with pytest.raises(ValidationError) as error:
        InferenceComponentEndpoint(
            new_stack("cn-north-1"), "Endpoint", instance_type=InstanceType.G5_12XLARGE
        )
    message = str(error.value)
    assert "region of the stack='cn-north-1'" in message and "instance-based Endpoint" in message
    # Instance-based endpoints exist there.
    stack = new_stack("cn-north-1")
    Endpoint(
        stack,
        "Endpoint",
        variants=[ProductionVariant(model=lmi_model(stack), instance_type=InstanceType.G5_2XLARGE)],
    )
    assert_cfn_lint_clean(stack)


def test_a_region_whose_cloudformation_cannot_host_a_model_is_refused_at_synth() -> None:
    """me-central-1's CloudFormation lists InferenceComponent but not Model, EndpointConfig or
    Endpoint (cfn-lint's per-region schemas): a model or an endpoint there is refused at
    synth, naming the region; the deploy failed on an unknown resource type."""
    stack = new_stack("me-central-1")
    with pytest.raises(ValidationError) as caught:
        lmi_model(stack)
    assert caught.value.prop == "region of the stack"
    assert caught.value.value == "me-central-1"
    assert "AWS::SageMaker::Model" in caught.value.problem
    with pytest.raises(ValidationError, match="me-central-1"):
        InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)


def test_an_instance_type_the_catalog_does_not_know_is_a_warning_with_the_names_meant() -> None:
    """``ml.g5.3xlarge`` (no such size) synthesized without a word; it is now a warning naming
    the catalog types it may mean, and that its checks are skipped. A type given its
    accelerators is not warned about."""
    stack = new_stack()
    Endpoint(
        stack,
        "Endpoint",
        variants=[
            ProductionVariant(
                model=lmi_model(stack), instance_type=InstanceType.of("ml.g5.3xlarge")
            )
        ],
    )
    InferenceComponentEndpoint(stack, "Stated", instance_type=InstanceType.G5_12XLARGE)
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*"))
    texts = [str(w.entry.data) for w in warnings if "unknown-instance-type" in str(w.entry.data)]
    assert len(texts) == 1
    assert "ml.g5.3xlarge is not in the library's instance catalog" in texts[0]
    assert "(did you mean ml.g5." in texts[0]


def test_region_agnostic_inference_component_endpoint_gets_a_region_rule() -> None:
    stack = new_stack(region=None)
    InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    InferenceComponentEndpoint(stack, "Second", instance_type=InstanceType.G5_12XLARGE)
    template = Template.from_stack(stack).to_json()
    rule = template["Rules"]["InferenceComponentRegionRule"]
    assertion = rule["Assertions"][0]
    assert assertion["Assert"]["Fn::Contains"][1] == {"Ref": "AWS::Region"}
    assert "us-west-2" in assertion["Assert"]["Fn::Contains"][0]
    assert "cn-north-1" not in assertion["Assert"]["Fn::Contains"][0]


@pytest.mark.parametrize("count", [None, 1])
def test_a_rolling_batch_is_checked_against_the_default_instance_count(count: int | None) -> None:
    """A variant left at its default runs one instance: a batch of 5 is refused as it is with
    ``initial_instance_count=1`` given (the check was skipped on the default)."""
    stack = new_stack()
    with pytest.raises(ValidationError) as caught:
        Endpoint(
            stack,
            "Endpoint",
            deployment=RollingDeployment(batch_size=5),
            variants=[
                ProductionVariant(
                    model=lmi_model(stack),
                    instance_type=InstanceType.G5_2XLARGE,
                    initial_instance_count=count,
                )
            ],
        )
    assert caught.value.prop == "deployment.batch_size"
    assert caught.value.value == 5
    assert "initial_instance_count" in caught.value.problem and ": 1)" in caught.value.problem


@pytest.mark.parametrize(
    ("prop", "variant", "shown"),
    [
        ("volume_size", {"volume_size": Size.mebibytes(512)}, "0.5 GiB"),
        (
            "model_data_download_timeout",
            {"model_data_download_timeout": Duration.millis(90500)},
            "90500 ms",
        ),
    ],
)
def test_a_part_of_a_whole_unit_is_a_validation_error_naming_the_prop(
    prop: str, variant: dict[str, Any], shown: str
) -> None:
    """SageMaker takes volumes in whole GiB and timeouts in whole seconds; the CDK's own
    conversion raised a bare jsii "CannotConvertedIntoWhole" naming neither."""
    stack = new_stack()
    with pytest.raises(ValidationError) as raised:
        Endpoint(
            stack,
            "Endpoint",
            variants=[
                ProductionVariant(
                    model=Model(stack, "Cpu", image=ContainerImage.pytorch_cpu("2.5.1"))
                    if "volume_size" in variant
                    else lmi_model(stack, "A", degree=1),
                    instance_type=InstanceType.of("ml.c5.xlarge", accelerator_count=0)
                    if "volume_size" in variant
                    else InstanceType.G5_2XLARGE,
                    **variant,
                )
            ],
        )
    assert prop in raised.value.prop and shown in str(raised.value)
    assert "pass " in raised.value.fix


def test_a_part_of_a_mebibyte_of_copy_memory_is_a_validation_error() -> None:
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    with pytest.raises(ValidationError, match=r"resources\.min_memory"):
        InferenceComponent(
            stack,
            "Copy",
            endpoint=endpoint,
            serves=ComponentModel.of(lmi_model(stack, "A", degree=1)),
            resources=CopyResources(accelerators=1, min_memory=Size.kibibytes(1536 * 1024 + 1)),
        )


def test_an_imported_model_without_a_role_is_warned_that_the_grants_miss_it() -> None:
    """kms_key and data_capture grant the models' execution roles; a model imported without
    role= has none to grant, which was silent."""
    stack = new_stack()
    imported = Model.from_model_name(stack, "Imported", "my-model")
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    Endpoint(
        stack,
        "Endpoint",
        kms_key=key,
        variants=[
            ProductionVariant(
                model=imported, instance_type=InstanceType.of("ml.m5.xlarge", accelerator_count=0)
            )
        ],
    )
    (warning,) = Annotations.from_stack(stack).find_warning(
        "*", Match.string_like_regexp("noRoleForGrants")
    )
    assert "Imported was imported without role=" in warning.entry.data
    assert "kms_key" in warning.entry.data
    quiet = new_stack()
    with_role = Model.from_model_name(
        quiet,
        "Imported",
        "my-model",
        role=iam.Role(quiet, "Role", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com")),
    )
    Endpoint(
        quiet,
        "Endpoint",
        kms_key=kms.Key(quiet, "Key", enable_key_rotation=True),
        variants=[
            ProductionVariant(
                model=with_role,
                instance_type=InstanceType.of("ml.m5.xlarge", accelerator_count=0),
            )
        ],
    )
    assert not Annotations.from_stack(quiet).find_warning(
        "*", Match.string_like_regexp("noRoleForGrants")
    )
