"""Synth cost (issue 19, item 9): what a stack that uses no optional feature imports. Time is
measured in benchmarks/synth_time.py; this checks the cause deterministically: the core path
(a model, an inference-component endpoint, a component) loads the same aws-cdk-lib modules as
the plain L1 app (``aws_iam``, ``aws_sagemaker``), not the bindings of asynchronous inference
(S3, SNS, KMS), of CloudWatch or of Application Auto Scaling."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import PROJECT_ROOT

CORE_APP = (PROJECT_ROOT / "benchmarks" / "synth" / "library_app.py").read_text()


def aws_cdk_modules_loaded(code: str) -> set[str]:
    probe = (
        "import sys, json\n"
        + code
        + "\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('aws_cdk.aws_') "
        "and not m.endswith('._private'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=PROJECT_ROOT,
        check=True,
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_core_path_loads_only_what_plain_l1_loads(tmp_path: object) -> None:
    code = CORE_APP.replace("sys.argv[1]", repr(str(tmp_path)))
    assert aws_cdk_modules_loaded(code) == {"aws_cdk.aws_iam", "aws_cdk.aws_sagemaker"}
