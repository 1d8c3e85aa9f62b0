"""The README's Python examples run as written."""

from __future__ import annotations

import re

from conftest import PROJECT_ROOT

PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def readme_examples() -> list[str]:
    return PYTHON_BLOCK.findall((PROJECT_ROOT / "README.md").read_text())


def test_readme_has_examples() -> None:
    assert readme_examples()


def test_readme_examples_run() -> None:
    for example in readme_examples():
        if "app.synth()" not in example and "App(" not in example:
            continue  # fragments that need context of the reader's own stack
        namespace: dict[str, object] = {}
        exec(compile(example, "README.md", "exec"), namespace)


def test_the_hugging_face_token_exposure_is_documented_next_to_the_option() -> None:
    """The token is readable via DescribeModel; the docs say so and what to do instead."""
    from cdk_sagemaker_llm.constructs.model_source import ModelSource

    doc = " ".join((ModelSource.from_hugging_face.__doc__ or "").split())
    readme = " ".join((PROJECT_ROOT / "README.md").read_text().split())
    for text in (doc, readme):
        assert "DescribeModel" in text and "network_isolation=True" in text
        assert "from_s3" in text
