"""The optimization job's Lambda asset, bundled without Docker, runs without aws_cdk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cdk_sagemaker_llm.constructs.optimization_job import HANDLER_ASSET

ASSET_SCRIPT = """
import builtins, json, sys
# The editable install's finder would quietly serve modules the asset lacks: drop it, so the
# asset runs as in the Lambda, from its own files only.
sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
real_import = builtins.__import__
def guarded(name, *args, **kwargs):
    if name == "aws_cdk" or name.startswith(("aws_cdk.", "jsii", "constructs")):
        raise ImportError("the Lambda asset must not import " + name)
    return real_import(name, *args, **kwargs)
builtins.__import__ = guarded
import handler
from cdk_sagemaker_llm.lambdas.optimization_job import handler as h
answers = []
h.http_put = lambda url, body: answers.append(body)
event = {"RequestType": "Create", "ResponseURL": "https://example.com/response",
         "StackId": "arn:aws:cloudformation:us-west-2:1:stack/s/1", "RequestId": "r",
         "LogicalResourceId": "Job", "ResourceType": "Custom::Nothing", "ResourceProperties": {}}
handler.on_event(event, None)
print(json.dumps({"entry": [handler.on_event.__name__, handler.poll.__name__],
    "answer": answers[0], "cdk": [m for m in sys.modules if m.startswith("aws_cdk")]}))
"""


def test_the_bundled_asset_answers_without_aws_cdk(tmp_path: Path) -> None:
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
    assert out["entry"] == ["on_event", "poll"] and out["cdk"] == []
    assert out["answer"]["Status"] == "FAILED"
    assert "unsupported ResourceType" in out["answer"]["Reason"]
    assert sorted(p.name for p in (tmp_path / "cdk_sagemaker_llm").iterdir()) == [
        "__init__.py",
        "lambdas",
        "template_metadata.py",
    ]
    assert sorted(p.name for p in (tmp_path / "cdk_sagemaker_llm" / "lambdas").iterdir()) == [
        "__init__.py",
        "event_checks.py",
        "job_poll.py",
        "optimization_job",
        "runtime_support.py",
    ]


def test_the_asset_hash_follows_the_sources() -> None:
    assert HANDLER_ASSET.hash() == HANDLER_ASSET.hash() and len(HANDLER_ASSET.hash()) == 64
    targets = [target for target, _ in HANDLER_ASSET.files()]
    assert "cdk_sagemaker_llm/lambdas/runtime_support.py" in targets
