"""The least-privilege IAM role SageMaker assumes to run a model or an endpoint's components."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Sequence
from typing import Any

import jsii
from aws_cdk import Annotations, ArnFormat
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct, IValidation

from .nag import acknowledge_wildcard_resources, is_library_role, own_role
from .synth_cache import format_arn, remember, shared, stack_of


def create_execution_role(
    scope: Construct,
    id: str,
    *,
    description: str,
    statements: Sequence[iam.PolicyStatement] = (),
) -> iam.Role:
    """A role SageMaker can assume, allowed only to write its endpoints' CloudWatch logs.

    Everything else (pulling exactly one image, reading exactly one S3 location, VPC network
    interfaces) is granted by the construct that needs it; ``statements`` the caller knows it
    will grant first (an image's pull statements) may be given here, so the role is created
    with them (one jsii call less). Every statement renders inline on
    the role (``AWS::IAM::Role`` ``Policies``), so the model or endpoint config that names the
    role waits for all of them with no separate ``AWS::IAM::Policy``.
    """
    stack = stack_of(scope)
    log_groups = [
        format_arn(
            stack,
            service="logs",
            resource="log-group",
            resource_name=f"/aws/sagemaker/{kind}/*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        for kind in ("Endpoints", "InferenceComponents")
    ]
    logs = shared(
        stack,
        "logs statement",
        lambda: iam.PolicyStatement(
            actions=[
                "logs:CreateLogGroup",
                "logs:CreateLogStream",
                "logs:DescribeLogStreams",
                "logs:PutLogEvents",
            ],
            resources=log_groups,
        ),
    )
    role = ExecutionRole(scope, id, description=description, statements=[logs, *statements])
    remember(role, scope, id)
    acknowledge_wildcard_resources(
        role,
        log_groups,
        "SageMaker names each endpoint's and component's log group after it, and the role is "
        "created before those names exist; the wildcard stays within SageMaker's log groups.",
    )
    return role


class ExecutionRole(iam.Role):
    """An ``iam.Role`` for SageMaker whose statements, its own and every grant's, render in
    one inline policy on the role (``AWS::IAM::Role`` ``Policies``, ``ExecutionPolicy``)
    instead of a separate ``AWS::IAM::Policy``: CloudFormation creates them with the role, so
    whatever names the role waits for them, and a set of resources costs one resource less
    per role (the plain CloudFormation way; see ``benchmarks/README.md``, synthesis weight)."""

    def __init__(
        self, scope: Construct, id: str, *, description: str, statements: list[iam.PolicyStatement]
    ) -> None:
        self._document = iam.PolicyDocument(statements=statements)
        self._statements = list(statements)  # what the document has, as Python objects
        super().__init__(
            scope,
            id,
            assumed_by=_sagemaker_principal(),
            description=description,
            inline_policies={"ExecutionPolicy": self._document},
        )
        own_role(self)

    def add_to_principal_policy(
        self, statement: iam.PolicyStatement
    ) -> iam.AddToPrincipalPolicyResult:
        """Add ``statement`` to the role's inline policy (grants call this too)."""
        self._document.add_statements(statement)
        self._statements.append(statement)
        return iam.AddToPrincipalPolicyResult(statement_added=True, policy_dependable=self)

    def add_statements(self, *statements: iam.PolicyStatement) -> None:
        """Add ``statements`` to the role's inline policy in one call into jsii (a statement
        is a value: the library's constructs share one per stack and content among roles);
        statements the role already has are skipped."""
        new = [s for s in statements if not any(s is had for had in self._statements)]
        if new:
            self._document.add_statements(*new)
            self._statements.extend(new)


_principal: list[iam.ServicePrincipal] = []


def _sagemaker_principal() -> iam.ServicePrincipal:
    """The SageMaker service principal, created once: a principal is a value, not a construct,
    so every role may share it (one jsii object instead of one per role)."""
    if not _principal:
        _principal.append(iam.ServicePrincipal("sagemaker.amazonaws.com"))
    return _principal[0]


def grant_vpc_access(role: iam.IRole) -> None:
    """The network-interface rights SageMaker needs to place containers in your subnets.

    They apply to ``*``: the ``Describe*`` calls take no resource, and the interfaces SageMaker
    creates, deletes and grants permissions on exist only at deploy time (the statement SageMaker's
    own ``AmazonSageMakerFullAccess`` policy grants the same way).
    """
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=[
                "ec2:CreateNetworkInterface",
                "ec2:CreateNetworkInterfacePermission",
                "ec2:DeleteNetworkInterface",
                "ec2:DeleteNetworkInterfacePermission",
                "ec2:DescribeDhcpOptions",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSubnets",
                "ec2:DescribeVpcs",
            ],
            resources=["*"],
        )
    )
    acknowledge_wildcard_resources(
        role,
        ["*"],
        "ecr:GetAuthorizationToken and EC2's Describe calls take no resource, and the network "
        "interfaces SageMaker creates exist only at deploy time; every other right of this "
        "role names its resources.",
    )


