"""Every Python block of the README and of the documentation site (docs/, guides and home page)
runs as written, each on its own (a fresh namespace and its own ``App``), in a temporary
directory so that synthesized output stays out of the tree."""

from __future__ import annotations

from pathlib import Path

import pytest
from documentation import documentation_text, documented_examples


def test_the_readme_and_the_guides_have_examples() -> None:
    examples = documented_examples()
    assert any(where.startswith("README.md:") for where in examples)
    guides = {where.split(":")[0] for where in examples if where.startswith("docs/guides/")}
    assert len(guides) >= 7, guides
    assert len(examples) >= 15


@pytest.mark.parametrize("where", sorted(documented_examples()))
def test_documented_example_runs_as_written(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__readme__"}
    exec(compile(documented_examples()[where], where, "exec"), namespace)


def test_the_hugging_face_token_exposure_is_documented_next_to_the_option() -> None:
    """The token is readable via DescribeModel; the docs say so and what to do instead."""
    from cdk_sagemaker_llm.constructs.model_source import ModelSource

    doc = " ".join((ModelSource.from_hugging_face.__doc__ or "").split())
    for text in (doc, documentation_text()):
        assert "DescribeModel" in text and "network_isolation=True" in text
        assert "from_s3" in text


def test_the_guides_say_deleting_a_benchmark_stops_its_run() -> None:
    """The handler stops the run's execution on Delete (lambdas/benchmark/
    custom_resource.py, stop_run); the guide said deleting did nothing."""
    text = " ".join(documentation_text().split())
    assert "Deleting does nothing" not in text
    assert "Deleting the benchmark stops its run's Step Functions execution" in text
