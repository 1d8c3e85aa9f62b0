"""One realistic app with every construct of the library, on resources the stack creates
(buckets, customer-managed keys, encrypted topics, a VPC), as a user would build it.

``tests/test_nag.py`` runs cdk-nag's AwsSolutions pack over it: every finding on what the
library creates must be acknowledged by the library, where the grant is made. The user's own
resources are built to pass the pack (access logs, SSL, rotation, flow logs), so nothing is
acknowledged here except the user's access-log bucket logging to itself.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import Size
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns

from cdk_sagemaker_llm import (
    AsyncInference,
    AsyncScaling,
    BenchmarkEngine,
    BenchmarkLoad,
    BenchmarkResults,
    ComponentModel,
    ContainerImage,
    ContainerNetworking,
    CopyResources,
    DataCapture,
    Endpoint,
    EndpointBenchmark,
    ExpectedTraffic,
    HandlerPlacement,
    InferenceComponentEndpoint,
    InstanceType,
    KneeRule,
    LlmService,
    LmiOptions,
    ManagedInstanceScaling,
    Model,
    ModelSource,
    ModelSpec,
    OptimizationJob,
    OptimizationOutput,
    OptimizationSecurity,
    OptimizationTechnique,
    PayloadFormat,
    ProductionVariant,
    QuantizationMethod,
    RequestProtocol,
    RollingDeployment,
    SearchSpace,
    ServerlessConfig,
    ServerlessScaling,
    ServiceBenchmark,
    ServiceModel,
    Slo,
    SpeculativeDecoding,
    StorageVolume,
    VariantScaling,
    Workload,
)


def _bucket(stack: cdk.Stack, id: str, key: kms.IKey, logs: s3.IBucket) -> s3.Bucket:
    return s3.Bucket(
        stack,
        id,
        encryption=s3.BucketEncryption.KMS,
        encryption_key=key,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        server_access_logs_bucket=logs,
        server_access_logs_prefix=f"{id.lower()}/",
    )


def access_log_bucket(stack: cdk.Stack) -> s3.Bucket:
    """The stack's server-access-log bucket (its own access logs are the S1 finding it
    acknowledges)."""
    logs = s3.Bucket(
        stack,
        "AccessLogs",
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
    )
    cdk.Validations.of(logs).acknowledge(
        cdk.Acknowledgment(id="AwsSolutions-S1", reason="The access-log bucket itself.")
    )
    return logs


def build_realistic_stack(app: cdk.App) -> cdk.Stack:
    """Every construct, with stack-created buckets, keys, topics and a VPC."""
    stack = cdk.Stack(
        app, "Realistic", env=cdk.Environment(account="123456789012", region="us-west-2")
    )
    key = kms.Key(stack, "DataKey", enable_key_rotation=True)
    topic_key = kms.Key(stack, "TopicKey", enable_key_rotation=True)
    logs = access_log_bucket(stack)
    weights = _bucket(stack, "Weights", key, logs)
    outputs = _bucket(stack, "Outputs", key, logs)
    requests = _bucket(stack, "Requests", key, logs)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    vpc.add_flow_log("FlowLog")
    done = sns.Topic(stack, "Done", master_key=topic_key, enforce_ssl=True)
    failed = sns.Topic(stack, "Failed", master_key=topic_key, enforce_ssl=True)
    image = ContainerImage.lmi("0.31.0")
    placement = HandlerPlacement(vpc=vpc, log_encryption_key=key)

    # Models: S3 prefix (stack bucket, KMS), tarball, speculative decoding from S3, in a VPC.
    prefix_model = Model(
        stack,
        "PrefixModel",
        image=image,
        source=ModelSource.from_s3(weights, "llama-3-8b/"),
        serving=LmiOptions(tensor_parallel_degree=1, max_model_len=4096),
        vpc=vpc,
        network_isolation=True,
    )
    tarball_model = Model(
        stack,
        "TarballModel",
        image=ContainerImage.lmi_neuronx("0.29.0"),
        source=ModelSource.from_s3_tarball(weights, "small/model.tar.gz"),
        speculative_decoding=SpeculativeDecoding.from_s3(weights, "drafts/llama-3-1b/"),
    )

    # Instance endpoint: storage key, data capture with a key, rolling deployment, scaling.
    errors = cloudwatch.Alarm(
        stack,
        "Errors",
        metric=cloudwatch.Metric(namespace="AWS/SageMaker", metric_name="Invocation5XXErrors"),
        threshold=5,
        evaluation_periods=2,
    )
    instance_endpoint = Endpoint(
        stack,
        "InstanceEndpoint",
        variants=[ProductionVariant(model=tarball_model, instance_type=InstanceType.INF2_24XLARGE)],
        kms_key=key,
        data_capture=DataCapture(bucket=outputs, prefix="capture/", kms_key=key),
        deployment=RollingDeployment(batch_size=1, rollback_alarms=[errors]),
    )
    variant_scaling = VariantScaling(
        stack, "VariantScaling", endpoint=instance_endpoint, max_instances=2, min_instances=1
    )
    variant_scaling.scale_on_invocations(target=60)

    # Asynchronous endpoint: KMS bucket, results key, KMS-encrypted topics, scale to zero.
    async_model = Model(
        stack, "AsyncModel", image=image, source=ModelSource.from_s3(weights, "async/")
    )
    async_endpoint = Endpoint(
        stack,
        "AsyncEndpoint",
        variants=[ProductionVariant(model=async_model, instance_type=InstanceType.G5_2XLARGE)],
        async_inference=AsyncInference(
            bucket=requests, success_topic=done, error_topic=failed, kms_key=key
        ),
    )
    async_scaling = AsyncScaling(stack, "AsyncScaling", endpoint=async_endpoint, max_instances=2)
    async_scaling.scale_on_backlog(target=5)
    client = iam.Role(stack, "Client", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    async_endpoint.grant_invoke_async(client)
    instance_endpoint.grant_invoke(client)

    # Serverless endpoint.
    serverless_model = Model(
        stack,
        "ServerlessModel",
        image=ContainerImage.pytorch_cpu("2.6.0"),
        source=ModelSource.from_s3_tarball(weights, "classifier/model.tar.gz"),
    )
    serverless = Endpoint(
        stack,
        "ServerlessEndpoint",
        variants=[
            ProductionVariant(
                model=serverless_model,
                serverless=ServerlessConfig(
                    memory_size=Size.gibibytes(4), max_concurrency=10, provisioned_concurrency=2
                ),
            )
        ],
    )
    ServerlessScaling(stack, "Warm", endpoint=serverless, max_concurrency=10).scale_on_utilization(
        target=0.5
    )

    # Inference components in a VPC; LoRA adapters; copy scaling; benchmark.
    component_endpoint = InferenceComponentEndpoint(
        stack,
        "ComponentEndpoint",
        instance_type=InstanceType.G5_12XLARGE,
        instance_scaling=ManagedInstanceScaling(max_instance_count=2),
        networking=ContainerNetworking(vpc=vpc),
        data_capture=DataCapture(bucket=outputs, prefix="component-capture/", kms_key=key),
    )
    # Instance types with local NVMe refuse a storage key: the key on an Inferentia endpoint.
    InferenceComponentEndpoint(
        stack,
        "NeuronEndpoint",
        instance_type=InstanceType.INF2_48XLARGE,
        storage=StorageVolume(kms_key=key),
    )
    component = component_endpoint.add_inference_component(
        "Llama",
        serves=ComponentModel.of(prefix_model),
        resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(24)),
        copy_count=1,
    )
    base = component_endpoint.add_inference_component(
        "Base",
        serves=ComponentModel.from_image(
            image,
            artifact=ModelSource.from_hugging_face(
                "meta-llama/Meta-Llama-3-8B-Instruct",
                token_secret=secretsmanager.Secret.from_secret_name_v2(
                    stack, "HuggingFaceToken", "hugging-face-token"
                ),
            ),
            serving=LmiOptions(async_mode=True, max_rolling_batch_size=32),
        ),
        resources=CopyResources(min_memory=Size.gibibytes(32)),
    )
    component_endpoint.add_inference_component(
        "Adapter",
        serves=ComponentModel.lora_adapter(
            base, ModelSource.from_s3_tarball(weights, "adapters/sql.tar.gz"), lora_rank=16
        ),
    )
    copies = component.auto_scale_copies(min_copies=1, max_copies=4)
    bench = EndpointBenchmark(
        stack,
        "Benchmark",
        inference_component=component,
        load=BenchmarkLoad.concurrency([1, 2, 4], knee_rule=KneeRule(min_gain_per_doubling=0.1)),
        workload=Workload(input_tokens=512, output_tokens=256),
        results=BenchmarkResults.in_bucket(outputs, prefix="benchmarks/"),
        handler_placement=placement,
    )
    copies.scale_on_concurrent_requests(target=bench.knee_concurrency_per_copy)
    # The managed engine (a SageMaker AI benchmark job) writing to the KMS-encrypted bucket.
    EndpointBenchmark(
        stack,
        "ManagedBenchmark",
        inference_component=component,
        load=BenchmarkLoad.concurrency([1, 2]),
        workload=Workload(input_tokens=512, output_tokens=256),
        protocol=RequestProtocol(payload_format=PayloadFormat.MESSAGES, stream=True),
        engine=BenchmarkEngine.managed(),
        results=BenchmarkResults.in_bucket(outputs, prefix="managed-benchmarks/"),
        handler_placement=placement,
    )
    EndpointBenchmark(
        stack,
        "NewBucketBenchmark",
        endpoint=instance_endpoint,
        load=BenchmarkLoad.concurrency([1, 2]),
        workload=Workload(input_tokens=128, output_tokens=64),
        results=BenchmarkResults.in_new_bucket(encryption_key=key),
    )

    # Optimization jobs: output key, S3 source on a stack bucket, speculative-decoding data,
    # in a VPC; their output served by a model.
    job = OptimizationJob(
        stack,
        "AwqJob",
        source=ModelSource.from_s3(weights, "llama-3-8b/"),
        instance_type=InstanceType.G5_2XLARGE,
        techniques=[OptimizationTechnique.quantization_of(QuantizationMethod.AWQ)],
        output=OptimizationOutput.in_bucket(outputs, encryption_key=key),
        security=OptimizationSecurity.in_vpc(vpc),
        handler_placement=placement,
    )
    Model(
        stack,
        "OptimizedModel",
        image=job.recommended_image(),
        source=job.as_model_source(),
    )
    OptimizationJob(
        stack,
        "EagleJob",
        source=ModelSource.from_s3(weights, "llama-3-8b/"),
        instance_type=InstanceType.G5_12XLARGE,
        techniques=[
            OptimizationTechnique.speculative_decoding(
                training_data_bucket=weights, training_data_key="eagle-data/"
            )
        ],
        output=OptimizationOutput.in_bucket(outputs),
    )

    # The service layer: a layout decided from an SLO, with a deploy-time benchmark.
    LlmService(
        stack,
        "Service",
        model=ServiceModel.from_source(
            ModelSource.from_s3(weights, "llama-3-8b/"), image=image, spec=ModelSpec.LLAMA_3_8B
        ),
        workload=Workload(input_tokens=512, output_tokens=256),
        slo=Slo(max_ms_per_token=50),
        traffic=ExpectedTraffic.requests_per_second(2, minimum=1),
        search=SearchSpace(max_instance_count=2),
        benchmark=ServiceBenchmark.knee_search(),
    )
    return stack
