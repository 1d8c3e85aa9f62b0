"""Answers the constructs ask of the jsii kernel again and again, kept in Python per stack.

Every read of a CDK object (``Stack.of``, ``stack.region``, ``format_arn``, ``resolve``,
``node.path``) is a round trip to the CDK's Node.js process. The constructs ask the same
questions for every model, endpoint and component of a stack, and the answers never change
once asked: a stack's region and the ARN it formats for the same arguments are fixed when the
stack is created, and so is a construct's path. Caching them here takes most of the library's
per-construct round trips off the synth path (``benchmarks/README.md``, synthesis weight).

The caches are keyed on the Python objects themselves (jsii gives each CDK object one Python
proxy), weakly, so a stack that is gone takes its answers with it.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import weakref
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar

from aws_cdk import Names, Stack
from constructs import IConstruct, Node

T = TypeVar("T")

_stacks: weakref.WeakKeyDictionary[Any, Stack] = weakref.WeakKeyDictionary()
_paths: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_per_stack: weakref.WeakKeyDictionary[Stack, dict[Any, Any]] = weakref.WeakKeyDictionary()


def stack_of(scope: IConstruct) -> Stack:
    """``Stack.of(scope)``, asked once per construct object."""
    try:
        return _stacks[scope]
    except KeyError:
        stack = _stacks[scope] = Stack.of(scope)
        return stack
    except TypeError:  # not weakly referenceable: ask every time
        return Stack.of(scope)


class _HasNode(Protocol):
    @property
    def node(self) -> Node: ...


def node_path(construct: _HasNode) -> str:
    """``construct.node.path``, asked once per construct object (paths never change)."""
    try:
        return _paths[construct]
    except KeyError:
        path = _paths[construct] = construct.node.path
        return path
    except TypeError:
        return construct.node.path


def _facts(stack: Stack) -> dict[Any, Any]:
    try:
        return _per_stack[stack]
    except KeyError:
        facts: dict[Any, Any] = {}
        _per_stack[stack] = facts
        return facts


def region_of(stack: Stack) -> str:
    """``stack.region`` (a literal, or the ``AWS::Region`` token), asked once per stack."""
    facts = _facts(stack)
    if "region" not in facts:
        facts["region"] = stack.region
    region: str = facts["region"]
    return region


def format_arn(stack: Stack, **components: Any) -> str:
    """``stack.format_arn(**components)``, asked once per stack and arguments."""
    key = ("format_arn", tuple(sorted((name, repr(value)) for name, value in components.items())))
    facts = _facts(stack)
    if key not in facts:
        facts[key] = stack.format_arn(**components)
    arn: str = facts[key]
    return arn


def shared(stack: Stack, key: Hashable, make: Callable[[], T]) -> T:
    """``make()``, built once per stack and ``key``: a value (a policy statement, say) that
    every construct of the stack may use as is instead of building its own copy."""
    facts = _facts(stack)
    full_key = ("shared", key)
    if full_key not in facts:
        facts[full_key] = make()
    value: T = facts[full_key]
    return value


def resolved(stack: Stack, value: str) -> Any:
    """``stack.resolve(value)`` of a string, asked once per stack and string."""
    key = ("resolve", value)
    facts = _facts(stack)
    if key not in facts:
        facts[key] = stack.resolve(value)
    return facts[key]


def remember(construct: IConstruct, scope: IConstruct, id: str) -> None:
    """``construct`` was just created as ``id`` in ``scope``: its stack is ``scope``'s (it is
    not itself a ``Stack``) and its path is ``scope``'s path + ``/`` + ``id``, known with no
    round trip once the scope's are."""
    with contextlib.suppress(TypeError):
        _stacks[construct] = stack_of(scope)
        if "/" not in id:  # the constructs library rewrites a "/" in an id
            parent = node_path(scope)
            _paths[construct] = f"{parent}/{id}" if parent else id


def unique_resource_name(construct: IConstruct, *, max_length: int, separator: str) -> str:
    """``Names.unique_resource_name(construct, max_length=..., separator=...)``, computed here
    from the construct's cached path and its stack's name with aws-cdk-lib's algorithm
    (``core/lib/private/unique-resource-name``: the path's ids from the top-level stack's name
    down, less ``Default``; the human part without ``Resource`` and repeated ids, cut in the
    middle to fit; then 8 hex digits of the path's MD5). A construct in a nested stack asks
    the kernel."""
    stack = stack_of(construct)
    facts = _facts(stack)
    if "stack name" not in facts:
        facts["stack name"] = None if stack.nested else stack.stack_name
    stack_name: str | None = facts["stack name"]
    stack_path, path = node_path(stack), node_path(construct)
    if stack_name is None or not path.startswith(f"{stack_path}/"):
        return Names.unique_resource_name(construct, max_length=max_length, separator=separator)
    components = [stack_name, *path[len(stack_path) + 1 :].split("/")]
    components = [component for component in components if component != "Default"]
    if len(components) == 1 and len(_alphanumeric(components[0])) <= max_length:
        return _alphanumeric(components[0])
    digest = hashlib.md5("/".join(components).encode(), usedforsecurity=False).hexdigest()
    human = separator.join(
        kept
        for kept in (_alphanumeric(c) for c in _without_repeats(components) if c != "Resource")
        if kept
    )
    human += separator
    if len(human) > max_length - 8:
        half = (max_length - 8) // 2
        human = human[:half] + human[-half:]
    return human + digest[:8].upper()


def _alphanumeric(component: str) -> str:
    return re.sub("[^A-Za-z0-9]", "", component)


def _without_repeats(components: list[str]) -> list[str]:
    """Drop each id that the id kept before it ends with (aws-cdk-lib's ``removeDupes``)."""
    kept: list[str] = []
    for component in components:
        if not kept or not kept[-1].endswith(component):
            kept.append(component)
    return kept
