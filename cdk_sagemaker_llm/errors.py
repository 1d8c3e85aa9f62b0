"""The library's one error type for bad input: it names the property, the value and the fix."""

from __future__ import annotations

from typing import Any


class ValidationError(ValueError):
    """A construct property is invalid; raised at synth time, before anything is deployed.

    The message always has three parts: which property, which value, and how to fix it.
    """

    def __init__(self, prop: str, value: Any, problem: str, fix: str) -> None:
        self.prop = prop
        self.value = value
        self.problem = problem
        self.fix = fix
        super().__init__(f"{prop}={value!r}: {problem}. Fix: {fix}")
