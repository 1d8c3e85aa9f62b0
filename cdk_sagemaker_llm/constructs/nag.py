"""Acknowledging cdk-nag (AwsSolutions) findings the library cannot avoid, with reasons.

Constructs acknowledge their own unavoidable findings where they create them, so a user who
runs the AwsSolutions pack over a stack built from this library sees only findings of their
own. cdk-nag 3 reads acknowledgments from CDK's ``Validations`` metadata; a wildcard finding's
id names the rendered resource, e.g. ``AwsSolutions-IAM5[Resource::arn:aws:logs:us-west-2:
<AWS::AccountId>:log-group:/aws/sagemaker/Endpoints/*]``.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from aws_cdk import Acknowledgment, Validations
from constructs import Construct, IConstruct

from .synth_cache import resolved, stack_of

if TYPE_CHECKING:
    from aws_cdk import aws_iam as iam

KEY_ACTION_FAMILIES = ["kms:GenerateDataKey*", "kms:ReEncrypt*"]
"""The wildcard action families of aws-cdk-lib's ``Key.grant_encrypt`` /
``grant_encrypt_decrypt`` (and of ``Topic.grant_publish`` on an encrypted topic)."""


_validations: weakref.WeakKeyDictionary[Any, Validations] = weakref.WeakKeyDictionary()


def _validations_of(scope: IConstruct) -> Validations:
    """``Validations.of(scope)``, created once per construct (a jsii round trip each)."""
    try:
        return _validations[scope]
    except KeyError:
        validations = _validations[scope] = Validations.of(scope)
        return validations
    except TypeError:
        return Validations.of(scope)


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge ``rule_id`` (e.g. ``AwsSolutions-IAM4``) on ``scope`` and its children."""
    acknowledge_all(scope, [rule_id], reason)


_batch: list[dict[IConstruct, list[Acknowledgment]]] = []


@contextlib.contextmanager
def batched_acknowledgments() -> Iterator[None]:
    """Hold the acknowledgments made inside the block and make them per construct, in order,
    in one jsii call at its end (a construct whose role gets several, e.g. its logs and its
    image pull, pays one round trip instead of one each). Nested blocks join the outer one."""
    if _batch:
        yield
        return
    pending: dict[IConstruct, list[Acknowledgment]] = {}
    _batch.append(pending)
    try:
        yield
    finally:
        _batch.clear()
        for scope, acknowledgments in pending.items():
            _validations_of(scope).acknowledge(*acknowledgments)


def acknowledge_all(scope: IConstruct, rule_ids: list[str], reason: str) -> None:
    """Acknowledge each of ``rule_ids`` on ``scope`` for the same reason, in one jsii call
    (or at the end of the enclosing ``batched_acknowledgments`` block)."""
    acknowledgments = [
        Acknowledgment(id=rule_id, reason=reason) for rule_id in dict.fromkeys(rule_ids)
    ]
    if _batch:
        _batch[0].setdefault(scope, []).extend(acknowledgments)
    else:
        _validations_of(scope).acknowledge(*acknowledgments)


def acknowledge_wildcard_resources(scope: IConstruct, resources: list[str], reason: str) -> None:
    """Acknowledge AwsSolutions-IAM5 for exactly these wildcard resource ARNs on ``scope``."""
    stack = stack_of(scope)
    acknowledge_all(
        scope,
        [
            f"AwsSolutions-IAM5[Resource::{_rendered(resolved(stack, resource))}]"
            for resource in resources
        ],
        reason,
    )


def acknowledge_wildcard_actions(scope: IConstruct, actions: list[str], reason: str) -> None:
    """Acknowledge AwsSolutions-IAM5 for exactly these wildcard actions (``s3:GetObject*``)."""
    acknowledge_all(scope, [f"AwsSolutions-IAM5[Action::{action}]" for action in actions], reason)


def acknowledge_key_grant(
    grantee: iam.IGrantable, reason: str, actions: list[str] = KEY_ACTION_FAMILIES
) -> None:
    """Acknowledge the KMS action families (default ``KEY_ACTION_FAMILIES``) that an
    aws-cdk-lib key grant just gave ``grantee``'s role on exactly one key: the families are
    the grant's (S3 and SageMaker call ``GenerateDataKey`` or its variants and re-encrypt as
    they need); the resource is never a wildcard."""
    principal = grantee.grant_principal
    if isinstance(principal, Construct):
        acknowledge_wildcard_actions(principal, actions, reason)


def _rendered(value: Any) -> str:
    """A resolved CloudFormation value as cdk-nag prints it: references as ``<Name>``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if "Ref" in value:
            return f"<{value['Ref']}>"
        if "Fn::GetAtt" in value:
            return f"<{'.'.join(value['Fn::GetAtt'])}>"
        if "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            return str(separator).join(_rendered(part) for part in parts)
    raise ValueError(f"cannot render {value!r} as a cdk-nag finding id")
