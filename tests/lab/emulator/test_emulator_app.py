"""The emulator app in-process (ASGI transport, ManualClock): shapes, errors, cache, timing, log, metrics."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import sse_events

from litellm_kvwarm.lab.emulator.clock import ManualClock
from litellm_kvwarm.lab.emulator.tokenizer import count_chat_tokens, count_tokens, encode

PREFILL = 5000.0  # default tokens/s
LONG = [{"role": "user", "content": "Summarise this report. " + "The quarterly numbers went up. " * 60}]
TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Find a record.",
                                           "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}]


def cached_cap(prompt_tokens: int, block: int = 16) -> int:
    """The most vLLM can hit for a prompt: whole blocks within prompt - 1 tokens."""
    return (prompt_tokens - 1) // block * block


async def test_models_health_version(emulator_factory):
    async with emulator_factory(max_model_len=4096, vllm_version="0.25.1") as emu:
        models = (await emu.client.get("/v1/models")).json()
        assert models["object"] == "list"
        [model] = models["data"]
        assert {k: model[k] for k in ("id", "object", "owned_by", "root", "parent", "max_model_len")} == {
            "id": "fast", "object": "model", "owned_by": "vllm", "root": "fast", "parent": None, "max_model_len": 4096,
        }
        assert model["permission"][0]["object"] == "model_permission"
        health = await emu.client.get("/health")
        assert (health.status_code, health.content) == (200, b"")
        assert (await emu.client.get("/version")).json() == {"version": "0.25.1"}


async def test_chat_completion_shape_and_exact_usage(emulator_factory):
    async with emulator_factory() as emu:
        response = await emu.chat(LONG, max_tokens=7)
        assert response.status_code == 200
        body = response.json()
        prompt = count_chat_tokens(LONG)
        assert body["object"] == "chat.completion" and body["model"] == "fast" and body["id"].startswith("chatcmpl-")
        [choice] = body["choices"]
        assert choice["message"]["role"] == "assistant"
        assert count_tokens(choice["message"]["content"]) == 7
        assert choice["finish_reason"] == "length"
        # vLLM 0.32's usage (contract-tested against a real server in tests/vllm): the prompt's
        # full blocks (default 16 tokens) are written to the cache on a miss
        assert body["usage"] == {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7,
                                 "prompt_tokens_details": {"cached_tokens": 0, "created_cache_tokens": prompt // 16 * 16,
                                                           "multimodal_tokens": None},
                                 "completion_tokens_details": None}


async def test_tokenize_count_equals_chat_prompt_tokens(emulator_factory):
    async with emulator_factory() as emu:
        tokenized = (await emu.client.post("/tokenize", json={"model": "fast", "messages": LONG, "tools": TOOLS})).json()
        usage = (await emu.chat(LONG, tools=TOOLS, max_tokens=1)).json()["usage"]
        assert tokenized["count"] == usage["prompt_tokens"] == count_chat_tokens(LONG, TOOLS)
        assert tokenized["max_model_len"] == 4096 and len(tokenized["tokens"]) == tokenized["count"]
        assert count_chat_tokens(LONG, TOOLS) > count_chat_tokens(LONG)
        text = (await emu.client.post("/tokenize", json={"prompt": "hello world"})).json()
        assert text["count"] == 2 and text["tokens"] == encode("hello world")
        detok = await emu.client.post("/detokenize", json={"tokens": text["tokens"]})
        assert detok.json() == {"prompt": "hello world"}


async def test_absent_max_tokens_generates_the_default_and_stops(emulator_factory):
    async with emulator_factory(default_max_tokens=5) as emu:
        body = (await emu.chat(LONG)).json()
        assert body["usage"]["completion_tokens"] == 5
        assert body["choices"][0]["finish_reason"] == "stop"


async def test_ttft_covers_only_the_uncached_part_of_the_prompt(emulator_factory):
    async with emulator_factory(decode_tokens_per_s=50.0) as emu:
        prompt = count_chat_tokens(LONG)
        first = (await emu.chat(LONG, max_tokens=3)).json()["usage"]
        second = (await emu.chat(LONG, max_tokens=3)).json()["usage"]
        hit = cached_cap(prompt)
        assert first["prompt_tokens_details"]["cached_tokens"] == 0
        assert second["prompt_tokens_details"]["cached_tokens"] == hit
        log = await emu.requests()
        assert log[0]["ttft_s"] == pytest.approx(prompt / PREFILL)
        assert log[1]["ttft_s"] == pytest.approx((prompt - hit) / PREFILL)
        # The clock saw: prefill, 2 decode steps, prefill of the remainder, 2 decode steps.
        assert emu.clock.sleeps == pytest.approx([prompt / PREFILL, 2 / 50, (prompt - hit) / PREFILL, 2 / 50])


async def test_time_scale_multiplies_and_zero_never_sleeps(emulator_factory):
    async with emulator_factory(time_scale=0.5) as emu:
        await emu.chat(LONG, max_tokens=1)
        assert emu.clock.sleeps == pytest.approx([count_chat_tokens(LONG) / PREFILL * 0.5])
    async with emulator_factory(time_scale=0) as emu:
        await emu.chat(LONG, max_tokens=4, stream=True)
        assert emu.clock.sleeps == []


class GatedClock(ManualClock):
    """A ManualClock whose sleeps wait for ``gate``: holds a prefill open until the test lets go."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def sleep(self, seconds: float) -> None:
        await self.gate.wait()
        await super().sleep(seconds)


