"""The benchmark's Lambda asset, bundled without Docker, imports and runs without aws_cdk: every
module the handlers reach (the engine, its goodput objectives, the error type) is in it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cdk_sagemaker_llm.constructs.benchmark import HANDLER_ASSET

ASSET_SCRIPT = """
import builtins, json, sys
real_import = builtins.__import__
def guarded(name, *args, **kwargs):
    if name == "aws_cdk" or name.startswith(("aws_cdk.", "jsii", "constructs")):
        raise ImportError("the Lambda asset must not import " + name)
    return real_import(name, *args, **kwargs)
builtins.__import__ = guarded
import index
from cdk_sagemaker_llm.benchmarking.goodput import GoodputSlo
from cdk_sagemaker_llm.errors import ValidationError
try:
    GoodputSlo(ms_per_token=-1)
    refused = False
except ValidationError:
    refused = True
print(json.dumps({"entry": [index.on_event.__name__, index.advance.__name__,
    index.worker.__name__], "refused": refused,
    "cdk": [m for m in sys.modules if m.startswith("aws_cdk")]}))
"""


def test_the_bundled_benchmark_asset_imports_without_aws_cdk(tmp_path: Path) -> None:
    HANDLER_ASSET.bundle(tmp_path)
    completed = subprocess.run(
        [sys.executable, "-c", ASSET_SCRIPT],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    out = json.loads(completed.stdout.strip().splitlines()[-1])
    assert out == {"entry": ["on_event", "advance", "worker"], "refused": True, "cdk": []}
