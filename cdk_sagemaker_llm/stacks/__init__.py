"""Ready stacks composed from the constructs (reference deployments)."""

from .reference import LlamaInferenceComponentStack

__all__ = ["LlamaInferenceComponentStack"]
