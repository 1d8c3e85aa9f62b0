"""The run-time type checks bind arguments as ``inspect.Signature.bind`` does (the checks bind
a plain signature without it, for synth time)."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from cdk_sagemaker_llm.catalog.instance_types import CATALOG
from cdk_sagemaker_llm.catalog.model_specs import PRESETS, ModelSpec
from cdk_sagemaker_llm.catalog.prices import DEFAULT_PRICE_LIST
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.prop_types import _binder, trusted, typed_factory


def plain(self: Any, a: int, b: str = "x", *, c: float = 1.0, d: int | None = None) -> None:
    """Positional-or-keyword and keyword-only parameters only."""


def variadic(a: int, *rest: int, **options: Any) -> None:
    """A signature the fast path leaves to ``Signature.bind``."""


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((0, 1), {}),
    ((0,), {"a": 1}),
    ((0, 1, "y"), {"d": 4, "c": 2.0}),
    ((0,), {"d": 4, "a": 1, "b": "z"}),
    ((0, 1), {"a": 2}),  # a given twice
    ((0, 1, "y", 3.0), {}),  # c is keyword-only
    ((0,), {}),  # a missing
    ((0, 1), {"e": 5}),  # no such parameter
    ((), {}),
]


@pytest.mark.parametrize(("function"), [plain, variadic])
@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_binds_as_signature_bind(function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]):
    signature = inspect.signature(function)
    try:
        expected: Any = list(signature.bind(*args, **kwargs).arguments.items())
    except TypeError as error:
        expected = str(error)
    try:
        bound: Any = _binder(signature)(args, kwargs)
    except TypeError as error:
        bound = str(error)
    assert bound == expected


class Factory:
    @staticmethod
    @typed_factory
    def of(a: int, b: str = "x", *, c: float = 1.0) -> tuple[int, str, float]:
        return a, b, c


def test_checked_factory_binds_and_reports():
    assert Factory.of(1, c=2.0) == (1, "x", 2.0)
    with pytest.raises(ValidationError, match="missing a required argument: 'a'"):
        Factory.of(b="y")
    with pytest.raises(ValidationError, match="unexpected keyword argument 'd'"):
        Factory.of(1, d=2)
    with pytest.raises(ValidationError, match=r"Factory\.of\(b\)"):
        Factory.of(1, 2)
    # The first wrong argument in the parameters' order is reported, whatever the call's order.
    with pytest.raises(ValidationError, match=r"Factory\.of\(a\)"):
        Factory.of(c="no", b=3, a="no")


def _init_values(instance: Any) -> dict[str, Any]:
    return {f.name: getattr(instance, f.name) for f in dataclasses.fields(instance) if f.init}


def test_the_catalogs_trusted_entries_pass_the_checks():
    """The catalog builds its constants without the run-time checks (``trusted``, for
    import cost); built again through the checked constructors, each is accepted and equal."""
    entries: list[Any] = [
        *CATALOG.values(),
        *{t.accelerator for t in CATALOG.values() if t.accelerator is not None},
        *PRESETS.values(),
        DEFAULT_PRICE_LIST,
    ]
    for entry in entries:
        assert type(entry)(**_init_values(entry)) == entry, entry


def test_trusted_skips_the_type_check_but_not_the_class_validation():
    build = trusted(ModelSpec)
    with pytest.raises(ValidationError, match="layers"):
        ModelSpec("m", 1e9, "32", 32, 8, 128, 4_096)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):  # __post_init__ still refuses a negative count
        build("m", 1e9, -32, 32, 8, 128, 4_096)
    assert build("m", 1e9, 32, 32, 8, 128, 4_096) == ModelSpec("m", 1e9, 32, 32, 8, 128, 4_096)


def test_a_call_that_does_not_bind_names_the_props_given_never_their_values():
    """A misspelt prop is reported with the names of the props given and the nearest prop the
    signature takes; the values (a token in ``environment``) stay out of the message."""

    @typed_factory
    def serve(*, source: str | None = None, environment: dict[str, str] | None = None) -> None:
        return None

    with pytest.raises(ValidationError) as caught:
        serve(environment={"HF_TOKEN": "hf_not_for_logs"}, sorce="s3://bucket/")
    message = str(caught.value)
    assert "hf_not_for_logs" not in message
    assert "s3://bucket/" not in message
    assert "environment, sorce" in message
    assert "did you mean source?" in caught.value.fix
