"""What commands that call AWS need before they start: botocore, a region and credentials.

Each problem is reported as one line naming the command-line flag or the variable that fixes it,
not as a traceback from deep inside botocore.
"""

from __future__ import annotations

CREDENTIALS_HINT = (
    "configure credentials the usual way (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
    "AWS_PROFILE, `aws configure` or `aws sso login`); any values do for a local "
    "--endpoint-url such as the loopback simulator"
)


def aws_environment_problem(region: str | None) -> str | None:
    """Why a command cannot call AWS with ``--region region`` (None: nothing is missing)."""
    try:
        import botocore.session
    except ModuleNotFoundError:
        return (
            "this command needs boto3, which a plain install leaves out: "
            "pip install 'cdk-sagemaker-llm[benchmark]'"
        )
    from ..benchmarking.region import NO_REGION, resolve_region

    session = botocore.session.get_session()
    if resolve_region(region, session) is None:
        return NO_REGION
    if session.get_credentials() is None:
        return f"no AWS credentials found: {CREDENTIALS_HINT}"
    return None
