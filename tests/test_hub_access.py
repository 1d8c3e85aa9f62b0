"""The catalog's Hugging Face gating facts: which Hub repositories need a token, each with
its source, covering every preset's ids; an id no fact covers is unknown (allowed)."""

from __future__ import annotations

import pytest

from cdk_sagemaker_llm.catalog.hub_access import (
    HUB_GATES,
    hub_gate,
    hub_url_id,
    is_gated,
    is_url,
    ungated_example,
)
from cdk_sagemaker_llm.catalog.model_specs import PRESETS


def test_every_gate_fact_cites_a_model_card() -> None:
    for gate in HUB_GATES:
        assert "https://huggingface.co/" in gate.source, gate.prefix


UNKNOWN_PRESET_IDS = {"mistralai/Mixtral-8x7B": "no model card at hand shows its gate"}
"""Preset ids the catalog has no gate fact for (allowed without a token), and why."""


def test_every_preset_hugging_face_id_has_a_gate_fact_or_a_reason() -> None:
    """The presets' ids are the ones users write most: each is known gated or known open,
    or listed here with why it is not."""
    unknown = set()
    for spec in PRESETS.values():
        for model_id in spec.hugging_face_ids:
            if hub_gate(model_id) is None or hub_gate(model_id + "-Instruct") is None:
                unknown.add(model_id)
    assert unknown == set(UNKNOWN_PRESET_IDS)


@pytest.mark.parametrize(
    ("model_id", "gated"),
    [
        ("meta-llama/Llama-3.3-70B-Instruct", True),
        ("meta-llama/Llama-Guard-3-8B", True),
        ("google/gemma-7b", True),
        ("Mistralai/mistral-7b-v0.1", True),
        ("tiiuae/falcon-180B", True),
        ("tiiuae/falcon-7b", False),
        ("tiiuae/falcon-40b-instruct", False),
    ],
)
def test_a_known_repository_is_gated_or_open_as_its_model_card_says(
    model_id: str, gated: bool
) -> None:
    assert is_gated(model_id) is gated


@pytest.mark.parametrize(
    "model_id",
    [
        "Qwen/Qwen2.5-7B-Instruct",
        "meta-llama",  # an organization alone is no repository
        "meta-llama/",
        "google/flan-t5-xl",  # another family of the same organization
        "mistralai/Mistral-7Bx",  # a family prefix matches only up to '-'
        "someone/meta-llama-copy",
    ],
)
def test_an_id_no_fact_covers_is_unknown_and_not_gated(model_id: str) -> None:
    assert hub_gate(model_id) is None
    assert is_gated(model_id) is False


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("https://huggingface.co/Qwen/Qwen2-7B/tree/main", "Qwen/Qwen2-7B"),
        ("hf.co/tiiuae/falcon-7b?library=transformers", "tiiuae/falcon-7b"),
        ("https://www.huggingface.co/meta-llama/Llama-3.1-8B#usage", "meta-llama/Llama-3.1-8B"),
        ("https://huggingface.co/meta-llama", None),
        ("https://huggingface.co/spaces/meta-llama/chat", None),
        ("https://huggingface.co/datasets/tatsu-lab/alpaca", None),
        ("https://github.com/meta-llama/llama3", None),
    ],
)
def test_a_hub_page_url_names_its_model_id_and_no_other_page_does(
    text: str, named: str | None
) -> None:
    assert is_url(text)
    assert hub_url_id(text) == named


def test_an_id_is_not_a_url_and_the_example_id_is_known_ungated() -> None:
    assert not is_url("Qwen/Qwen2-7B") and hub_url_id("Qwen/Qwen2-7B") is None
    gate = hub_gate(ungated_example())
    assert gate is not None and not gate.gated
