"""Injected faults in-process (ASGI transport, ManualClock): every mode of /v1/models and
/tokenize, completion statuses/hangs/delays with ``count``, the switch itself and ``--faults``."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from litellm_kvwarm.lab.emulator.__main__ import build_parser, config_from_args, main
from litellm_kvwarm.lab.emulator.faults import (
    DRIP_MIN_DURATION_S,
    JUNK_BODY,
    CompletionFault,
    EndpointFault,
    FaultSet,
    FaultSpecError,
    parse_faults,
    status_reply,
)
from litellm_kvwarm.lab.emulator.tokenizer import count_chat_tokens

HELLO = [{"role": "user", "content": "hello there, how are you today?"}]
TOKENIZE = {"model": "fast", "messages": HELLO}
RATE_LIMIT = {"error": {
    "message": "Rate limit reached for requests per min (RPM): Limit 60, Used 60, Requested 1. Please try again in 1s.",
    "type": "requests", "param": None, "code": "rate_limit_exceeded",
}}
VLLM_500 = {"error": {
    "message": "EngineCore encountered an issue. See stack trace (above) for the root cause.",
    "type": "InternalServerError", "param": None, "code": 500,
}}


async def put_faults(emu, spec):
    response = await emu.client.put("/emulator/faults", json=spec)
    assert response.status_code == 200, response.text
    return response.json()


async def until_held(emu, target: str, n: int = 1) -> None:
    """Yield to the event loop until ``n`` requests are held by ``target``'s hang."""
    for _ in range(2000):
        shown = (await emu.client.get("/emulator/faults")).json()
        if shown["hanging"][target] == n:
            return
        await asyncio.sleep(0)
    pytest.fail(f"{target}: never {n} held requests; last {shown['hanging']}")


# ------------------------------------------------------------------ the spec (pure)


def test_parse_faults_reads_every_key_and_round_trips():
    spec = {"models": "drip", "tokenize": "status:401", "drip_interval_s": 0.25,
            "completions": {"status": 429, "count": 2, "hang": False, "delay_s": 1.5}}
    faults = parse_faults(spec)
    assert faults == FaultSet(
        models=EndpointFault("drip"), tokenize=EndpointFault("status", 401),
        completions=CompletionFault(status=429, count=2, hang=False, delay_s=1.5), drip_interval_s=0.25,
    )
    assert faults.to_json() == {**spec, "responses": None}
    assert parse_faults({}) == FaultSet()
    assert parse_faults({}).to_json() == {"models": None, "tokenize": None, "responses": None, "completions": None,
                                          "drip_interval_s": 0.5}
    assert parse_faults({"responses": "status:404"}).responses == EndpointFault("status", 404)


@pytest.mark.parametrize(("spec", "names"), [
    ({"model": "hang"}, "unknown fault key(s) ['model']"),
    ({"models": "slow"}, "models must be one of hang, drip, junk, status:NNN"),
    ({"tokenize": "status:200"}, "tokenize must be an HTTP error status 400-599, got 200"),
    ({"tokenize": "status:abc"}, "tokenize: 'status:abc' is not status:NNN"),
    ({"completions": {"status": 429, "retries": 1}}, "completions: unknown key(s) ['retries']"),
    ({"completions": {"count": 0}}, "completions.count must be an integer >= 1 or null, got 0"),
    ({"completions": {"hang": "yes"}}, "completions.hang must be true or false"),
    ({"completions": {"delay_s": -1}}, "completions.delay_s must be a number of seconds >= 0"),
    ({"completions": {"status": 500, "hang": True}}, "status and hang exclude each other"),
    ({"drip_interval_s": 0}, "drip_interval_s must be > 0"),
    ({"responses": "hang"}, "responses must be status:NNN or null"),
    (["models"], "faults must be a JSON object"),
], ids=lambda value: str(value)[:40])
def test_parse_faults_names_the_bad_key(spec, names):
    with pytest.raises(FaultSpecError) as raised:
        parse_faults(spec)
    assert names in str(raised.value)


def test_status_replies_are_the_servers_own_bodies():
    assert status_reply(401) == {"error": "Unauthorized"}
    assert status_reply(429) == RATE_LIMIT
    assert status_reply(500) == VLLM_500
    assert status_reply(503) == {"error": {"message": "Service Unavailable", "type": "Service Unavailable",
                                           "param": None, "code": 503}}
    assert status_reply(599)["error"]["type"] == "Error"


