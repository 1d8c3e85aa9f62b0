"""The command-line outputs the guides show are what the commands print today (the guides'
`size` and `predict` examples had no test, and the `predict` one had gone stale after a refit
of the engine profiles). Regenerate them with ``python scripts/update_doc_outputs.py``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "update_doc_outputs.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("update_doc_outputs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["update_doc_outputs"] = module
    spec.loader.exec_module(module)
    return module


SCRIPT_MODULE = _script()


@pytest.mark.parametrize("output", SCRIPT_MODULE.OUTPUTS, ids=lambda o: o.argv[0])
def test_the_guide_shows_what_the_command_prints(output: Any) -> None:
    guide = SCRIPT_MODULE.GUIDE.read_text()
    assert output.shown(guide) == output.generate(), (
        "the guide's example is stale: run `python scripts/update_doc_outputs.py`"
    )
