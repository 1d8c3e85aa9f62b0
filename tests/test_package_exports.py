"""The package's lazy exports: every name resolves, and the type-checking imports match."""

from __future__ import annotations

import ast
import inspect

import cdk_sagemaker_llm


def test_every_export_resolves() -> None:
    for name in cdk_sagemaker_llm.__all__:
        assert getattr(cdk_sagemaker_llm, name) is not None, name


def test_type_checking_imports_list_exactly_the_exports() -> None:
    tree = ast.parse(inspect.getsource(cdk_sagemaker_llm))
    guarded = next(node for node in tree.body if isinstance(node, ast.If))
    imported = {
        alias.name
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == set(cdk_sagemaker_llm.__all__)


def test_unknown_names_raise_attribute_error() -> None:
    try:
        cdk_sagemaker_llm.NoSuchThing  # noqa: B018
    except AttributeError as error:
        assert "NoSuchThing" in str(error)
    else:
        raise AssertionError("expected AttributeError")
