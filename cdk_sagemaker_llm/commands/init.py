"""``cdk-sagemaker-llm init [DIR]``: scaffold a platform app that uses the library.

The files come from ``init_template/`` (``*.tmpl``, with ``{{placeholders}}``): ``app.py``
(an ``LlmService`` and an inference-component endpoint), ``cdk.json``, requirements files
pinning this release, ``package.json`` (the AWS CDK CLI and Node.js 22 from npm, as this
project's own set-up gets them), ``.gitignore``, ``pytest.ini``, a snapshot test and a README.
"""

from __future__ import annotations

import argparse
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from .._version import __version__

CDK_CLI_VERSION = "2.1148.1"
"""The AWS CDK CLI the scaffold pins: the one this project tests with (its package.json)."""
NODE_VERSION = "22.23.3"
"""npm's ``node`` package the scaffold pins (Node.js 22: jsii no longer supports Node 20)."""

_FILES = {
    "app.py.tmpl": "app.py",
    "cdk.json.tmpl": "cdk.json",
    "requirements.txt.tmpl": "requirements.txt",
    "requirements-dev.txt.tmpl": "requirements-dev.txt",
    "package.json.tmpl": "package.json",
    "gitignore.tmpl": ".gitignore",
    "pytest.ini.tmpl": "pytest.ini",
    "README.md.tmpl": "README.md",
    "tests/test_app.py.tmpl": "tests/test_app.py",
}
"""Each template and the file it becomes in the new app."""


def register(subparsers: Any) -> None:
    """Add the ``init`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "init",
        help="scaffold a CDK app that serves LLMs with this library",
        description="Write a platform app into DIR (default: the current directory): app.py "
        "with an LlmService and an inference-component endpoint, cdk.json, requirements "
        f"pinning cdk-sagemaker-llm {__version__}, package.json (the AWS CDK CLI and Node.js "
        "22 from npm), .gitignore, a snapshot test and a README. Refuses to overwrite a file.",
    )
    parser.add_argument("directory", nargs="?", default=".", metavar="DIR")
    parser.add_argument(
        "--stack-name",
        default="LlmPlatform",
        help="id of the app's stack, also its CloudFormation stack name (default LlmPlatform)",
    )
    parser.set_defaults(handler=run)


def render(directory: Path, stack_name: str) -> dict[str, str]:
    """The scaffold's files (relative path -> text) for an app in ``directory``."""
    name = directory.resolve().name or "llm-platform"
    values = {
        "name": name,
        "package": re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "llm-platform",
        "stack": stack_name,
        "version": __version__,
        "cdk_cli": CDK_CLI_VERSION,
        "node": NODE_VERSION,
    }
    templates = resources.files(__package__).joinpath("init_template")
    files = {}
    for template, target in _FILES.items():
        text = templates.joinpath(template).read_text(encoding="utf-8")
        files[target] = re.sub(r"\{\{(\w+)\}\}", lambda match: values[match.group(1)], text)
    return files


def run(args: argparse.Namespace) -> int:
    """Write the scaffold; exit 2 (writing nothing) when a file exists or the name is bad."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", args.stack_name):
        print(
            f"error: --stack-name {args.stack_name!r}: a stack name starts with a letter and "
            "has only letters, digits and hyphens",
            file=sys.stderr,
        )
        return 2
    directory = Path(args.directory)
    files = render(directory, args.stack_name)
    existing = sorted(path for path in files if (directory / path).exists())
    if existing:
        print(
            f"error: {directory} already has {', '.join(existing)}: init writes into a new or "
            "empty directory and never overwrites",
            file=sys.stderr,
        )
        return 2
    for path, text in files.items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    print(f"Wrote a CDK app to {directory}/ ({', '.join(files)}).")
    print(f"Next: cd {directory} and follow README.md (set up, npx cdk synth, pytest).")
    return 0
