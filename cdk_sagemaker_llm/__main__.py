"""``python -m cdk_sagemaker_llm``: the command line without the console script, so that
``init`` runs before any environment exists (from a clone, with any Python 3.11+)."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
