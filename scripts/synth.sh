#!/usr/bin/env bash
# Set up, then synthesize the reference app into cdk.out/ (no AWS account or credentials).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
cdk synth --quiet "$@"
ls cdk.out/*.template.json
