#!/usr/bin/env bash
# Set up, then lint, type-check and run the whole test suite. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
ruff check .
ruff format --check .
mypy
pytest "$@"
