"""The service decision, re-exported from the modules that own it, so imports of
``planning.decision`` keep working: the request (``planning.service_request``), what is
decided (``planning.service_decision``), what the template records of it
(``planning.decision_record``) and the deciding (``planning.decider``)."""

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
from .decision_record import (
    GOAL_KEYS,
    Choice,
    ChoiceSource,
    DecisionRecord,
    Prediction,
    RecordedOptimization,
)
from .service_decision import (
    TGI_DEFAULT_PREFILL_TOKENS,
    DecisionWarning,
    ScalingBounds,
    ServiceDecision,
    ServingSettings,
)
from .service_request import (
    DEFAULT_SERVICE_MAX_INSTANCES,
    ExpectedTraffic,
    Overrides,
    ServiceRequest,
)

__all__ = [
    "DEFAULT_SERVICE_MAX_INSTANCES",
    "GOAL_KEYS",
    "HOST_MEMORY_SHARE",
    "MAX_ALTERNATIVES_RECORDED",
    "MAX_REJECTIONS_RECORDED",
    "TGI_DEFAULT_PREFILL_TOKENS",
    "Choice",
    "ChoiceSource",
    "DecisionRecord",
    "DecisionWarning",
    "ExpectedTraffic",
    "Overrides",
    "Prediction",
    "RecordedOptimization",
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