def depend_on_role_policy(resource: Construct, role: iam.IRole) -> None:
    """Make ``resource`` wait for ``role``'s inline policy, so SageMaker never starts with a
    role that cannot yet pull its image or read its weights. (The role itself is already a
    dependency through the ``ExecutionRoleArn`` reference.)"""
    if isinstance(role, ExecutionRole):  # its statements are part of the role itself
        return
    try:
        policy = _default_policies.get(role)
    except TypeError:  # not weakly referenceable: ask every time
        policy = None
    if policy is None:
        node = role.node
        policy = node.try_find_child("DefaultPolicy")
        if policy is not None:  # a role's default policy, once made, stays: ask once per role
            with contextlib.suppress(TypeError):
                _default_policies[role] = policy
        else:
            policy = node.try_find_child("Policy")
    if policy is not None:
        resource.node.add_dependency(policy)


_default_policies: weakref.WeakKeyDictionary[Any, IConstruct] = weakref.WeakKeyDictionary()


GRANTS_DROPPED_WARNING = "cdk-sagemaker-llm:grantsDropped"
"""The id of the warning ``check_grants_land`` gives (``Annotations`` ``acknowledge_warning``
takes it, for a role that already allows itself everything)."""

_checked_roles: weakref.WeakSet[Any] = weakref.WeakSet()


def check_grants_land(scope: Construct, role: iam.IRole, prop: str) -> None:
    """At synth, warn on ``scope`` when ``role`` (yours, passed as ``prop``) cannot take the
    statements the library grants it: an import with ``mutable=False``, or one from another
    account, accepts every grant and writes none of them (``Role.fromRoleArn``: an
    ``ImmutableRole`` reports each statement added), so SageMaker would start without the
    rights to pull the image or read the weights, and fail at deploy. A role of this app, or a
    mutable import of this account, gets a policy the CDK attaches: nothing to say."""
    if is_library_role(role) or isinstance(role, iam.Role):
        return
    try:
        if role in _checked_roles:
            return
        _checked_roles.add(role)
    except TypeError:  # not weakly referenceable: check it from each construct
        pass
    scope.node.add_validation(_GrantsLand(scope, role, prop))


@jsii.implements(IValidation)
class _GrantsLand:
    """At synth: a role you pass must have taken the library's grants (``check_grants_land``)."""

    def __init__(self, scope: Construct, role: iam.IRole, prop: str) -> None:
        self._scope = scope
        self._role = role
        self._prop = prop

    def validate(self) -> list[str]:
        node = self._role.node
        if node.try_find_child("Policy") is None and node.try_find_child("DefaultPolicy") is None:
            Annotations.of(self._scope).add_warning_v2(
                GRANTS_DROPPED_WARNING,
                f"{self._prop}: the role {node.path} takes no policy from this app (imported "
                "with mutable=False, or from another account), so every right "
                "cdk-sagemaker-llm grants it is dropped: pulling the image, reading the "
                "weights, and any KMS key, data capture, VPC or secret access; SageMaker "
                "would fail to start without them. Attach those rights to the role yourself "
                "(to see them, synthesize once with iam.Role.from_role_arn(..., mutable=True): "
                "the template's AWS::IAM::Policy on the role lists them), import it with "
                "mutable=True from this account, or leave "
                f"{self._prop.rsplit('.', 1)[-1]} unset for a least-privilege role; "
                f"acknowledge {GRANTS_DROPPED_WARNING} if the role already has them.",
            )
        return []
