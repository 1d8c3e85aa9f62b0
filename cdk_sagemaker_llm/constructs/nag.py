"""Acknowledging cdk-nag (AwsSolutions) findings the library cannot avoid, with reasons.

Constructs acknowledge their own unavoidable findings where they create them, so a user who
runs the AwsSolutions pack over a stack built from this library sees only findings of their
own. cdk-nag 3 reads acknowledgments from CDK's ``Validations`` metadata; a wildcard finding's
id names the rendered resource, e.g. ``AwsSolutions-IAM5[Resource::arn:aws:logs:us-west-2:
<AWS::AccountId>:log-group:/aws/sagemaker/Endpoints/*]``.

The acknowledgments are written as that metadata directly, one entry per construct, with no
stack trace: ``Validations.acknowledge`` writes one entry per rule, each with a stack trace
that, called through jsii, holds only aws-cdk-lib and jsii frames (no user code), and also
acknowledges annotation warnings of the same id, which a cdk-nag finding never is. The
entry is the one cdk-nag 3.0's ``NagPack.isAcknowledged`` and aws-cdk-lib's validation
report read (``Validations.ACKNOWLEDGED_RULES_METADATA_KEY``, rule ids keyed as
``Annotation::<id>``, the form ``Validations.acknowledge`` writes for an id without a
namespace); it costs about half the kernel CPU of the ``Validations`` calls (synth cost in
``benchmarks/README.md``).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from aws_cdk import Annotations
from constructs import Construct, IConstruct

from .synth_cache import resolved, stack_of

if TYPE_CHECKING:
    from aws_cdk import aws_iam as iam

KEY_ACTION_FAMILIES = ["kms:GenerateDataKey*", "kms:ReEncrypt*"]
"""The wildcard action families of aws-cdk-lib's ``Key.grant_encrypt`` /
``grant_encrypt_decrypt`` (and of ``Topic.grant_publish`` on an encrypted topic)."""


ACKNOWLEDGED_RULES_METADATA_KEY = "aws:cdk:acknowledged-rules"
"""``Validations.ACKNOWLEDGED_RULES_METADATA_KEY`` (aws-cdk-lib 2.262+), as a constant: reading
the static property is a jsii round trip."""

ANNOTATION_NAMESPACE = "Annotation::"
"""The namespace ``Validations.acknowledge`` gives a rule id that has none (aws-cdk-lib 2.262.1+;
cdk-nag 3 strips it, case-insensitively, when it matches)."""


_library_roles: weakref.WeakSet[IConstruct] = weakref.WeakSet()


def own_role(role: IConstruct) -> None:
    """Record ``role`` as created by the library: the only roles it acknowledges findings on."""
    _library_roles.add(role)


def is_library_role(role: object) -> bool:
    """Whether the library created ``role`` (``own_role``); no jsii call."""
    try:
        return role in _library_roles
    except TypeError:  # not weakly referenceable, so never recorded
        return False


def _is_foreign_role(scope: IConstruct) -> bool:
    """A role the library did not create (yours, passed as ``role=``, or imported)."""
    if scope in _library_roles:  # first: asking a jsii role for an attribute is a round trip
        return False
    return hasattr(scope, "role_arn") and hasattr(scope, "add_managed_policy")


def _is_broad(rule_id: str) -> bool:
    """An acknowledgment that would also cover statements the library did not write: a whole
    rule, an action family, or the ``*`` resource (an exact ARN pattern covers only the
    library's own resources)."""
    return "[" not in rule_id or "[Action::" in rule_id or rule_id.endswith("[Resource::*]")


def _record(scope: IConstruct, acknowledgments: dict[str, str]) -> None:
    """Write ``acknowledgments`` (rule id -> reason) on ``scope`` as one metadata entry. On a
    role you own, a broad one (``_is_broad``) is not written, as it would hide your own
    statements' findings from your cdk-nag run: an info message names it, and why."""
    if _is_foreign_role(scope):
        for rule_id in [rule_id for rule_id in acknowledgments if _is_broad(rule_id)]:
            Annotations.of(scope).add_info(
                f"cdk-sagemaker-llm granted this role something cdk-nag reports as {rule_id}, "
                "not acknowledged on a role you own, where it would also cover your own "
                f"statements (acknowledge it yourself): {acknowledgments.pop(rule_id)}"
            )
        if not acknowledgments:
            return
    scope.node.add_metadata(
        ACKNOWLEDGED_RULES_METADATA_KEY,
        {f"{ANNOTATION_NAMESPACE}{rule_id}": reason for rule_id, reason in acknowledgments.items()},
    )


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge ``rule_id`` (e.g. ``AwsSolutions-IAM4``) on ``scope`` and its children."""
    acknowledge_all(scope, [rule_id], reason)


_batch: list[dict[IConstruct, dict[str, str]]] = []


@contextlib.contextmanager
def batched_acknowledgments() -> Iterator[None]:
    """Hold the acknowledgments made inside the block and make them per construct, in order,
    in one jsii call at its end (a construct whose role gets several, e.g. its logs and its
    image pull, pays one round trip instead of one each). Nested blocks join the outer one."""
    if _batch:
        yield
        return
    pending: dict[IConstruct, dict[str, str]] = {}
    _batch.append(pending)
    try:
        yield
    finally:
        _batch.clear()
        for scope, acknowledgments in pending.items():
            _record(scope, acknowledgments)


def acknowledge_all(scope: IConstruct, rule_ids: list[str], reason: str) -> None:
    """Acknowledge each of ``rule_ids`` on ``scope`` for the same reason, in one jsii call
    (or at the end of the enclosing ``batched_acknowledgments`` block)."""
    acknowledgments = dict.fromkeys(rule_ids, reason)
    if _batch:
        _batch[0].setdefault(scope, {}).update(acknowledgments)
    else:
        _record(scope, acknowledgments)


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
