"""Rewrite the plan guide's example of `cdk-sagemaker-llm plan` (docs/guides/plan.md) from the
reference app's assembly.

Run after changing the reference stacks: ``.venv/bin/python scripts/update_readme_plan.py``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import json  # noqa: E402

import aws_cdk as cdk  # noqa: E402

from app import build_app  # noqa: E402
from cdk_sagemaker_llm.review import build_plan, render_markdown  # noqa: E402

GUIDE = ROOT / "docs" / "guides" / "plan.md"
MARKER = "On the reference app it prints:"
FENCE = "````"


def main() -> None:
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    with tempfile.TemporaryDirectory() as outdir:
        app = cdk.App(outdir=outdir, context=context)
        build_app(app)
        app.synth()
        plan = render_markdown(build_plan(Path(outdir)))
    before, after = GUIDE.read_text().split(MARKER, 1)
    opening, rest = after.split(f"{FENCE}markdown\n", 1)
    _, closing = rest.split(FENCE, 1)
    block = f"{FENCE}markdown\n{plan.rstrip()}\n{FENCE}"
    GUIDE.write_text(f"{before}{MARKER}{opening}{block}{closing}")


if __name__ == "__main__":
    main()
