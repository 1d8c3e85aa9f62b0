"""The documentation as tests read it: the README and every page of the site under docs/."""

from __future__ import annotations

import re

from conftest import PROJECT_ROOT

PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
DOCUMENTS = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").rglob("*.md"))]
"""The README and every page of the site (home, guides, development notes)."""


def documented_examples() -> dict[str, str]:
    """The Python blocks of every document, keyed by file and the line they start on."""
    examples = {}
    for document in DOCUMENTS:
        text = document.read_text()
        name = document.relative_to(PROJECT_ROOT).as_posix()
        for match in PYTHON_BLOCK.finditer(text):
            examples[f"{name}:{text[: match.start()].count(chr(10)) + 2}"] = match.group(1)
    return examples


def documentation_text() -> str:
    """The README and the site's pages, whitespace collapsed, for claims checked by phrase."""
    return " ".join(" ".join(document.read_text().split()) for document in DOCUMENTS)
