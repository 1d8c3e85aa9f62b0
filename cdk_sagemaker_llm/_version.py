"""The package's version, its single source: hatch reads it into the wheel's metadata
(``[tool.hatch.version]`` in pyproject.toml), the package root re-exports it as
``cdk_sagemaker_llm.__version__`` and ``cdk-sagemaker-llm --version`` prints it. Semantic
Versioning; see "Versioning" in the README. A release changes it together with CHANGELOG.md."""

__version__ = "0.1.0"
