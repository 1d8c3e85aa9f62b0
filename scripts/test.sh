#!/usr/bin/env bash
# Set up (and the documentation site's browser, when it can be installed), then lint (ruff, actionlint), type-check, build the documentation site and run the
# whole test suite.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup_browser.sh
source scripts/env.sh
ruff check .
ruff format --check .
mypy
# The release workflow (and any other): expressions, action inputs, runner images, shell.
actionlint -color=false .github/workflows/*.yml
# The documentation site: any warning (a broken link or anchor, a missing snippet, a docstring
# the API reference cannot render) fails the build. Not --quiet: it hides the warnings, and
# strict mode then counts none. NO_MKDOCS_2_WARNING: Material's end-of-life banner.
NO_MKDOCS_2_WARNING=1 mkdocs build --strict
# The browser test opens this build rather than building the site a second time.
# One worker per core this process may run on (pytest-xdist; scripts/cores.py counts them:
# `-n auto` would count the host's physical cores where psutil is installed), each test module
# on one worker (--dist loadfile), so a module's fixtures (a synthesized stack, a fitted
# profile) are built once. Extra arguments go to pytest after these (`-n 0`: one process).
workers=$(python scripts/cores.py)
CDK_SAGEMAKER_LLM_SITE=site pytest -n "$workers" --dist loadfile "$@"