# ------------------------------------------------------------------ /v1/models and /tokenize


@pytest.mark.parametrize("target", ["models", "tokenize"])
async def test_status_and_junk_modes(emulator_factory, target):
    async with emulator_factory() as emu:
        call = (lambda: emu.client.get("/v1/models")) if target == "models" else (
            lambda: emu.client.post("/tokenize", json=TOKENIZE))
        healthy = await call()
        await put_faults(emu, {target: "status:500"})
        failed = await call()
        assert (failed.status_code, failed.json()) == (500, VLLM_500)
        await put_faults(emu, {target: "status:401"})
        refused = await call()
        assert (refused.status_code, refused.json()) == (401, {"error": "Unauthorized"})
        await put_faults(emu, {target: "junk"})
        junk = await call()
        assert (junk.status_code, junk.headers["content-type"], junk.content) == (200, "application/json", JUNK_BODY)
        with pytest.raises(json.JSONDecodeError):
            junk.json()
        await emu.client.delete("/emulator/faults")
        again = await call()
        assert (again.status_code, again.json().keys()) == (200, healthy.json().keys())
        assert await emu.requests() == []  # only generation requests are logged


async def test_the_other_endpoint_is_untouched(emulator_factory):
    async with emulator_factory() as emu:
        await put_faults(emu, {"models": "status:500"})
        tokenized = await emu.client.post("/tokenize", json=TOKENIZE)
        assert (tokenized.status_code, tokenized.json()["count"]) == (200, count_chat_tokens(HELLO))
        assert (await emu.chat(HELLO, max_tokens=2)).status_code == 200


@pytest.mark.parametrize("target", ["models", "tokenize"])
async def test_hang_holds_until_the_fault_is_cleared(emulator_factory, target):
    async with emulator_factory() as emu:
        await put_faults(emu, {target: "hang"})
        if target == "models":
            pending = asyncio.create_task(emu.client.get("/v1/models"))
        else:
            pending = asyncio.create_task(emu.client.post("/tokenize", json=TOKENIZE))
        await until_held(emu, target)
        await put_faults(emu, {target: "hang", "completions": {"delay_s": 1}})  # still hanging: still held
        await until_held(emu, target)
        assert not pending.done()
        cleared = await emu.client.delete("/emulator/faults")
        assert cleared.json()["models"] is None
        response = await asyncio.wait_for(pending, 5)
        assert response.status_code == 200
        if target == "models":
            assert response.json()["data"][0]["max_model_len"] == 4096
        else:
            assert response.json()["count"] == count_chat_tokens(HELLO)
        assert (await emu.client.get("/emulator/faults")).json()["hanging"] == {"models": 0, "tokenize": 0, "completions": 0}


async def test_a_released_hang_meets_the_new_fault(emulator_factory):
    async with emulator_factory() as emu:
        await put_faults(emu, {"models": "hang"})
        pending = asyncio.create_task(emu.client.get("/v1/models"))
        await until_held(emu, "models")
        await put_faults(emu, {"models": "status:503"})
        response = await asyncio.wait_for(pending, 5)
        assert response.status_code == 503


@pytest.mark.parametrize("interval", [0.5, 2.0])
async def test_drip_sends_the_normal_body_one_byte_per_interval(emulator_factory, interval):
    async with emulator_factory() as emu:
        normal = (await emu.client.get("/v1/models")).json()
        await put_faults(emu, {"models": "drip", "drip_interval_s": interval})
        dripped = await emu.client.get("/v1/models")
        assert dripped.status_code == 200 and dripped.headers["content-type"] == "application/json"
        # space-padded to last at least DRIP_MIN_DURATION_S, still the same JSON once complete
        assert len(dripped.content) == max(len(dripped.content.strip()), math.ceil(DRIP_MIN_DURATION_S / interval) + 1)
        assert len(dripped.content) * interval > DRIP_MIN_DURATION_S
        body = dripped.json()
        assert [(m["id"], m["max_model_len"]) for m in body["data"]] == [(m["id"], m["max_model_len"]) for m in normal["data"]]
        assert emu.clock.sleeps == [interval] * len(dripped.content)


async def test_drip_of_tokenize_keeps_the_normal_status(emulator_factory):
    async with emulator_factory() as emu:
        await put_faults(emu, {"tokenize": "drip", "drip_interval_s": 60})
        bad = await emu.client.post("/tokenize", json={"model": "other", "prompt": "x"})
        assert bad.status_code == 404 and bad.json()["error"]["type"] == "NotFoundError"
        good = await emu.client.post("/tokenize", json=TOKENIZE)
        assert good.json()["count"] == count_chat_tokens(HELLO)