async def test_a_request_arriving_during_a_prefill_joins_it(emulator_factory):
    clock = GatedClock()
    async with emulator_factory(clock=clock) as emu:
        prompt = count_chat_tokens(LONG)
        warm_task = asyncio.create_task(emu.chat(LONG, max_tokens=1))
        real_task = asyncio.create_task(emu.chat(LONG, max_tokens=1))
        registry = emu.state.metrics.registry
        for _ in range(1000):  # until the real request queues behind the warm one's prefill
            await asyncio.sleep(0)
            if registry.get_sample_value("vllm:num_requests_waiting", {"model_name": "fast"}) == 1:
                break
        else:
            pytest.fail("the second request never waited for the prefill slot")
        assert clock.now() == 0  # both arrived before any prefill time passed
        clock.gate.set()
        warm, real = await warm_task, await real_task
        assert warm.json()["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
        assert real.json()["usage"]["prompt_tokens_details"]["cached_tokens"] == cached_cap(prompt)
        first, second = await emu.requests()
        assert first["ttft_s"] == pytest.approx(prompt / PREFILL)
        # waited for the warm prefill, then computed only its last block
        assert second["ttft_s"] == pytest.approx((prompt + prompt - cached_cap(prompt)) / PREFILL)


async def test_next_turn_hits_the_blocks_of_the_previous_answer(emulator_factory):
    async with emulator_factory() as emu:
        turn1 = (await emu.chat(LONG, max_tokens=40)).json()
        answer = turn1["choices"][0]["message"]["content"]
        conversation = LONG + [{"role": "assistant", "content": answer}, {"role": "user", "content": "Shorter."}]
        turn2 = (await emu.chat(conversation, max_tokens=1)).json()["usage"]
        prompt_and_answer = turn1["usage"]["prompt_tokens"] + 40
        assert turn2["prompt_tokens_details"]["cached_tokens"] == prompt_and_answer // 16 * 16


async def test_cache_salt_isolates_and_is_never_logged_raw(emulator_factory):
    async with emulator_factory() as emu:
        hit = cached_cap(count_chat_tokens(LONG))
        usages = []
        for salt in ("tenant-a-secret", "tenant-b-secret", "tenant-a-secret", None):
            extra = {"cache_salt": salt} if salt else {}
            usages.append((await emu.chat(LONG, max_tokens=1, **extra)).json()["usage"]["prompt_tokens_details"])
        assert [u["cached_tokens"] for u in usages] == [0, 0, hit, 0]
        log = await emu.requests()
        assert "secret" not in json.dumps(log)
        assert log[0]["cache_salt"] == log[2]["cache_salt"] != log[1]["cache_salt"]
        assert len(log[0]["cache_salt"]) == 16 and log[3]["cache_salt"] is None


@pytest.mark.parametrize("skip", [{"prompt_logprobs": 1}, {"skip_reading_prefix_cache": True}], ids=["prompt_logprobs", "skip"])
async def test_a_request_that_skips_reading_the_cache_prefills_all_and_still_fills_it(emulator_factory, skip):
    """vLLM's SamplingParams: ``prompt_logprobs`` sets ``skip_reading_prefix_cache`` (no hit is read), what it
    prefills is cached for the requests after it; ``skip_reading_prefix_cache: false`` reads again."""
    async with emulator_factory() as emu:
        hit = cached_cap(count_chat_tokens(LONG))
        usages = []
        for extra in ({}, skip, {**skip, "skip_reading_prefix_cache": False}, {}):
            usages.append((await emu.chat(LONG, max_tokens=1, **extra)).json()["usage"]["prompt_tokens_details"])
        assert [u["cached_tokens"] for u in usages] == [0, 0, hit, hit]


async def test_empty_cache_salt_is_refused(emulator_factory):
    async with emulator_factory() as emu:
        response = await emu.chat(LONG, cache_salt="")
        assert response.status_code == 400
        assert response.json()["error"]["message"] == (
            "Parameter 'cache_salt' must be a non-empty string if provided. (parameter=cache_salt)"
        )


@pytest.mark.parametrize("path", ["/emulator/reset_cache", "/reset_prefix_cache"])
async def test_reset_cache(emulator_factory, path):
    async with emulator_factory() as emu:
        await emu.chat(LONG, max_tokens=1)
        assert (await emu.client.post(path)).status_code == 200
        usage = (await emu.chat(LONG, max_tokens=1)).json()["usage"]
        assert usage["prompt_tokens_details"]["cached_tokens"] == 0


async def test_small_kv_capacity_evicts(emulator_factory):
    other = [{"role": "user", "content": "A different question entirely. " * 60}]
    async with emulator_factory(kv_capacity_tokens=count_chat_tokens(LONG) + 16) as emu:
        await emu.chat(LONG, max_tokens=1)
        await emu.chat(other, max_tokens=1)  # does not fit beside LONG: LONG's blocks go first
        usage = (await emu.chat(LONG, max_tokens=1)).json()["usage"]
        assert usage["prompt_tokens_details"]["cached_tokens"] < cached_cap(count_chat_tokens(LONG))


async def test_streaming_chat_with_usage(emulator_factory):
    async with emulator_factory() as emu:
        response = await emu.chat(LONG, max_tokens=5, stream=True, stream_options={"include_usage": True})
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response.text)
        assert events[-1] == "[DONE]"
        role, *tokens, usage, _ = events
        assert role["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        assert len(tokens) == 5 and all(e["object"] == "chat.completion.chunk" for e in tokens)
        text = "".join(e["choices"][0]["delta"]["content"] for e in tokens)
        assert count_tokens(text) == 5
        assert [e["choices"][0]["finish_reason"] for e in tokens] == [None] * 4 + ["length"]
        prompt = count_chat_tokens(LONG)
        assert usage["choices"] == []
        assert usage["usage"] == {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5,
                                  "prompt_tokens_details": {"cached_tokens": 0, "created_cache_tokens": prompt // 16 * 16,
                                                            "multimodal_tokens": None},
                                  "completion_tokens_details": None}
        [entry] = await emu.requests()
        assert (entry["stream"], entry["completion_tokens"], entry["error"]) == (True, 5, None)


async def test_streaming_without_usage_has_no_usage_chunk(emulator_factory):
    async with emulator_factory() as emu:
        events = sse_events((await emu.chat(LONG, max_tokens=2, stream=True)).text)
        assert len(events) == 1 + 2 + 1
        assert all("usage" not in e for e in events[:-1])


async def test_completions_text_and_token_id_prompts(emulator_factory):
    async with emulator_factory() as emu:
        text = (await emu.client.post("/v1/completions", json={"model": "fast", "prompt": "Once upon a time", "max_tokens": 3})).json()
        assert text["object"] == "text_completion"
        assert text["usage"]["prompt_tokens"] == count_tokens("Once upon a time")
        assert count_tokens(text["choices"][0]["text"]) == 3
        ids = list(range(100, 140))
        by_ids = (await emu.client.post("/v1/completions", json={"model": "fast", "prompt": ids, "max_tokens": 2})).json()
        assert by_ids["usage"]["prompt_tokens"] == 40
        streamed = await emu.client.post(
            "/v1/completions", json={"model": "fast", "prompt": [ids], "max_tokens": 2, "stream": True,
                                     "stream_options": {"include_usage": True}})
        events = sse_events(streamed.text)
        assert [e["choices"][0]["text"] for e in events[:2]] == ["the", " quick"]
        assert events[2]["usage"]["prompt_tokens_details"]["cached_tokens"] == 32
        many = await emu.client.post("/v1/completions", json={"model": "fast", "prompt": ["a", "b"]})
        assert many.status_code == 400 and many.json()["error"]["param"] == "prompt"


async def test_new_family_clamps_and_refuses_an_overlong_prompt(emulator_factory):
    async with emulator_factory(max_model_len=512, vllm_version="0.32.0") as emu:
        prompt = count_chat_tokens(LONG)
        assert 300 < prompt < 512
        clamped = (await emu.chat(LONG, max_tokens=400)).json()
        assert clamped["usage"]["completion_tokens"] == 512 - prompt
        assert clamped["choices"][0]["finish_reason"] == "length"
        huge = [{"role": "user", "content": "word " * 2000}]
        refused = await emu.chat(huge, max_tokens=10)
        assert refused.status_code == 400
        assert refused.json() == {"error": {
            "message": "This model's maximum context length is 512 tokens. However, your prompt contains at least "
                       "513 input tokens, which exceeds this limit even without any output tokens. Please reduce the "
                       "length of the input prompt. (parameter=input_tokens, value=513)",
            "type": "BadRequestError", "param": "input_tokens", "code": 400}}
        too_many = await emu.chat(LONG, max_tokens=600)
        assert too_many.json()["error"]["message"] == (
            "max_tokens=600 cannot be greater than max_model_len=512. Please request fewer output tokens. "
            "(parameter=max_tokens, value=600)")


async def test_old_family_refuses_prompt_plus_max_tokens_over_the_window(emulator_factory):
    async with emulator_factory(max_model_len=512, vllm_version="0.20.0") as emu:
        prompt = count_chat_tokens(LONG)
        refused = await emu.chat(LONG, max_tokens=400, stream=True)
        assert refused.status_code == 400
        assert refused.json()["error"]["message"] == (
            "This model's maximum context length is 512 tokens. However, you requested 400 output tokens and your "
            "prompt contains at least 113 input tokens, for a total of at least 513 tokens. Please reduce the length "
            "of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=113)")
        fits = (await emu.chat(LONG, max_completion_tokens=512 - prompt)).json()
        assert fits["usage"]["completion_tokens"] == 512 - prompt
        [error_entry, ok_entry] = await emu.requests()
        assert error_entry["status"] == 400 and error_entry["prompt_tokens"] == prompt
        assert error_entry["max_tokens"] == 400 and error_entry["error"].startswith("This model's maximum")
        assert error_entry["ttft_s"] is None and error_entry["stream"] is True
        assert ok_entry["max_tokens"] == 512 - prompt


async def test_unknown_model_is_404_and_logged(emulator_factory):
    async with emulator_factory() as emu:
        response = await emu.client.post("/v1/chat/completions", json={"model": "slow", "messages": LONG})
        assert response.status_code == 404
        assert response.json() == {"error": {"message": "The model `slow` does not exist.", "type": "NotFoundError",
                                             "param": "model", "code": 404}}
        [entry] = await emu.requests()
        assert (entry["model"], entry["status"], entry["prompt_tokens"]) == ("slow", 404, None)
        tokenize = await emu.client.post("/tokenize", json={"model": "slow", "prompt": "x"})
        assert tokenize.status_code == 404


async def test_bad_bodies_are_400(emulator_factory):
    async with emulator_factory() as emu:
        assert (await emu.client.post("/v1/chat/completions", content=b"{not json")).status_code == 400
        assert (await emu.chat([])).status_code == 400
        assert (await emu.chat(LONG, max_tokens="ten")).status_code == 400
        assert (await emu.chat(LONG, stream_options={"include_usage": True})).status_code == 400


async def test_request_log_entry_keys_jsonl_file_and_clear(emulator_factory, tmp_path):
    path = tmp_path / "requests.jsonl"
    async with emulator_factory(request_log_path=str(path)) as emu:
        await emu.chat(LONG, max_tokens=2, cache_salt="s")
        await emu.chat(LONG)
        entries = await emu.requests()
        assert [json.loads(line) for line in path.read_text().splitlines()] == entries
        assert set(entries[0]) == {"ts", "endpoint", "model", "prompt_tokens", "max_tokens", "cached_tokens",
                                   "completion_tokens", "status", "error", "stream", "cache_salt", "ttft_s", "fault",
                                   "priority", "queue_wait_s"}
        assert entries[1]["max_tokens"] is None and entries[1]["completion_tokens"] == 16
        assert (await emu.client.delete("/emulator/requests")).status_code == 204
        assert await emu.requests() == []
        assert len(path.read_text().splitlines()) == 2


def metric(text: str, name: str) -> float:
    [line] = [line for line in text.splitlines() if line.startswith(name)]
    return float(line.rsplit(" ", 1)[1])


async def test_metrics_use_vllm_names_and_a_registry_per_app(emulator_factory):
    async with emulator_factory() as emu, emulator_factory(served_model_name="slow") as other:
        prompt = count_chat_tokens(LONG)
        await emu.chat(LONG, max_tokens=3)
        await emu.chat(LONG, max_tokens=3)
        text = (await emu.client.get("/metrics")).text
        label = '{model_name="fast"}'
        assert metric(text, "vllm:prefix_cache_queries_total" + label) == 2 * prompt
        assert metric(text, "vllm:prefix_cache_hits_total" + label) == cached_cap(prompt)
        assert metric(text, "vllm:prompt_tokens_cached_total" + label) == cached_cap(prompt)
        assert metric(text, "vllm:prompt_tokens_total" + label) == 2 * prompt
        assert metric(text, "vllm:generation_tokens_total" + label) == 6
        assert metric(text, "vllm:num_requests_running" + label) == 0
        assert metric(text, 'vllm:request_success_total{finished_reason="length",model_name="fast"}') == 2
        assert metric(text, "vllm:time_to_first_token_seconds_count" + label) == 2
        other_text = (await other.client.get("/metrics")).text
        assert 'model_name="fast"' not in other_text
        assert metric(other_text, 'vllm:prefix_cache_queries_total{model_name="slow"}') == 0
