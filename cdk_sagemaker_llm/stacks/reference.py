"""Reference deployment: a Llama-3-8B-class model on LMI, served as inference components."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, Size, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from ..benchmarking import KneeRule
from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import ModelSpec
from ..constructs.autoscaling import ComponentScaling
from ..constructs.benchmark import BenchmarkGate, EndpointBenchmark, PayloadFormat
from ..constructs.deployment import RollingDeployment
from ..constructs.endpoint import InferenceComponentEndpoint, RoutingStrategy
from ..constructs.images import ContainerImage
from ..constructs.inference_component import InferenceComponent
from ..constructs.model import Model
from ..constructs.model_source import ModelSource
from ..constructs.nag import acknowledge
from ..constructs.optimization_job import (
    OptimizationJob,
    OptimizationTechnique,
    QuantizationMethod,
)
from ..constructs.serving_options import DataType, LmiBackend, LmiOptions, Quantization

LLAMA_3_8B_INSTRUCT = "meta-llama/Meta-Llama-3-8B-Instruct"
HUGGING_FACE_TOKEN_SECRET_NAME = "cdk-sagemaker-llm/hugging-face-token"
MODEL_BUCKET_NAME = "cdk-sagemaker-llm-models"
"""An existing bucket holding the uncompressed Llama 3 8B weights (and the optimized ones)."""


class LlamaInferenceComponentStack(Stack):
    """Llama 3 8B Instruct on LMI (vLLM) with one copy per A10G GPU of an ml.g5.12xlarge.

    A 7-8B model fits on one 24 GB GPU in fp16, so four single-GPU copies per instance serve
    more requests than one copy sharded over all four (domain.md). The container is an LMI
    release covered by SageMaker container caching, so new copies skip the image pull.
    Copies scale on concurrent requests per copy; a second, smaller endpoint serves sporadic
    traffic and scales to zero when idle.
    """

    def __init__(self, scope: Construct, id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        token = secretsmanager.Secret.from_secret_name_v2(
            self, "HuggingFaceToken", HUGGING_FACE_TOKEN_SECRET_NAME
        )
        self.model = Model(
            self,
            "Llama3Model",
            image=ContainerImage.lmi("0.31.0"),
            source=ModelSource.from_hugging_face(LLAMA_3_8B_INSTRUCT, token_secret=token),
            # On one A10G (22,888 MiB usable) fp16 weights leave ~5.9 GB for the KV cache:
            # 128 KiB per token (GQA, 8 KV heads) holds 8 sequences of 4,096 tokens.
            serving=LmiOptions(
                backend=LmiBackend.VLLM,
                tensor_parallel_degree=1,
                max_rolling_batch_size=8,
                max_model_len=4096,
                dtype=DataType.FP16,
                model_loading_timeout=Duration.minutes(15),
            ),
        )
        self.endpoint = InferenceComponentEndpoint(
            self,
            "Endpoint",
            instance_type=InstanceType.G5_12XLARGE,
            initial_instance_count=1,
            min_instance_count=1,
            max_instance_count=2,
            routing_strategy=RoutingStrategy.LEAST_OUTSTANDING_REQUESTS,
        )
        errors_alarm_name = f"{id}-llama3-5xx"
        self.component = InferenceComponent(
            self,
            "Llama3Component",
            endpoint=self.endpoint,
            model=self.model,
            accelerators=1,
            min_memory=Size.gibibytes(32),
            cpu_cores=8,
            copy_count=2,
            container_startup_health_check_timeout=Duration.minutes(15),
            deployment=RollingDeployment(
                batch_size=1,
                wait_interval=Duration.minutes(2),
                rollback_alarms=[
                    cloudwatch.Alarm.from_alarm_name(self, "ErrorsAlarmRef", errors_alarm_name)
                ],
            ),
        )
        cloudwatch.Alarm(
            self,
            "ErrorsAlarm",
            alarm_name=errors_alarm_name,
            alarm_description="Llama 3 component answers with 5XX errors: roll back a deployment.",
            metric=self.component.metric_invocation_errors(),
            threshold=5,
            evaluation_periods=2,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        # Measure the deployed component: a concurrency sweep (512 in / 256 out tokens,
        # streaming) once its 2 copies are in service. The deployment fails if one request
        # alone decodes slower than 50 ms/token; the knee (the last level before throughput
        # gains less than 10 % per doubling or p50 passes 60 ms/token) becomes the target.
        self.benchmark = EndpointBenchmark(
            self,
            "Llama3Benchmark",
            inference_component=self.component,
            concurrencies=[1, 2, 4, 8, 16, 32],
            input_tokens=512,
            output_tokens=256,
            stream=True,
            payload_format=PayloadFormat.LMI,
            knee_rule=KneeRule(min_gain_per_doubling=0.10, slo_ms_per_token=60),
            gate=BenchmarkGate(max_p50_ms_per_token=50),
            max_duration=Duration.hours(1),
        )
        # Copies follow in-flight requests (high-resolution metric: scale-out detected in
        # 30 s), held at the measured knee per copy: the most concurrency a copy takes before
        # requests queue. 4 GPUs per instance x max_instance_count 2 = 8 GPUs, one of them for
        # the AWQ component below: 7 copies at most.
        self.scaling = ComponentScaling(
            self, "Llama3Scaling", component=self.component, min_copies=2, max_copies=7
        )
        self.scaling.scale_on_concurrent_requests(
            target=self.benchmark.knee_concurrency_per_copy,
            scale_out_cooldown=Duration.minutes(1),
            scale_in_cooldown=Duration.minutes(10),
        )

        # Scale to zero: a second endpoint for sporadic traffic, which keeps no instance
        # while idle. The first request after idling fails (NoCapacityInvocationFailures)
        # and brings a copy, and managed instance scaling an instance, back.
        self.sporadic_endpoint = InferenceComponentEndpoint(
            self,
            "SporadicEndpoint",
            instance_type=InstanceType.G5_2XLARGE,
            initial_instance_count=1,
            min_instance_count=0,
            max_instance_count=2,
        )
        acknowledge(
            self.sporadic_endpoint,
            "Annotation::cdk-sagemaker-llm:min-instance-count-zero",
            "The reference region (us-west-2) accepts scale to zero; check yours before "
            "deploying elsewhere.",
        )
        self.sporadic_component = InferenceComponent(
            self,
            "Llama3SporadicComponent",
            endpoint=self.sporadic_endpoint,
            model=self.model,
            accelerators=1,
            min_memory=Size.gibibytes(24),
            cpu_cores=4,
            copy_count=1,
            container_startup_health_check_timeout=Duration.minutes(15),
        )
        self.sporadic_scaling = self.sporadic_component.auto_scale_copies(
            min_copies=0, max_copies=2
        )
        self.sporadic_scaling.scale_on_invocations(
            target=60, scale_in_cooldown=Duration.minutes(15)
        )

        # AWQ quantization at deploy time: the stack waits for the optimization job (up to
        # its 4-hour max runtime) and serves its INT4 output, about 4x smaller than fp16, as
        # one more component on the same endpoint, in the image SageMaker recommends for it.
        models = s3.Bucket.from_bucket_name(self, "ModelBucket", MODEL_BUCKET_NAME)
        self.awq_job = OptimizationJob(
            self,
            "Llama3AwqJob",
            source=ModelSource.from_s3(models, f"{LLAMA_3_8B_INSTRUCT}/"),
            instance_type=InstanceType.G5_12XLARGE,
            techniques=[OptimizationTechnique.quantization_of(QuantizationMethod.AWQ)],
            output_bucket=models,
            output_prefix="optimized/",
            max_runtime=Duration.hours(4),
            job_name_prefix="llama3-8b-awq",
        )
        self.awq_model = Model(
            self,
            "Llama3AwqModel",
            image=self.awq_job.recommended_image(),
            source=self.awq_job.as_model_source(),
            # The spec cannot be read from an S3 source: state it, so the fit checks apply.
            # INT4 weights (~4 GB) leave room for 16 sequences of 8,192 tokens on one A10G.
            spec=ModelSpec.LLAMA_3_8B,
            serving=LmiOptions(
                backend=LmiBackend.VLLM,
                tensor_parallel_degree=1,
                quantization=Quantization.AWQ,
                max_rolling_batch_size=16,
                max_model_len=8192,
                model_loading_timeout=Duration.minutes(15),
            ),
        )
        self.awq_component = InferenceComponent(
            self,
            "Llama3AwqComponent",
            endpoint=self.endpoint,
            model=self.awq_model,
            accelerators=1,
            min_memory=Size.gibibytes(16),
            cpu_cores=4,
            copy_count=1,
            container_startup_health_check_timeout=Duration.minutes(15),
        )
