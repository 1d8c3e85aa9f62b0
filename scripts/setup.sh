#!/usr/bin/env bash
# Idempotent set-up: a virtual environment with the package and its dev tools, and the
# pinned AWS CDK CLI from npm. Re-installs only when pyproject.toml or package*.json change.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  "$python" -m venv .venv
fi
wanted=$(cat pyproject.toml package.json package-lock.json | sha256sum | cut -d' ' -f1)
if [ "$(cat .venv/.setup-stamp 2>/dev/null)" != "$wanted" ]; then
  echo "setup: installing Python packages" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
  echo "setup: installing the CDK CLI" >&2
  npm ci --no-audit --no-fund --loglevel=error
  echo "$wanted" > .venv/.setup-stamp
fi
# The pinned SageMaker SDK wheel the image catalog is generated from, cached for the test that
# regenerates it offline (downloads only when the cache lacks it).
.venv/bin/python scripts/generate_image_catalog.py --download >/dev/null
