"""What the constructs leave in a template for ``cdk-sagemaker-llm plan`` and the handlers: the
metadata keys, and the custom-resource types (CloudFormation has no resource for an
optimization job or a benchmark, so each is a ``Custom::`` resource of a type named here).

Pure (no aws_cdk, no imports): the constructs write these keys and types, ``review`` reads them
from cdk.out, and the Lambda handlers dispatch on the types (their assets ship this module).
"""

MODEL_SPEC = "cdk-sagemaker-llm:model-spec"
"""Metadata key: the model's architecture (``ModelSpec.to_metadata()``)."""
IMAGE = "cdk-sagemaker-llm:image"
"""Metadata key: the serving image's family, release and container-caching eligibility."""
SERVICE = "cdk-sagemaker-llm:service"
"""Metadata key: an ``LlmService``'s decision (layout, serving options, scaling), where each
choice came from (recommended or overridden), its reasoning and predicted figures."""
BENCHMARK = "cdk-sagemaker-llm:benchmark"
"""Metadata key: what an ``EndpointBenchmark`` measures (target, workload, load, gate), on its
starting custom resource."""

OPTIMIZATION_JOB_RESOURCE = "Custom::SageMakerOptimizationJob"
"""Custom-resource type: starts an ``OptimizationJob``'s SageMaker optimization job."""
OPTIMIZATION_JOB_OUTPUT_RESOURCE = "Custom::SageMakerOptimizationJobOutput"
"""Custom-resource type: a completed optimization job's output, read after its wait."""
BENCHMARK_RESOURCE = "Custom::SageMakerEndpointBenchmark"
"""Custom-resource type: starts an ``EndpointBenchmark`` (either engine)."""
BENCHMARK_OUTPUT_RESOURCE = "Custom::SageMakerEndpointBenchmarkOutput"
"""Custom-resource type: a finished benchmark's figures, read after its wait."""
