"""The event checks both deploy-time handlers share: one error type, one message vocabulary,
and one rule for what an integer is (3, "3" and 3.0 are; 3.5, "3.0", True and None are not)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from cdk_sagemaker_llm.lambdas import event_checks
from cdk_sagemaker_llm.lambdas.benchmark import run_names as benchmark_events
from cdk_sagemaker_llm.lambdas.optimization_job import handler as optimization_handler
from cdk_sagemaker_llm.lambdas.optimization_job.poll import check_state

NOW = 1_700_000_000.0
HANDLE = "https://cloudformation-waitcondition-us-west-2.s3.amazonaws.com/handle?sig=x"


@pytest.mark.parametrize(("value", "expected"), [(3, 3), ("3", 3), (" 3 ", 3), (3.0, 3)])
def test_a_whole_number_is_an_integer_in_any_json_form(value: Any, expected: int) -> None:
    assert event_checks.integer(value, "Level", 0, 10) == expected


@pytest.mark.parametrize("value", [3.5, "3.0", "three", True, None, [3], float("nan")])
def test_anything_else_is_refused_naming_the_field(value: Any) -> None:
    with pytest.raises(event_checks.EventError, match=r"^Level: expected an integer from 0 to 10"):
        event_checks.integer(value, "Level", 0, 10)


def test_both_handlers_raise_the_shared_error_with_the_shared_rule() -> None:
    assert benchmark_events.EventError is event_checks.EventError
    assert optimization_handler.InvalidEvent is event_checks.EventError
    assert benchmark_events.integer is event_checks.integer
    state = {"JobName": "job-1", "HandleUrl": HANDLE, "Deadline": NOW + 60.0, "Done": False}
    assert check_state(state, NOW) == ("job-1", HANDLE, NOW + 60)
    with pytest.raises(event_checks.EventError, match=r"^state\.Deadline: expected an integer"):
        check_state({**state, "Deadline": NOW + 60.5}, NOW)


@pytest.mark.parametrize("event", [{"RequestType": "Replace"}, {}, "Create", None])
def test_a_request_type_outside_create_update_delete_is_refused(event: Any) -> None:
    with pytest.raises(event_checks.EventError, match=r"^(RequestType|event): expected"):
        event_checks.check_request_type(event)
    assert optimization_handler.check_request_type is event_checks.check_request_type


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "Request: expected an object, got list"),
        ({"RoleArn": "x"}, "Request.ModelSource: missing"),
        ({"RoleArn": "x", "ModelSource": {}, "Debug": 1}, "Request: unknown properties ['Debug']"),
    ],
)
def test_an_object_check_names_the_field_the_missing_key_or_the_unknown_one(
    value: Any, message: str
) -> None:
    with pytest.raises(event_checks.EventError) as raised:
        event_checks.mapping(value, "Request", frozenset({"ModelSource", "RoleArn"}), frozenset())
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({}, "Tags: expected a list of 0 to 2 items, got dict"),
        ([1, 2, 3], "Tags: expected a list of 0 to 2 items, got 3 items"),
    ],
)
def test_a_list_check_names_the_field_its_bounds_and_what_came(value: Any, message: str) -> None:
    with pytest.raises(event_checks.EventError) as raised:
        event_checks.items(value, "Tags", 0, 2)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("request_body", "message"),
    [
        ("{}", "Request: expected an object, got str"),
        ({"RoleArn": 7}, "Request.DeploymentInstanceType: missing"),
    ],
)
def test_the_optimization_job_checks_its_request_in_the_shared_words(
    request_body: Any, message: str
) -> None:
    with pytest.raises(event_checks.EventError) as raised:
        optimization_handler.check_request(request_body)
    assert str(raised.value) == message


def test_an_empty_string_passes_a_pattern_check_only_when_allowed() -> None:
    pattern = re.compile(r"[a-z]*")
    assert event_checks.matching("", "KmsKeyId", pattern, 8, allow_empty=True) == ""
    with pytest.raises(event_checks.EventError, match=r"^KmsKeyId: expected a string of 1 to 8"):
        event_checks.matching("", "KmsKeyId", pattern, 8)