async def test_a_responses_fault_refuses_every_responses_request_and_leaves_chat_alone(emulator_factory):
    """``"responses": "status:404"``: a server without the Responses API (vLLM before 0.10, TGI)."""
    async with emulator_factory() as emu:
        await put_faults(emu, {"responses": "status:404"})
        refused = await emu.client.post("/v1/responses", json={"model": "fast", "input": "hi", "max_output_tokens": 3})
        assert refused.status_code == 404 and refused.json()["error"]["code"] == 404
        assert (await emu.chat(HELLO, max_tokens=3)).status_code == 200
        log = (await emu.client.get("/emulator/requests")).json()["requests"]
        assert [(r["endpoint"], r["status"]) for r in log] == [("/v1/responses", 404), ("/v1/chat/completions", 200)]
        await put_faults(emu, {})
        served = await emu.client.post("/v1/responses", json={"model": "fast", "input": "hi", "max_output_tokens": 3})
        assert served.status_code == 200


# ------------------------------------------------------------------ completions


async def test_status_429_for_the_next_count_requests_then_healthy(emulator_factory):
    async with emulator_factory() as emu:
        shown = await put_faults(emu, {"completions": {"status": 429, "count": 2}})
        assert shown["completions"] == {"status": 429, "count": 2, "hang": False, "delay_s": 0.0, "remaining": 2}
        first = await emu.chat(HELLO, max_tokens=3)
        second = await emu.client.post("/v1/completions", json={"model": "fast", "prompt": "hi", "max_tokens": 3})
        third = await emu.chat(HELLO, max_tokens=3)
        assert (first.status_code, first.json()) == (429, RATE_LIMIT)
        assert (second.status_code, second.json()) == (429, RATE_LIMIT)
        assert third.status_code == 200 and third.json()["usage"]["completion_tokens"] == 3
        assert (await emu.client.get("/emulator/faults")).json()["completions"]["remaining"] == 0
        log = await emu.requests()
        assert [(e["endpoint"], e["status"], e["fault"]) for e in log] == [
            ("/v1/chat/completions", 429, "status:429"), ("/v1/completions", 429, "status:429"),
            ("/v1/chat/completions", 200, None),
        ]
        assert log[0]["error"] == RATE_LIMIT["error"]["message"]
        assert (log[0]["prompt_tokens"], log[0]["max_tokens"], log[0]["model"]) == (count_chat_tokens(HELLO), 3, "fast")
        assert log[1]["prompt_tokens"] == 1  # "hi"


async def test_status_without_count_fails_every_request_until_cleared(emulator_factory):
    async with emulator_factory() as emu:
        await put_faults(emu, {"completions": {"status": 500}})
        answers = [await emu.chat(HELLO, max_tokens=1) for _ in range(3)]
        assert [(a.status_code, a.json()) for a in answers] == [(500, VLLM_500)] * 3
        assert (await emu.client.get("/emulator/faults")).json()["completions"]["remaining"] is None
        await emu.client.delete("/emulator/faults")
        assert (await emu.chat(HELLO, max_tokens=1)).status_code == 200


async def test_a_new_put_restarts_the_count(emulator_factory):
    async with emulator_factory() as emu:
        await put_faults(emu, {"completions": {"status": 503, "count": 1}})
        assert (await emu.chat(HELLO, max_tokens=1)).status_code == 503
        assert (await emu.chat(HELLO, max_tokens=1)).status_code == 200
        await put_faults(emu, {"completions": {"status": 503, "count": 1}})
        failed = await emu.chat(HELLO, max_tokens=1)
        assert failed.status_code == 503 and failed.json()["error"]["type"] == "Service Unavailable"


async def test_faulted_streaming_request_gets_the_status_not_a_stream(emulator_factory):
    async with emulator_factory() as emu:
        await put_faults(emu, {"completions": {"status": 429, "count": 1}})
        response = await emu.chat(HELLO, max_tokens=2, stream=True)
        assert response.status_code == 429 and response.headers["content-type"] == "application/json"
        assert (await emu.requests())[0]["stream"] is True


