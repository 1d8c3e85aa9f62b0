"""LoRA adapter components on a base component: the base container's LMI LoRA options they need.

An adapter inference component (``ComponentModel.lora_adapter(...)``) runs inside its base
component's container (SageMaker developer guide, "Fine-tune models with adapter inference
components"). LMI serves adapters only with ``OPTION_ENABLE_LORA=true`` and bounds them with
``OPTION_MAX_LORAS`` (distinct adapters in one batch, default 4) and ``OPTION_MAX_LORA_RANK``
(largest adapter rank, default 16) (djl-serving docs, "Adapters"). So every adapter attached to
a base running LMI must fit both bounds:

- on the component's own container (``ComponentModel.from_image``) the library sets what you
  left out: enable, as many adapters as are attached, the smallest vLLM rank covering every
  adapter's rank; what you set (``LmiOptions(lora=LmiLora(...))`` or raw ``environment``) is
  checked;
- a ``Model`` may be shared, so its environment is never changed, only checked: it must enable
  LoRA and its bounds (or LMI's defaults) must cover the adapters.

TGI has no such options (it loads the adapters listed in ``LORA_ADAPTERS`` at start-up; TGI
docs, "LoRA"), and a custom or imported container's are unknown: the adapters are noted, not
checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsii
from aws_cdk import Annotations, IStableAnyProducer, Lazy
from constructs import Construct

from .images import ContainerFamily, ContainerImage
from .serving_options import (
    LMI_DEFAULT_MAX_LORA_RANK,
    LMI_DEFAULT_MAX_LORAS,
    MAX_LORA_RANKS,
)
from .validation import ValidationError, check_range

__all__ = ["LoraAdapters", "LoraServer"]

ENABLE_LORA = "OPTION_ENABLE_LORA"
MAX_LORAS = "OPTION_MAX_LORAS"
MAX_LORA_RANK = "OPTION_MAX_LORA_RANK"


@dataclass(frozen=True)
class LoraServer:
    """One container an adapter would run in: its image and environment as rendered."""

    where: str
    """Where its environment is set, for messages (``image``, or the Model's path)."""
    image: ContainerImage | None
    environment: Mapping[str, str] | None
    """The explicit environment; None when unknown (an imported model)."""
    settable: bool
    """True for the component's own container, whose LoRA options the library may set."""

    def bound(self, name: str, lmi_default: int) -> int | None:
        """The LoRA bound ``name`` adapters must fit: the number set in the environment, else
        LMI's default on a container the library may not change; None when the library sets
        it (or it is a token)."""
        value = (self.environment or {}).get(name)
        if value is None:
            return None if self.settable else lmi_default
        try:
            return int(str(value))
        except ValueError:
            return None


class LoraAdapters:
    """The adapter components attached to one base component, checked against (and setting)
    its containers' LMI LoRA options."""

    def __init__(self, owner: Construct) -> None:
        self._owner = owner
        self._servers: list[LoraServer] = []
        self.ranks: dict[str, int] = {}
        """Each LMI-checked adapter's rank, by construct path."""

    def serve(self, server: LoraServer) -> Any:
        """Register a container of the base; for a settable one, return its environment as
        rendered at synth, when every adapter has attached (None when empty)."""
        self._servers.append(server)
        if not server.settable:
            return None
        return Lazy.any(_EnvironmentProducer(self, server))

    def attach(self, adapter: Construct, rank: int | None) -> None:
        """Check that ``adapter`` (of LoRA rank ``rank``) fits every container of the base;
        raise ValidationError naming the prop and the fix when it does not."""
        for server in self._servers:
            _require_vllm_engine(server, self._owner)
        checked = [server for server in self._servers if _is_lmi(server)]
        for server in self._servers:
            if server not in checked:
                Annotations.of(adapter).add_info(
                    f"LoRA options of {self._owner.node.path} ({server.where}) not checked: "
                    + _why_unchecked(server)
                )
        if not checked:
            return
        if rank is None:
            raise ValidationError(
                "lora_rank",
                None,
                f"the base component {self._owner.node.path} runs LMI, whose "
                f"{MAX_LORA_RANK} must cover every adapter's rank",
                "pass ComponentModel.lora_adapter(..., lora_rank=<r of the adapter's "
                "adapter_config.json>)",
            )
        check_range("lora_rank", rank, minimum=1, maximum=MAX_LORA_RANKS[-1])
        count = len(self.ranks) + 1
        for server in checked:
            self._check(server, count, rank)
        self.ranks[adapter.node.path] = rank

    def _check(self, server: LoraServer, count: int, rank: int) -> None:
        environment = server.environment or {}
        enabled = str(environment.get(ENABLE_LORA, "")).lower()
        if enabled == "false" or (not server.settable and enabled != "true"):
            raise ValidationError(
                f"base_component ({server.where})",
                self._owner.node.path,
                f"its LMI container does not enable LoRA ({ENABLE_LORA}="
                f"{environment.get(ENABLE_LORA, 'unset')}), so adapters cannot load",
                "serve the base with LmiOptions(lora=LmiLora(...)) (a shared Model is never "
                "changed by the library)",
            )
        most = server.bound(MAX_LORAS, LMI_DEFAULT_MAX_LORAS)
        if most is not None and count > most:
            raise ValidationError(
                "base_component",
                self._owner.node.path,
                f"this is adapter {count} of the base, whose {MAX_LORAS} is {most} "
                f"({server.where}): not every adapter could be in one batch",
                f"raise LmiLora(max_adapters=...) to at least {count}, or attach fewer adapters",
            )
        largest = server.bound(MAX_LORA_RANK, LMI_DEFAULT_MAX_LORA_RANK)
        if largest is not None and rank > largest:
            raise ValidationError(
                "lora_rank",
                rank,
                f"exceeds the base's {MAX_LORA_RANK} of {largest} ({server.where})",
                f"raise LmiLora(max_rank=...) to {_rank_bound([rank])} or more",
            )

    def completed(self, server: LoraServer) -> dict[str, str] | None:
        """``server``'s environment plus the LoRA options derived from the attached adapters."""
        environment = dict(server.environment or {})
        if self.ranks and _is_lmi(server):
            environment.setdefault(ENABLE_LORA, "true")
            environment.setdefault(MAX_LORAS, str(len(self.ranks)))
            environment.setdefault(MAX_LORA_RANK, str(_rank_bound(list(self.ranks.values()))))
        return dict(sorted(environment.items())) or None


@jsii.implements(IStableAnyProducer)
class _EnvironmentProducer:
    def __init__(self, adapters: LoraAdapters, server: LoraServer) -> None:
        self._adapters = adapters
        self._server = server

    def produce(self) -> Any:
        return self._adapters.completed(self._server)


def _is_lmi(server: LoraServer) -> bool:
    return (
        server.image is not None
        and server.image.family is ContainerFamily.LMI
        and server.environment is not None
    )


def _require_vllm_engine(server: LoraServer, owner: Construct) -> None:
    """LMI hosts LoRA adapters on its vLLM engine only (djl-serving docs, "Adapters")."""
    family = server.image.family if server.image is not None else None
    engine = str((server.environment or {}).get("OPTION_ROLLING_BATCH", ""))
    if family in (ContainerFamily.LMI_TENSORRT_LLM, ContainerFamily.LMI_NEURONX) or (
        family is ContainerFamily.LMI and engine in ("lmi-dist", "trtllm")
    ):
        label = engine if family is ContainerFamily.LMI else str(family and family.value)
        raise ValidationError(
            f"base_component ({server.where})",
            owner.node.path,
            f"runs LMI's {label} engine; LMI hosts LoRA adapters on its vLLM engine only",
            "serve the base with ContainerImage.lmi(...) and the vLLM backend",
        )


def _why_unchecked(server: LoraServer) -> str:
    if server.image is not None and server.image.family.is_tgi:
        return "TGI has no LoRA bounds to check; it loads the adapters in LORA_ADAPTERS"
    if server.environment is None:
        return "its container is imported, so its environment is unknown"
    return "only LMI's vLLM engine has the LoRA options the library checks"


def _rank_bound(ranks: list[int]) -> int:
    """The smallest rank vLLM accepts that covers every rank in ``ranks``."""
    return next(bound for bound in MAX_LORA_RANKS if bound >= max(ranks))
