"""Keys of the template metadata the constructs leave for ``cdk-sagemaker-llm plan``.

Pure (no aws_cdk): the constructs write under these keys, ``plan`` reads them from cdk.out.
"""

MODEL_SPEC = "cdk-sagemaker-llm:model-spec"
"""Metadata key: the model's architecture (``ModelSpec.to_metadata()``)."""
IMAGE = "cdk-sagemaker-llm:image"
"""Metadata key: the serving image's family, release and container-caching eligibility."""
SERVICE = "cdk-sagemaker-llm:service"
"""Metadata key: an ``LlmService``'s decision (layout, serving options, scaling), where each
choice came from (recommended or overridden), its reasoning and predicted figures."""
