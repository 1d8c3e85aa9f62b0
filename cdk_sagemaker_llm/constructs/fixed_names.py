"""A fixed SageMaker resource name, claimed once per stack (``claim_fixed_name``): SageMaker
names a model, endpoint or inference component uniquely per account and region, matching names
case-insensitively (its ARNs are in lower case), so two resources of a stack with one name fail
the deployment ("already exists") after the first is created."""

from __future__ import annotations

from constructs import IConstruct

from ..errors import ValidationError
from .synth_cache import node_path, shared, stack_of
from .validation import is_unresolved


def claim_fixed_name(construct: IConstruct, kind: str, prop: str, name: str | None) -> None:
    """Claim ``name`` for ``construct``'s ``kind`` of resource (``"model"``, ``"endpoint"``,
    ``"inference component"``) in its stack; a second claim of the same name (any case) is a
    ValidationError naming ``prop``, the name, and the construct that holds it. A name left to
    CloudFormation (None) or known only at deploy time claims nothing."""
    if name is None or is_unresolved(name):
        return
    claimed: dict[str, str] = shared(stack_of(construct), ("fixed names", kind), dict)
    path = node_path(construct)
    holder = claimed.setdefault(name.lower(), path)
    if holder != path:
        raise ValidationError(
            prop,
            name,
            f"{holder} already names its {kind} {name!r} in this stack, and SageMaker names "
            f"each {kind} uniquely per account and region (ignoring case): the deployment "
            "would fail with 'already exists'",
            f"give {path} another {prop}, or leave it out for a generated one",
        )
