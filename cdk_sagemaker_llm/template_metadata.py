"""Keys of the template metadata the constructs leave for ``cdk-sagemaker-llm plan``.

Pure (no aws_cdk): the constructs write under these keys, ``plan`` reads them from cdk.out.
"""

MODEL_SPEC = "cdk-sagemaker-llm:model-spec"
"""Metadata key: the model's architecture (``ModelSpec.to_metadata()``)."""
IMAGE = "cdk-sagemaker-llm:image"
"""Metadata key: the serving image's family, release and container-caching eligibility."""
