"""``inspect.signature`` of every public class gives its ``__init__``'s parameters (what
``help()``, IPython and Jupyter show), jsii constructs included, whose metaclass would
otherwise show ``(*args, **kwargs)``; and jsii still builds the constructs."""

from __future__ import annotations

import inspect
import pydoc
from enum import Enum

import pytest
from conftest import new_stack
from constructs import Construct

import cdk_sagemaker_llm
from cdk_sagemaker_llm import InferenceComponentEndpoint, InstanceType, ManagedInstanceScaling

PACKAGE = "cdk_sagemaker_llm"


def _public_classes() -> list[tuple[str, type]]:
    classes = []
    for name in cdk_sagemaker_llm.__all__:
        value = getattr(cdk_sagemaker_llm, name)
        if not isinstance(value, type) or issubclass(value, Enum):
            continue
        if getattr(value.__init__, "__module__", "").startswith(PACKAGE):
            classes.append((name, value))
    return classes


PUBLIC = _public_classes()
CONSTRUCTS = [(name, cls) for name, cls in PUBLIC if issubclass(cls, Construct)]


def test_the_public_api_has_constructs_and_props_classes() -> None:
    assert len(CONSTRUCTS) >= 15 and len(PUBLIC) - len(CONSTRUCTS) >= 30
    assert "LlmService" in dict(CONSTRUCTS) and "EndpointBenchmark" in dict(CONSTRUCTS)


@pytest.mark.parametrize(("name", "cls"), PUBLIC, ids=[name for name, _ in PUBLIC])
def test_the_class_signature_is_its_init_without_self(name: str, cls: type) -> None:
    init = list(inspect.signature(cls.__init__).parameters.values())
    shown = list(inspect.signature(cls).parameters.values())
    assert shown == init[1:], name
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in shown) or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in init
    ), name


@pytest.mark.parametrize(("name", "cls"), CONSTRUCTS, ids=[name for name, _ in CONSTRUCTS])
def test_a_construct_shows_scope_id_and_its_keyword_props(name: str, cls: type) -> None:
    parameters = inspect.signature(cls).parameters
    assert list(parameters)[:2] == ["scope", "id"], name
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in list(parameters.values())[2:])


def test_help_shows_the_props_with_their_defaults() -> None:
    text = pydoc.render_doc(cdk_sagemaker_llm.LlmService, renderer=pydoc.plaintext)
    assert "LlmService(scope: 'Construct', id: 'str', *, model: 'ServiceModel'" in text
    assert "sizing: 'Sizing | None' = None" in text
    assert "*args" not in text.split("Method resolution order")[0]


def test_a_subclass_shows_its_own_init() -> None:
    class Team(InferenceComponentEndpoint):
        def __init__(self, scope: Construct, id: str, *, team: str) -> None:
            super().__init__(
                scope,
                id,
                instance_type=InstanceType.G5_12XLARGE,
                instance_scaling=ManagedInstanceScaling(max_instance_count=1),
            )
            self.team = team

    assert list(inspect.signature(Team).parameters) == ["scope", "id", "team"]
    built = Team(new_stack(), "Endpoint", team="search")  # jsii still builds it
    assert built.node.id == "Endpoint" and built.team == "search"
    assert not hasattr(built, "__signature__")  # instances are not called: no signature
