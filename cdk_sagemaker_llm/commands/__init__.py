"""Subcommands of the command line; each module has ``register(subparsers)``.

A module's ``register`` adds one subparser and sets ``handler=<function(args) -> int>`` on it
with ``set_defaults``. Add the module's name to ``COMMAND_MODULES`` to make it available.
"""

COMMAND_MODULES: tuple[str, ...] = (
    "init",
    "plan",
    "size",
    "predict",
    "recommend",
    "benchmark",
    "report",
    "simulate",
    "calibrate",
)
"""Modules under ``cdk_sagemaker_llm.commands`` registered with the command line, in order."""
