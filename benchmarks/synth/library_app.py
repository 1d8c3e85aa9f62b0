"""N model + inference-component endpoint + component sets, built with cdk-sagemaker-llm.

python library_app.py OUTDIR [SETS]     (default 1 set)
"""

import os
import sys

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from aws_cdk import Size

from cdk_sagemaker_llm import (
    ComponentModel,
    ContainerImage,
    CopyResources,
    InferenceComponentEndpoint,
    InstanceType,
    LmiOptions,
    ManagedInstanceScaling,
    Model,
    ModelSource,
)


def add_sets(stack: cdk.Stack, sets: int) -> None:
    """Add ``sets`` model + endpoint + component sets to ``stack`` (tests/test_synth_cost.py
    counts the kernel round trips of these same sets)."""
    image = ContainerImage.lmi("0.31.0")
    for index in range(sets):
        suffix = "" if index == 0 else str(index)
        model = Model(
            stack,
            f"Model{suffix}",
            image=image,
            # Ungated, with a preset: no token secret to bind, and the fit check runs.
            source=ModelSource.from_hugging_face("tiiuae/falcon-7b-instruct"),
            serving=LmiOptions(
                tensor_parallel_degree=1, max_rolling_batch_size=8, max_model_len=2048
            ),
        )
        endpoint = InferenceComponentEndpoint(
            stack,
            f"Endpoint{suffix}",
            instance_type=InstanceType.G5_12XLARGE,
            instance_scaling=ManagedInstanceScaling(max_instance_count=2),
        )
        endpoint.add_inference_component(
            "Component",
            serves=ComponentModel.of(model),
            resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(32)),
            copy_count=2,
        )


if __name__ == "__main__":
    app = cdk.App(outdir=sys.argv[1])
    sets = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    stack = cdk.Stack(app, "Library", env=cdk.Environment(region="us-west-2"))
    add_sets(stack, sets)
    app.synth()
