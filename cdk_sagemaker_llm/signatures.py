"""Real constructor signatures at run time, for ``help()``, IPython and Jupyter.

jsii's metaclass (``JSIIMeta``) defines ``__call__(cls, *args, **kwargs)``, so
``inspect.signature`` of a construct class reports that instead of the class's ``__init__``
(aws-cdk-lib's own classes show ``(*args, **kwargs)``). ``inspect.signature`` reads a
``__signature__`` attribute before it looks at the metaclass (the ``inspect`` module's
documentation: "If the object has a ``__signature__`` attribute ... this function returns
it"), so a class that carries ``InitSignature`` shows its ``__init__``'s parameters, without
``self``. The metaclass, and so jsii's object creation, is left as it is.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["InitSignature", "expose_init_signature"]


class InitSignature:
    """Descriptor: on a class, the signature of that class's own ``__init__`` without
    ``self`` (a subclass gets its own); on an instance, absent."""

    def __get__(self, instance: object, owner: type) -> inspect.Signature:
        if instance is not None:
            raise AttributeError("__signature__")  # an instance is not called: no signature
        signature = inspect.signature(owner.__init__)  # type: ignore[misc]
        parameters = list(signature.parameters.values())[1:]  # without self
        return signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty)


def expose_init_signature(cls: Any) -> None:
    """Give ``cls`` (and its subclasses) the signature of its ``__init__`` at run time."""
    if "__signature__" not in vars(cls):
        cls.__signature__ = InitSignature()
