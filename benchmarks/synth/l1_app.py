"""The same SageMaker resources as library_app.py, written with aws-cdk-lib L1 constructs.

python l1_app.py OUTDIR [SETS]     (default 1 set)
"""

import os
import sys

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker

IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.31.0-lmi13.0.0-cu124"

app = cdk.App(outdir=sys.argv[1])
stack = cdk.Stack(app, "L1", env=cdk.Environment(region="us-west-2"))
trust = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
pull_and_logs = iam.CfnRole.PolicyProperty(
    policy_name="PullAndLogs",
    policy_document={
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                "Resource": "arn:aws:ecr:us-west-2:763104351884:repository/djl-inference",
            },
            {"Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:CreateLogGroup"],
                "Resource": "arn:aws:logs:us-west-2:*:log-group:/aws/sagemaker/*",
            },
        ],
    },
)
sets = int(sys.argv[2]) if len(sys.argv) > 2 else 1
for index in range(sets):
    suffix = "" if index == 0 else str(index)
    model_role = iam.CfnRole(
        stack, f"ModelRole{suffix}", assume_role_policy_document=trust, policies=[pull_and_logs]
    )
    endpoint_role = iam.CfnRole(
        stack, f"EndpointRole{suffix}", assume_role_policy_document=trust, policies=[pull_and_logs]
    )
    model = sagemaker.CfnModel(
        stack,
        f"Model{suffix}",
        execution_role_arn=model_role.attr_arn,
        primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
            image=IMAGE,
            environment={
                "HF_MODEL_ID": "tiiuae/falcon-7b-instruct",
                "OPTION_ROLLING_BATCH": "auto",
                "OPTION_TENSOR_PARALLEL_DEGREE": "1",
                "OPTION_MAX_ROLLING_BATCH_SIZE": "8",
                "OPTION_MAX_MODEL_LEN": "2048",
            },
        ),
    )
    config = sagemaker.CfnEndpointConfig(
        stack,
        f"Config{suffix}",
        execution_role_arn=endpoint_role.attr_arn,
        production_variants=[
            sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                variant_name="AllTraffic",
                instance_type="ml.g5.12xlarge",
                initial_instance_count=1,
                managed_instance_scaling=sagemaker.CfnEndpointConfig.ManagedInstanceScalingProperty(
                    status="ENABLED", min_instance_count=1, max_instance_count=2
                ),
            )
        ],
    )
    endpoint = sagemaker.CfnEndpoint(
        stack, f"Endpoint{suffix}", endpoint_config_name=config.attr_endpoint_config_name
    )
    sagemaker.CfnInferenceComponent(
        stack,
        f"Component{suffix}",
        endpoint_name=endpoint.attr_endpoint_name,
        variant_name="AllTraffic",
        inference_component_name=f"l1-component{suffix}",
        specification=sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty(
            model_name=model.attr_model_name,
            compute_resource_requirements=sagemaker.CfnInferenceComponent.InferenceComponentComputeResourceRequirementsProperty(
                number_of_accelerator_devices_required=1, min_memory_required_in_mb=32768
            ),
        ),
        runtime_config=sagemaker.CfnInferenceComponent.InferenceComponentRuntimeConfigProperty(
            copy_count=2
        ),
    )
app.synth()