async def test_completion_hang_holds_until_a_put_without_hang(emulator_factory):
    async with emulator_factory() as emu:
        await put_faults(emu, {"completions": {"hang": True, "count": 1}})
        pending = asyncio.create_task(emu.chat(HELLO, max_tokens=2))
        await until_held(emu, "completions")
        # count is used up, but the held request stays held while the fault still says hang
        assert (await emu.client.get("/emulator/faults")).json()["completions"]["remaining"] == 0
        assert (await emu.chat(HELLO, max_tokens=1)).status_code == 200
        assert not pending.done()
        await put_faults(emu, {"models": "junk"})
        response = await asyncio.wait_for(pending, 5)
        assert response.status_code == 200 and response.json()["usage"]["completion_tokens"] == 2
        held = [e for e in await emu.requests() if e["fault"] == "hang"]
        assert [(e["status"], e["completion_tokens"]) for e in held] == [(200, 2)]


async def test_delay_waits_then_answers_normally(emulator_factory):
    async with emulator_factory(time_scale=0) as emu:
        await put_faults(emu, {"completions": {"delay_s": 2.5, "count": 1}})
        delayed = await emu.chat(HELLO, max_tokens=2)
        normal = await emu.chat(HELLO, max_tokens=2)
        assert delayed.status_code == normal.status_code == 200
        assert emu.clock.sleeps == [2.5]  # time_scale 0: only the injected delay waited
        first, second = await emu.requests()
        assert (first["fault"], first["ttft_s"]) == ("delay:2.5s", 2.5)
        assert (second["fault"], second["ttft_s"]) == (None, 0)


async def test_delay_then_status(emulator_factory):
    async with emulator_factory(time_scale=0) as emu:
        await put_faults(emu, {"completions": {"delay_s": 1, "status": 429}})
        assert (await emu.chat(HELLO, max_tokens=1)).status_code == 429
        assert emu.clock.sleeps == [1.0]
        assert (await emu.requests())[0]["fault"] == "delay:1s+status:429"


async def test_put_rejects_a_bad_spec_and_keeps_the_old_one(emulator_factory):
    async with emulator_factory() as emu:
        await put_faults(emu, {"models": "junk"})
        refused = await emu.client.put("/emulator/faults", json={"completions": {"status": 99}})
        assert refused.status_code == 400
        assert refused.json()["error"]["message"] == "completions.status must be an HTTP error status 400-599, got 99"
        not_json = await emu.client.put("/emulator/faults", content=b"{")
        assert not_json.status_code == 400
        assert (await emu.client.get("/emulator/faults")).json()["models"] == "junk"


# ------------------------------------------------------------------ --faults at start


async def test_faults_from_the_start(emulator_factory):
    async with emulator_factory(faults=parse_faults({"completions": {"status": 429, "count": 1}})) as emu:
        assert (await emu.chat(HELLO, max_tokens=1)).status_code == 429
        assert (await emu.chat(HELLO, max_tokens=1)).status_code == 200


def test_faults_flag_is_parsed_and_checked(capsys):
    args = build_parser().parse_args(["--served-model-name", "m", "--max-model-len", "64", "--port", "1",
                                      "--faults", '{"models": "hang", "completions": {"status": 500}}'])
    config = config_from_args(args, environ={})
    assert config.faults == FaultSet(models=EndpointFault("hang"), completions=CompletionFault(status=500))
    with pytest.raises(SystemExit) as exited:
        main(["--served-model-name", "m", "--max-model-len", "64", "--port", "1", "--faults", '{"models": "slow"}'])
    assert exited.value.code == 2
    assert "--faults: models must be one of" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--served-model-name", "m", "--max-model-len", "64", "--port", "1", "--faults", "{"])
    assert "--faults is not JSON" in capsys.readouterr().err


async def test_min_tokens_above_the_budget_it_runs_with_is_refused_as_vllm_refuses_it(emulator_factory):
    """vLLM's ``SamplingParams._verify_args``: ``min_tokens`` above ``max_tokens`` (as sent, or as 0.32+ trims it)."""
    async with emulator_factory() as emu:
        refused = await emu.chat(HELLO, max_tokens=10, min_tokens=20)
        assert refused.status_code == 400
        assert refused.json()["error"]["message"] == "min_tokens must be less than or equal to max_tokens=10, got 20."
        assert (await emu.chat(HELLO, max_tokens=10, min_tokens=5)).status_code == 200
        assert (await emu.chat(HELLO, max_tokens=10, min_tokens=-1)).status_code == 400
