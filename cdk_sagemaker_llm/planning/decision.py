"""The service decision, re-exported from the modules that own it, so imports of
``planning.decision`` keep working: the request (``planning.service_request``), what is
decided (``planning.service_decision``) and the deciding (``planning.decider``)."""

from __future__ import annotations

from .decider import (
    HOST_MEMORY_SHARE,
    MAX_ALTERNATIVES_RECORDED,
    MAX_REJECTIONS_RECORDED,
    choose,
    decide,
    describe_rejection,
    prediction_sources,
    rejections,
    summary,
)
from .service_decision import (
    GOAL_KEYS,
    TGI_DEFAULT_PREFILL_TOKENS,
    Choice,
    ChoiceSource,
    DecisionWarning,
    Prediction,
    ScalingBounds,
    ServiceDecision,
    ServingSettings,
)
from .service_request import DEFAULT_MAX_INSTANCE_COUNT, ExpectedTraffic, Overrides, ServiceRequest

__all__ = [
    "DEFAULT_MAX_INSTANCE_COUNT",
    "GOAL_KEYS",
    "HOST_MEMORY_SHARE",
    "MAX_ALTERNATIVES_RECORDED",
    "MAX_REJECTIONS_RECORDED",
    "TGI_DEFAULT_PREFILL_TOKENS",
    "Choice",
    "ChoiceSource",
    "DecisionWarning",
    "ExpectedTraffic",
    "Overrides",
    "Prediction",
    "ScalingBounds",
    "ServiceDecision",
    "ServiceRequest",
    "ServingSettings",
    "choose",
    "decide",
    "describe_rejection",
    "prediction_sources",
    "rejections",
    "summary",
]
