"""The API reference (the built documentation site) shows each public class's constructor: its
signature with types and defaults, and for every construct a parameters table with each
parameter's docs; no attribute shows the private expression it was assigned from."""

from __future__ import annotations

import html
import inspect
import re
from enum import Enum
from pathlib import Path

import pytest
from constructs import Construct

import cdk_sagemaker_llm

PACKAGE = "cdk_sagemaker_llm"
MAIN_CONSTRUCTS = (
    "LlmService", "Model", "Endpoint", "InferenceComponentEndpoint", "EndpointBenchmark",
    "OptimizationJob", "ComponentScaling", "VariantScaling",
)  # fmt: skip


def _public_classes() -> dict[str, type]:
    classes = {}
    for name in cdk_sagemaker_llm.__all__:
        value = getattr(cdk_sagemaker_llm, name)
        if (
            isinstance(value, type)
            and not issubclass(value, Enum)
            and getattr(value.__init__, "__module__", "").startswith(PACKAGE)
        ):
            classes[name] = value
    return classes


CLASSES = _public_classes()


@pytest.fixture(scope="module")
def sections(site: Path) -> dict[str, str]:
    """Each documented class's section of the reference (its heading to the next class's or
    module's heading), by the class's full path."""
    found = {}
    for page in (site / "reference").glob("*/index.html"):
        text = page.read_text()
        for match in re.finditer(r'<h3 id="([\w.]+)" class="doc doc-heading">', text):
            end = re.compile(r"<h[23] id=").search(text, match.end())
            found[match.group(1)] = text[match.start() : end.start() if end else len(text)]
    return found


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment)))


def _section(sections: dict[str, str], cls: type) -> str:
    path = f"{cls.__module__}.{cls.__qualname__}"
    assert path in sections, f"{path} is not in the API reference"
    return sections[path]


def _signature(section: str) -> str:
    return _text(section.split('<div class="doc-signature highlight">', 1)[1].split("</pre>")[0])


@pytest.mark.parametrize("name", MAIN_CONSTRUCTS)
def test_a_main_construct_shows_its_parameters_with_types_defaults_and_docs(
    sections: dict[str, str], name: str
) -> None:
    cls = CLASSES[name]
    assert issubclass(cls, Construct)
    section = _section(sections, cls)
    shown = _signature(section)
    table = _text(section.split("Parameters:", 1)[1].split("</table>", 1)[0])
    for parameter in list(inspect.signature(cls).parameters.values())[2:]:
        assert f"{parameter.name} :" in shown, (name, parameter.name)
        if parameter.default is None:
            assert re.search(rf"\b{parameter.name} : [^=]+?= None", shown), parameter.name
        documented = re.search(rf"\b{parameter.name} (\S+)", table)
        assert documented, (name, parameter.name, "not in the parameters table")


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_every_public_class_shows_its_constructor(sections: dict[str, str], name: str) -> None:
    cls = CLASSES[name]
    shown = _signature(_section(sections, cls))
    for parameter in inspect.signature(cls).parameters:
        assert re.search(rf"\b{parameter}\b", shown), (name, parameter)


def test_no_private_expression_is_shown_as_a_value(site: Path) -> None:
    for page in (site / "reference").glob("*/index.html"):
        text = _text(page.read_text())
        assert not re.search(r"=\s*self\s*\.\s*_", text), page.parent.name
        assert "self._" not in text.replace(" ", ""), page.parent.name
