"""ARCHITECTURE.md's module list names every module of ``cdk_sagemaker_llm/`` (one concept per
module), so a new module is placed on the map when it is added."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "cdk_sagemaker_llm"


def _modules() -> list[str]:
    return sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" and "init_template" not in path.parts
    )


def _blocks(text: str) -> dict[str, str]:
    """The Modules section's paragraphs by heading: ``**`planning/`.**`` is ``planning``,
    ``**Package root.**`` is ``""``."""
    section = text.partition("\n## Modules\n")[2].partition("\n## ")[0]
    blocks = {}
    for paragraph in section.split("\n\n"):
        heading = re.match(r"\*\*(?:`(\w+)/`|Package root)\.\*\*", paragraph)
        if heading:
            blocks[heading.group(1) or ""] = paragraph
    return blocks


def _unnamed(text: str) -> list[str]:
    """The modules whose file name the paragraph of their top-level folder does not name
    (``handler.py`` or ``optimization_job/handler.py``)."""
    blocks = _blocks(text)
    missing = []
    for module in _modules():
        folder = module.partition("/")[0] if "/" in module else ""
        name = module.rpartition("/")[2]
        block = blocks.get(folder, "")
        if f"`{name}`" not in block and f"/{name}`" not in block:
            missing.append(module)
    return missing


def test_architecture_names_every_module() -> None:
    assert _unnamed((ROOT / "ARCHITECTURE.md").read_text()) == []


def test_the_check_finds_a_module_the_list_leaves_out() -> None:
    # Negative control: without its planning/ paragraph the list misses planning's modules.
    text = (ROOT / "ARCHITECTURE.md").read_text()
    without = re.sub(r"\*\*`planning/`\.\*\*.*?\n\n", "", text, flags=re.S)
    assert "planning/sizing.py" in _unnamed(without)
