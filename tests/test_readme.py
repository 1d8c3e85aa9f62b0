"""Every Python block of the README runs as written, each on its own (a fresh namespace and
its own ``App``), in a temporary directory so that synthesized output stays out of the tree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT

PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def readme_examples() -> dict[str, str]:
    """The README's Python blocks, keyed by the line they start on."""
    text = (PROJECT_ROOT / "README.md").read_text()
    return {
        f"README.md:{text[: match.start()].count(chr(10)) + 2}": match.group(1)
        for match in PYTHON_BLOCK.finditer(text)
    }


def test_readme_has_examples() -> None:
    assert len(readme_examples()) >= 5


@pytest.mark.parametrize("where", sorted(readme_examples()))
def test_readme_example_runs_as_written(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__readme__"}
    exec(compile(readme_examples()[where], where, "exec"), namespace)


def test_the_hugging_face_token_exposure_is_documented_next_to_the_option() -> None:
    """The token is readable via DescribeModel; the docs say so and what to do instead."""
    from cdk_sagemaker_llm.constructs.model_source import ModelSource

    doc = " ".join((ModelSource.from_hugging_face.__doc__ or "").split())
    readme = " ".join((PROJECT_ROOT / "README.md").read_text().split())
    for text in (doc, readme):
        assert "DescribeModel" in text and "network_isolation=True" in text
        assert "from_s3" in text
