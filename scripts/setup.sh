#!/usr/bin/env bash
# Idempotent set-up: a virtual environment with the package and its dev tools (at the versions
# of constraints/tested.txt), a wheelhouse of the runtime dependencies for the wheel test, and
# from npm the pinned AWS CDK CLI and Node 22 (jsii no longer supports Node 20). Python and npm
# are all it needs: no system package manager (the browser the documentation site's test needs
# is the test command's own set-up: scripts/setup_browser.sh, run by scripts/test.sh).
# Re-installs only when pyproject.toml, the constraints or package*.json change.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  "$python" -m venv .venv
fi
wanted=$(cat pyproject.toml constraints/tested.txt package.json package-lock.json | sha256sum | cut -d' ' -f1)
if [ "$(cat .venv/.setup-stamp 2>/dev/null)" != "$wanted" ]; then
  pip=(.venv/bin/python -m pip --quiet --disable-pip-version-check)
  echo "setup: installing Python packages" >&2
  "${pip[@]}" install --upgrade pip
  "${pip[@]}" install -e '.[dev]' -c constraints/tested.txt
  echo "setup: filling .venv/wheelhouse (from pip's cache: no second download)" >&2
  rm -rf .venv/wheelhouse
  "${pip[@]}" download -d .venv/wheelhouse -c constraints/tested.txt aws-cdk-lib constructs boto3 pytest syrupy
  echo "setup: installing the CDK CLI and Node 22" >&2
  npm ci --no-audit --no-fund --loglevel=error
  echo "$wanted" > .venv/.setup-stamp
fi
# The pinned SageMaker SDK wheel the image catalog is generated from, cached for the test that
# regenerates it offline (downloads only when the cache lacks it).
.venv/bin/python scripts/generate_image_catalog.py --download >/dev/null
# The pinned npm tarball the JumpStart catalog is generated from, cached for the test that
# regenerates it offline (downloads only when the cache lacks it).
.venv/bin/python scripts/generate_jumpstart_catalog.py --download >/dev/null
