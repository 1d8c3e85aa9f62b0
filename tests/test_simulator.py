"""The loopback simulator speaks SageMaker Runtime well enough for a real boto3 client."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.eventstream import EventStreamBuffer
from botocore.exceptions import ClientError, EventStreamError

from cdk_sagemaker_llm.benchmarking import eventstream
from cdk_sagemaker_llm.benchmarking.simulator import (
    Simulator,
    SimulatorConfig,
    fetch_truth,
    reset_truth,
)

BODY = json.dumps({"inputs": "one two three", "parameters": {"max_new_tokens": 5, "details": True}})
WAIT_LIMIT_S = 30.0
"""The longest any wait in these tests lasts before it fails (a bound, not a measurement)."""


def wait_until(condition: Callable[[], bool], failure: str) -> None:
    """Poll ``condition`` every millisecond; fail with ``failure`` after ``WAIT_LIMIT_S``."""
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not condition():
        assert time.monotonic() < deadline, failure
        time.sleep(0.001)


STREAM_BODY = json.dumps({**json.loads(BODY), "stream": True})
CHAT = {"messages": [{"role": "user", "content": "one two three"}], "max_tokens": 5}


@pytest.fixture(autouse=True)
def dummy_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def client(sim: Simulator) -> Any:
    return boto3.session.Session().client(
        "sagemaker-runtime",
        region_name="us-east-1",
        endpoint_url=sim.endpoint_url,
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )


@pytest.fixture
def lmi() -> Iterator[Simulator]:
    with Simulator(SimulatorConfig(step_base_s=0.002, step_per_sequence_s=0.0002)) as sim:
        yield sim


def test_event_stream_framing_round_trips_through_botocore() -> None:
    data = eventstream.payload_part(b'{"token": {"id": 1}}\n') + eventstream.exception_event(
        "ModelStreamError", "boom", "StreamBroken"
    )
    buffer = EventStreamBuffer()
    # Byte by byte: framing must not depend on how the stream is split.
    messages = []
    for index in range(len(data)):
        buffer.add_data(data[index : index + 1])
        messages.extend(buffer)
    assert [m.headers[":message-type"] for m in messages] == ["event", "exception"]
    assert messages[0].headers[":event-type"] == "PayloadPart"
    assert messages[0].payload == b'{"token": {"id": 1}}\n'
    assert json.loads(messages[1].payload) == {"Message": "boom", "ErrorCode": "StreamBroken"}


@pytest.mark.loopback
def test_binds_to_loopback_only(lmi: Simulator) -> None:
    assert lmi.endpoint_url.startswith("http://127.0.0.1:")
    assert lmi.port > 0


@pytest.mark.loopback
def test_invoke_endpoint_lmi_with_inference_component(lmi: Simulator) -> None:
    response = client(lmi).invoke_endpoint(
        EndpointName="my-endpoint",
        Body=BODY,
        InferenceComponentName="my-ic",
        ContentType="application/json",
    )
    body = json.loads(response["Body"].read())
    assert body["details"]["generated_tokens"] == 5
    assert len(body["generated_text"].split()) == 5
    (truth,) = lmi.truth()
    assert truth.request_id == response["ResponseMetadata"]["RequestId"]
    assert (truth.endpoint_name, truth.inference_component) == ("my-endpoint", "my-ic")
    assert (truth.outcome, truth.output_tokens, truth.input_tokens) == ("ok", 5, 3)
    assert truth.arrival <= truth.start <= truth.first_token <= truth.end  # type: ignore[operator]


@pytest.mark.loopback
def test_stream_lmi_json_lines_parsed_by_botocore(lmi: Simulator) -> None:
    response = client(lmi).invoke_endpoint_with_response_stream(
        EndpointName="e", Body=STREAM_BODY, ContentType="application/json"
    )
    assert response["ContentType"] == "application/jsonlines"
    parts = [event["PayloadPart"]["Bytes"] for event in response["Body"]]
    events = [json.loads(line) for line in b"".join(parts).splitlines()]
    assert len(parts) == 5  # token by token
    assert [e["token"]["id"] for e in events] == [0, 1, 2, 3, 4]
    # The last line carries the token and the summary together (LMI's documented schema).
    assert events[-1]["details"]["generated_tokens"] == 5 and "generated_text" in events[-1]
    assert all("details" not in e for e in events[:-1])
    (truth,) = lmi.truth()
    assert truth.stream and truth.inference_component is None


@pytest.mark.loopback
def test_tgi_formats() -> None:
    with Simulator(SimulatorConfig(response_format="tgi", step_base_s=0.001)) as sim:
        runtime = client(sim)
        json_body = {"ContentType": "application/json"}
        answer = runtime.invoke_endpoint(EndpointName="e", Body=BODY, **json_body)
        body = json.loads(answer["Body"].read())
        assert isinstance(body, list) and body[0]["details"]["generated_tokens"] == 5
        # TGI reads JSON only: without ContentType its router answers 415, and so does an
        # empty prompt with 422 (ValidationError::EmptyInput).
        with pytest.raises(ClientError) as untyped:
            runtime.invoke_endpoint(EndpointName="e", Body=BODY)
        assert untyped.value.response["OriginalStatusCode"] == 415
        with pytest.raises(ClientError) as empty:
            runtime.invoke_endpoint(EndpointName="e", Body='{"inputs": ""}', **json_body)
        assert empty.value.response["OriginalStatusCode"] == 422
        response = runtime.invoke_endpoint_with_response_stream(
            EndpointName="e", Body=STREAM_BODY, **json_body
        )
        assert response["ContentType"] == "text/event-stream"
        raw = b"".join(event["PayloadPart"]["Bytes"] for event in response["Body"])
    events = [json.loads(chunk[5:]) for chunk in raw.split(b"\n\n") if chunk]
    assert len(events) == 5 and all(chunk.startswith(b"data:") for chunk in raw.split(b"\n\n")[:5])
    assert events[-1]["details"]["generated_tokens"] == 5


@pytest.mark.loopback
@pytest.mark.parametrize("response_format", ["lmi", "tgi"])
def test_details_only_when_the_body_asks(response_format: str) -> None:
    """TGI and LMI answer ``details`` only for ``parameters.details: true`` (TGI's
    ``GenerateParameters.details`` defaults to false), streamed or not: a client that counts
    tokens from it without asking works only against a lenient simulator."""
    plain = {"inputs": "one two three", "parameters": {"max_new_tokens": 3}}
    with Simulator(SimulatorConfig(response_format=response_format, step_base_s=0.001)) as sim:
        runtime = client(sim)
        answer = runtime.invoke_endpoint(
            EndpointName="e", Body=json.dumps(plain), ContentType="application/json"
        )
        body = json.loads(answer["Body"].read())
        streamed = runtime.invoke_endpoint_with_response_stream(
            EndpointName="e",
            Body=json.dumps({**plain, "stream": True}),
            ContentType="application/json",
        )
        raw = b"".join(event["PayloadPart"]["Bytes"] for event in streamed["Body"])
    whole = body[0] if response_format == "tgi" else body
    assert "details" not in whole and len(whole["generated_text"].split()) == 3
    lines = [line.removeprefix(b"data:") for line in raw.splitlines() if line.strip()]
    last = json.loads(lines[-1])
    assert last["generated_text"] and last.get("details") is None


@pytest.mark.timing
def test_throttling_maps_to_client_error_429() -> None:
    config = SimulatorConfig(max_batch=1, max_queue=0, step_base_s=0.02)
    with Simulator(config) as sim:
        runtime = client(sim)
        import threading

        first = threading.Thread(
            target=runtime.invoke_endpoint, kwargs={"EndpointName": "e", "Body": BODY}
        )
        first.start()
        wait_until(lambda: bool(sim.truth()), "the first request never reached the simulator")
        with pytest.raises(ClientError) as caught:
            runtime.invoke_endpoint(EndpointName="e", Body=BODY, ContentType="application/json")
        first.join(timeout=WAIT_LIMIT_S)
        assert not first.is_alive(), "the first request never finished"
    error = caught.value.response
    assert error["Error"]["Code"] == "ThrottlingException"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 429
    assert [t.outcome for t in sim.truth()] == ["ok", "throttled"]


@pytest.mark.loopback
def test_model_error_shape() -> None:
    with Simulator(SimulatorConfig(model_error_every=1)) as sim:
        runtime = client(sim)
        with pytest.raises(runtime.exceptions.ModelError) as caught:
            runtime.invoke_endpoint(EndpointName="e", Body=BODY, ContentType="application/json")
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 424
    assert caught.value.response["OriginalStatusCode"] == 500


@pytest.mark.timing
def test_timeout_before_first_token_and_mid_stream() -> None:
    config = SimulatorConfig(max_batch=1, step_base_s=0.01, invocation_timeout_s=0.1)
    long_body = json.dumps({"inputs": "x", "parameters": {"max_new_tokens": 50}, "stream": True})
    with Simulator(config) as sim:
        runtime = client(sim)
        response = runtime.invoke_endpoint_with_response_stream(
            EndpointName="e", Body=long_body, ContentType="application/json"
        )
        with pytest.raises(EventStreamError) as mid_stream:
            for _ in response["Body"]:
                pass
        with pytest.raises(runtime.exceptions.ModelError) as before:
            runtime.invoke_endpoint(
                EndpointName="e",
                Body=json.dumps({"inputs": "x", "parameters": {"max_new_tokens": 50}}),
                ContentType="application/json",
            )
    assert mid_stream.value.response["Error"]["Code"] == "ModelStreamError"
    assert "timed out" in before.value.response["Error"]["Message"]
    assert [t.outcome for t in sim.truth()] == ["timeout", "timeout"]
    assert all(t.latency_s is not None and t.latency_s >= 0.1 for t in sim.truth())


@pytest.mark.loopback
def test_truth_over_http(lmi: Simulator) -> None:
    client(lmi).invoke_endpoint(EndpointName="e", Body=BODY, ContentType="application/json")
    (record,) = fetch_truth(lmi.endpoint_url)
    assert record.to_dict() == lmi.truth()[0].to_dict()
    reset_truth(lmi.endpoint_url)
    assert lmi.truth() == []


@pytest.mark.loopback
@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1]",
        json.dumps({"inputs": 3}),
        json.dumps({"inputs": "x", "stream": "yes"}),
        json.dumps({"inputs": "x", "parameters": {"max_new_tokens": 0}}),
        json.dumps({"messages": []}),
        json.dumps({"messages": [{"role": "robot", "content": "x"}]}),
        json.dumps({**CHAT, "stream_options": {"include_usage": True}}),  # without stream
    ],
)
def test_bad_bodies_are_refused_by_the_container(lmi: Simulator, body: str | bytes) -> None:
    runtime = client(lmi)
    with pytest.raises(runtime.exceptions.ModelError) as caught:
        runtime.invoke_endpoint(EndpointName="e", Body=body, ContentType="application/json")
    response = caught.value.response
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 424
    assert response["OriginalStatusCode"] == 424  # LMI's payload-validation status
    assert "Received client error (424)" in response["Error"]["Message"]
    assert lmi.truth() == []


@pytest.mark.loopback
def test_streams_only_when_the_body_asks(lmi: Simulator) -> None:
    """LMI and TGI stream only on ``"stream": true``; the streaming route alone is not enough."""
    runtime = client(lmi)
    response = runtime.invoke_endpoint_with_response_stream(
        EndpointName="e", Body=BODY, ContentType="application/json"
    )
    assert response["ContentType"] == "application/json"
    parts = [event["PayloadPart"]["Bytes"] for event in response["Body"]]
    assert len(parts) == 1  # the whole answer at once
    assert json.loads(parts[0])["details"]["generated_tokens"] == 5
    # Older LMI releases read the flag inside "parameters": the simulated LMI does too.
    nested = {"inputs": "a", "parameters": {"max_new_tokens": 3, "stream": True, "details": True}}
    response = runtime.invoke_endpoint_with_response_stream(
        EndpointName="e", Body=json.dumps(nested), ContentType="application/json"
    )
    assert len(list(response["Body"])) == 3
    # InvokeEndpoint on a body that asks to stream returns the stream's text in one body.
    lines = runtime.invoke_endpoint(
        EndpointName="e", Body=STREAM_BODY, ContentType="application/json"
    )["Body"].read()
    assert len(lines.splitlines()) == 5
    assert [(t.stream, t.streamed) for t in lmi.truth()] == [
        (True, False), (True, True), (False, True)
    ]  # fmt: skip


@pytest.mark.loopback
def test_tgi_reads_stream_only_at_the_top_level() -> None:
    with Simulator(SimulatorConfig(response_format="tgi", step_base_s=0.001)) as sim:
        nested = {
            "inputs": "a",
            "parameters": {"max_new_tokens": 3, "stream": True, "details": True},
        }
        response = client(sim).invoke_endpoint_with_response_stream(
            EndpointName="e", Body=json.dumps(nested), ContentType="application/json"
        )
        (part,) = [event["PayloadPart"]["Bytes"] for event in response["Body"]]
        assert response["ContentType"] == "application/json"
        assert json.loads(part)[0]["details"]["generated_tokens"] == 3
        with pytest.raises(ClientError) as caught:
            client(sim).invoke_endpoint(
                EndpointName="e", Body=b"{}", ContentType="application/json"
            )
    assert caught.value.response["OriginalStatusCode"] == 422  # TGI's JSON rejection


@pytest.mark.loopback
@pytest.mark.parametrize("fmt", ["lmi", "tgi"])
def test_messages_api(fmt: str) -> None:
    with Simulator(SimulatorConfig(response_format=fmt, step_base_s=0.001)) as sim:
        runtime = client(sim)
        answer = json.loads(
            runtime.invoke_endpoint(
                EndpointName="e", Body=json.dumps(CHAT), ContentType="application/json"
            )["Body"].read()
        )
        stream_body = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
        response = runtime.invoke_endpoint_with_response_stream(
            EndpointName="e", Body=json.dumps(stream_body), ContentType="application/json"
        )
        parts = [event["PayloadPart"]["Bytes"] for event in response["Body"]]
        plain = runtime.invoke_endpoint_with_response_stream(
            EndpointName="e",
            Body=json.dumps({**CHAT, "stream": True}),
            ContentType="application/json",
        )
        plain_raw = b"".join(event["PayloadPart"]["Bytes"] for event in plain["Body"])
    assert answer["object"] == "chat.completion"
    assert answer["choices"][0]["message"]["role"] == "assistant"
    assert len(answer["choices"][0]["message"]["content"].split()) == 5
    assert answer["usage"] == {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
    assert response["ContentType"] == "text/event-stream"
    assert len(parts) == 5
    events = [chunk for chunk in b"".join(parts).split(b"\n\n") if chunk]
    assert all(event.startswith(b"data: ") for event in events)
    assert events[-1] == b"data: [DONE]"
    chunks = [json.loads(event[6:]) for event in events[:-1]]
    assert [c["object"] for c in chunks] == ["chat.completion.chunk"] * 6
    assert [c["choices"][0]["delta"]["content"] for c in chunks[:5]] == [
        " the", " of", " and", " to", " in"
    ]  # fmt: skip
    assert chunks[4]["choices"][0]["finish_reason"] == "length"
    assert chunks[5]["choices"] == [] and chunks[5]["usage"]["completion_tokens"] == 5
    assert b'"usage"' not in plain_raw and plain_raw.endswith(b"data: [DONE]\n\n")
    assert {t.api for t in sim.truth()} == {"messages"}
    assert [t.input_tokens for t in sim.truth()] == [3, 3, 3]
