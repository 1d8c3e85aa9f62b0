"""Which Hugging Face Hub repositories are gated: a download of their files needs a token of an
account that has accepted the authors' conditions; and the repository id a pasted Hub page URL
names (``hub_url_id``), for the messages that refuse a URL where an id belongs.

A gated repository answers an anonymous download with 401 ("Access to model ... is
restricted. You must be authenticated to access it."), so a container given its id and no
``HF_TOKEN`` fails at start, at deploy time. Hugging Face's "Gated models" page
(https://huggingface.co/docs/hub/models-gated) describes the mechanism; each fact below cites
the model cards that show the gate ("You need to agree to share your contact information to
access this model" / "Access Gemma on Hugging Face"). An id no fact covers is unknown, not
ungated: the library allows it (gating is a repository setting its authors may change).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class HubGate:
    """Whether the repositories an id prefix names are gated, and where that is shown."""

    prefix: str
    """An organization (``"meta-llama/"``: all its repositories) or a repository family
    (``"mistralai/Mistral-7B"``: the id itself or any id continuing with ``-``)."""
    gated: bool
    """True when downloading needs a token with accepted access."""
    source: str
    """The model card (or cards) showing the gate, or its absence."""

    def covers(self, model_id: str) -> bool:
        """True when ``model_id`` (case-insensitive) is one of the repositories named."""
        wanted, prefix = model_id.strip().lower(), self.prefix.lower()
        if prefix.endswith("/"):
            return wanted.startswith(prefix) and len(wanted) > len(prefix)
        return wanted == prefix or wanted.startswith(prefix + "-")


HUB_GATES: tuple[HubGate, ...] = (
    HubGate(
        "meta-llama/",
        True,
        "Every Llama repository of the meta-llama organization asks for the Llama licence's "
        "acceptance (model cards' extra_gated_prompt, e.g. "
        "https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct, "
        "https://huggingface.co/meta-llama/Llama-3.2-3B)",
    ),
    HubGate(
        "google/gemma",
        True,
        "Gemma model cards: 'To access Gemma on Hugging Face, you're required to review and "
        "agree to Google's usage license' (e.g. https://huggingface.co/google/gemma-2-2b-it)",
    ),
    HubGate(
        "mistralai/Mistral-7B",
        True,
        "Mistral 7B model cards: 'You need to agree to share your contact information to "
        "access this model' (e.g. https://huggingface.co/mistralai/Mistral-7B-Instruct-v0.2)",
    ),
    HubGate(
        "tiiuae/falcon-180B",
        True,
        "Falcon-180B's model card: 'Acknowledge license to access the repository' (the "
        "Falcon-180B TII Licence; https://huggingface.co/tiiuae/falcon-180B)",
    ),
    HubGate(
        "tiiuae/falcon-7b",
        False,
        "Apache 2.0, no access request (https://huggingface.co/tiiuae/falcon-7b)",
    ),
    HubGate(
        "tiiuae/falcon-40b",
        False,
        "Apache 2.0, no access request (https://huggingface.co/tiiuae/falcon-40b)",
    ),
)
"""The known gates (the longest matching prefix decides). Mixtral 8x7B is not here: no model
card at hand shows its gate either way, so its ids stay unknown (allowed)."""


def hub_gate(model_id: str) -> HubGate | None:
    """The fact covering ``model_id`` (the longest matching prefix), or None when unknown."""
    found = [gate for gate in HUB_GATES if gate.covers(model_id)]
    return max(found, key=lambda gate: len(gate.prefix)) if found else None


def is_gated(model_id: str) -> bool:
    """True when a fact says ``model_id``'s repository is gated; False when it is known to be
    open or not known at all (an unknown id is allowed)."""
    gate = hub_gate(model_id)
    return gate is not None and gate.gated


def ungated_example() -> str:
    """A model id the facts above say is ungated (``tiiuae/falcon-7b``), for a message's
    example: one a reader can pass without a token."""
    return next(
        gate.prefix for gate in HUB_GATES if not gate.gated and not gate.prefix.endswith("/")
    )


_HUB_URL = re.compile(r"^(?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/(.*)$", re.IGNORECASE)
_NON_MODEL_PAGES = frozenset({"datasets", "spaces", "docs", "models", "collections", "papers"})
"""First path segments of Hub pages that are not a model repository (``huggingface.co/spaces/
<owner>/<space>``, ``/models?search=...``): no model id can be read from their URL."""


def is_url(text: str) -> bool:
    """True when ``text`` is a URL (a Hub page's, with or without its scheme, or any
    ``scheme://``), not a repository id."""
    return _HUB_URL.match(text) is not None or "://" in text


def hub_url_id(text: str) -> str | None:
    """The ``<organization>/<model>`` a Hub model page's URL names
    (``https://huggingface.co/Qwen/Qwen2-7B/tree/main`` -> ``Qwen/Qwen2-7B``); None for
    anything else (not a Hub URL, an organization's page, a Space, a dataset, a search)."""
    url = _HUB_URL.match(text)
    if url is None:
        return None
    path = url.group(1).split("?")[0].split("#")[0]
    parts = [part for part in path.split("/") if part][:2]
    if len(parts) != 2 or parts[0].lower() in _NON_MODEL_PAGES:
        return None
    return "/".join(parts)
