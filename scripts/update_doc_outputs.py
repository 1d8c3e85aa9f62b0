"""Rewrite the command-line outputs the capacity-planning guide shows (`size`, `predict`) from
the commands themselves, so that a refit of the engine profiles or a new catalog fact cannot
leave them stale (tests/test_doc_outputs.py compares them).

Run after changing what those commands print: ``.venv/bin/python scripts/update_doc_outputs.py``.
The `recommend` example and the `model_validation.py --aggregate` table are kept by hand.
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cdk_sagemaker_llm.cli import main as cli  # noqa: E402

GUIDE = ROOT / "docs" / "guides" / "capacity-planning.md"


@dataclass(frozen=True)
class DocOutput:
    """One command's output in the guide: the text that precedes it and the one that follows
    it (both unique in the guide), the command's arguments, and whether its Markdown headings
    sit one level deeper in the guide."""

    before: str
    after: str
    argv: tuple[str, ...]
    demote_headings: bool = False

    def generate(self) -> str:
        """What the command prints now, as the guide shows it."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = cli(list(self.argv))
        if code not in (0, 1):
            raise SystemExit(f"{' '.join(self.argv)} exited {code}")
        text = out.getvalue()
        if self.demote_headings:
            text = "\n".join(
                f"#{line}" if line.startswith("#") else line for line in text.splitlines()
            )
        return text.rstrip() + "\n"

    def shown(self, guide: str) -> str:
        """What the guide shows now."""
        return self._split(guide)[1]

    def replace(self, guide: str) -> str:
        """The guide with this output regenerated."""
        head, _, tail = self._split(guide)
        return f"{head}{self.generate()}{tail}"

    def _split(self, guide: str) -> tuple[str, str, str]:
        head, found, rest = guide.partition(self.before)
        if not found:
            raise SystemExit(f"{GUIDE.name}: no {self.before!r}")
        body, found, tail = rest.partition(self.after)
        if not found:
            raise SystemExit(f"{GUIDE.name}: no {self.after!r} after {self.before!r}")
        return head + self.before, body, self.after + tail


OUTPUTS = (
    DocOutput(
        before="`cdk-sagemaker-llm size --model llama-2-13b --instance-type ml.p4d.24xlarge` "
        "prints:\n\n```text\n",
        after="```\n",
        argv=("size", "--model", "llama-2-13b", "--instance-type", "ml.p4d.24xlarge"),
    ),
    DocOutput(
        before="1,8,32,128 --engine tgi:1.4.5` prints:\n\n",
        after="\n**`cdk-sagemaker-llm recommend`**",
        argv=(
            "predict",
            "--model",
            "llama-2-13b",
            "--instance-type",
            "ml.g5.12xlarge",
            "--tensor-parallel-degree",
            "4",
            "--copies",
            "1",
            "--input-tokens",
            "256",
            "--output-tokens",
            "128",
            "--concurrency",
            "1,8,32,128",
            "--engine",
            "tgi:1.4.5",
        ),
        demote_headings=True,
    ),
)
"""The outputs the guide shows, each after the sentence that gives its command."""


def main() -> None:
    guide = GUIDE.read_text()
    for output in OUTPUTS:
        guide = output.replace(guide)
    GUIDE.write_text(guide)


if __name__ == "__main__":
    main()
