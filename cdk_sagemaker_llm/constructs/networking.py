"""Placing SageMaker containers in a VPC: subnets, security groups and the role's rights."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_cdk import Annotations
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..prop_types import typed_props
from .execution_role import grant_vpc_access
from .validation import ValidationError

if TYPE_CHECKING:
    from aws_cdk import aws_ec2 as ec2


__all__ = ["ContainerNetworking"]


@typed_props
@dataclass(frozen=True, kw_only=True)
class ContainerNetworking:
    """Where the containers' network interfaces attach (``VpcConfig``), and whether they may
    reach the network at all (``EnableNetworkIsolation``), as in the SageMaker API reference
    (``CreateEndpointConfig``, "Give SageMaker AI hosted endpoints access to resources in your
    Amazon VPC")."""

    vpc: ec2.IVpc | None = None
    """Run the containers in this VPC; default SageMaker's managed network."""
    vpc_subnets: ec2.SubnetSelection | None = None
    """Subnets within ``vpc``; default the private subnets with egress."""
    security_groups: Sequence[ec2.ISecurityGroup] | None = None
    """Security groups of the network interfaces; default one new group with no inbound
    rules."""
    network_isolation: bool = False
    """Forbid the containers any network access; default False."""


@dataclass(frozen=True)
class ContainerNetwork:
    """The subnets and security groups containers attach to."""

    subnet_ids: list[str]
    security_groups: list[ec2.ISecurityGroup]

    @property
    def security_group_ids(self) -> list[str]:
        """The security groups' ids."""
        return [group.security_group_id for group in self.security_groups]


def place_in_vpc(
    scope: Construct,
    *,
    vpc: ec2.IVpc | None,
    vpc_subnets: ec2.SubnetSelection | None,
    security_groups: Sequence[ec2.ISecurityGroup] | None,
    role: iam.IRole,
    downloads_from_hub: bool = False,
) -> ContainerNetwork | None:
    """Resolve where containers attach, and grant ``role`` the network-interface rights.

    Without ``vpc``, returns None (SageMaker's managed network). Without security groups, one
    is created with no inbound rules. Subnets default to the private subnets with egress. A
    container that ``downloads_from_hub`` in isolated subnets gets a warning: no VPC endpoint
    reaches the Hugging Face Hub, so it fails at start.
    """
    if vpc is None:
        if vpc_subnets is not None or security_groups:
            raise ValidationError(
                "vpc",
                None,
                "vpc_subnets and security_groups need a vpc",
                "pass vpc as well, or drop vpc_subnets and security_groups",
            )
        return None
    # Imported here: most stacks place nothing in a VPC and skip the module's import time.
    from aws_cdk import aws_ec2 as ec2

    groups = list(security_groups or []) or [
        ec2.SecurityGroup(
            scope,
            "SecurityGroup",
            vpc=vpc,
            description=f"SageMaker containers of {scope.node.path}",
            allow_all_outbound=True,
        )
    ]
    selection = vpc_subnets or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
    try:
        subnets = vpc.select_subnets(
            availability_zones=selection.availability_zones,
            one_per_az=selection.one_per_az,
            subnet_filters=selection.subnet_filters,
            subnet_group_name=selection.subnet_group_name,
            subnets=selection.subnets,
            subnet_type=selection.subnet_type,
        )
    except RuntimeError as error:  # the CDK's "There are no 'Private' subnet groups in this VPC"
        raise ValidationError(
            "vpc_subnets",
            selection.subnet_type.name if selection.subnet_type else "the selection given",
            f"selects no subnet of the VPC ({error}); the default is its private subnets with "
            "egress",
            "serve the weights from S3 (ModelSource.from_s3) and pass vpc_subnets=ec2."
            "SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED): the model downloads "
            "from the Hugging Face Hub, which isolated subnets cannot reach"
            if downloads_from_hub
            else "pass vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType."
            "PRIVATE_ISOLATED) for a VPC of isolated subnets (the containers then reach S3, "
            "ECR and CloudWatch through VPC endpoints), or a selection the VPC has",
        ) from None
    if downloads_from_hub and selection.subnet_type is ec2.SubnetType.PRIVATE_ISOLATED:
        Annotations.of(scope).add_warning_v2(
            "cdk-sagemaker-llm:hub-download-in-isolated-subnets",
            "the container downloads its weights from the Hugging Face Hub at start, but its "
            "subnets are isolated and no VPC endpoint reaches the Hub, so it will fail to start: "
            "use subnets with egress (a NAT gateway), or serve the weights from S3 "
            "(ModelSource.from_s3).",
        )
    grant_vpc_access(role)
    return ContainerNetwork(subnet_ids=subnets.subnet_ids, security_groups=groups)
