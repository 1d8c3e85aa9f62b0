"""``help()`` on the public API: signatures show no large default objects, and each
props class documents each field."""

from __future__ import annotations

import dataclasses
import inspect
import pydoc

import pytest

import cdk_sagemaker_llm
from cdk_sagemaker_llm.prop_docs import field_docstrings


def _signature_lines(name: str) -> list[str]:
    text = pydoc.render_doc(getattr(cdk_sagemaker_llm, name), renderer=pydoc.plaintext)
    return [line for line in text.splitlines() if "(self" in line or "__init__" in line]


@pytest.mark.parametrize("name", ["LlmService", "EndpointBenchmark", "BenchmarkPricing"])
def test_signatures_show_no_whole_price_list(name: str) -> None:
    for line in _signature_lines(name):
        assert "ml.g5.xlarge" not in line and len(line) < 2000, line[:300]


def test_the_default_price_list_prints_short() -> None:
    shown = repr(cdk_sagemaker_llm.DEFAULT_PRICE_LIST)
    assert shown.startswith("PriceList(region=") and len(shown) < 100


PROPS_CLASSES = sorted(
    name
    for name in cdk_sagemaker_llm.__all__
    if dataclasses.is_dataclass(getattr(cdk_sagemaker_llm, name))
    and inspect.isclass(getattr(cdk_sagemaker_llm, name))
)


@pytest.mark.parametrize("name", PROPS_CLASSES)
def test_help_documents_each_field_of_a_props_class(name: str) -> None:
    cls = getattr(cdk_sagemaker_llm, name)
    documented = field_docstrings(cls)
    fields = [field.name for field in dataclasses.fields(cls) if field.init]
    assert [f for f in fields if not documented.get(f)] == [], f"{name}: undocumented fields"
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    assert "Fields:" in text and all(f"{field}: " in text for field in fields)
