"""``--api-key``, ``--strict-fields`` and ``--lora-modules`` in-process (ASGI transport, ManualClock)."""

from __future__ import annotations

import pytest

from litellm_kvwarm.lab.emulator.__main__ import build_parser, config_from_args
from litellm_kvwarm.lab.emulator.config import EmulatorConfig, LoraModule, parse_lora_module
from litellm_kvwarm.lab.emulator.openai_fields import CHAT_COMPLETION_FIELDS, COMPLETION_FIELDS, unknown_fields
from litellm_kvwarm.lab.emulator.tokenizer import count_chat_tokens

HELLO = [{"role": "user", "content": "hello there, how are you today?"}]
LONG = [{"role": "user", "content": "Summarise this report. " + "The quarterly numbers went up. " * 60}]
KEY = "emulator-secret"
CHAT = {"model": "fast", "messages": HELLO, "max_tokens": 2}


def cli(*extra: str):
    return build_parser().parse_args(["--served-model-name", "fast", "--max-model-len", "4096", "--port", "1", *extra])


# ------------------------------------------------------------------ --api-key


@pytest.mark.parametrize(("method", "path", "body"), [
    ("GET", "/v1/models", None),
    ("POST", "/v1/chat/completions", CHAT),
    ("POST", "/v1/completions", {"model": "fast", "prompt": "hi", "max_tokens": 2}),
    ("GET", "/v1/no-such-route", None),  # a prefix test, as vLLM's: guarded before routing
])
async def test_api_key_guards_v1(emulator_factory, method, path, body):
    async with emulator_factory(api_keys=(KEY,)) as emu:
        def send(headers=None):
            return emu.client.request(method, path, json=body, headers=headers or {})

        for headers in (None, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {KEY}"},
                        {"Authorization": KEY}, {"Authorization": f"Bearer {KEY} "}):
            refused = await send(headers)
            assert (refused.status_code, refused.json()) == (401, {"error": "Unauthorized"}), headers
        allowed = await send({"Authorization": f"Bearer {KEY}"})
        assert allowed.status_code == (404 if path == "/v1/no-such-route" else 200)
        assert (await send({"Authorization": f"bearer {KEY}"})).status_code == allowed.status_code  # scheme in any case
        # refused before the route: never logged
        assert len(await emu.requests()) == (1 + 1 if path.endswith("completions") else 0)


@pytest.mark.parametrize(("method", "path", "body", "status"), [
    ("GET", "/health", None, 200),
    ("GET", "/version", None, 200),
    ("GET", "/metrics", None, 200),
    ("POST", "/tokenize", {"model": "fast", "messages": HELLO}, 200),
    ("POST", "/detokenize", {"model": "fast", "tokens": [15339]}, 200),
    ("GET", "/emulator/requests", None, 200),
    ("GET", "/emulator/faults", None, 200),
    ("PUT", "/emulator/faults", {}, 200),
    ("DELETE", "/emulator/faults", None, 200),
    ("POST", "/emulator/reset_cache", None, 200),
    ("OPTIONS", "/v1/models", None, 405),  # CORS preflight is never authenticated (no such route here)
])
async def test_api_key_leaves_the_rest_open(emulator_factory, method, path, body, status):
    async with emulator_factory(api_keys=(KEY,)) as emu:
        response = await emu.client.request(method, path, json=body)
        assert response.status_code == status, response.text


async def test_any_of_several_keys(emulator_factory):
    async with emulator_factory(api_keys=("one", "two")) as emu:
        for key, status in (("one", 200), ("two", 200), ("three", 401)):
            assert (await emu.client.get("/v1/models", headers={"Authorization": f"Bearer {key}"})).status_code == status


async def test_without_api_key_nothing_is_guarded(emulator_factory):
    async with emulator_factory() as emu:
        assert (await emu.client.get("/v1/models")).status_code == 200
        assert (await emu.client.get("/v1/models", headers={"Authorization": "Bearer anything"})).status_code == 200


def test_api_key_from_flag_or_vllm_api_key_env():
    assert config_from_args(cli("--api-key", "a"), environ={"VLLM_API_KEY": "env"}).api_keys == ("a",)
    assert config_from_args(cli("--api-key", "a", "b", "--api-key", "c"), environ={}).api_keys == ("a", "b", "c")
    assert config_from_args(cli(), environ={"VLLM_API_KEY": "env"}).api_keys == ("env",)
    assert config_from_args(cli(), environ={"VLLM_API_KEY": ""}).api_keys == ()
    assert config_from_args(cli(), environ={}).api_keys == ()


# ------------------------------------------------------------------ --strict-fields


async def test_strict_fields_refuses_cache_salt_in_openais_words(emulator_factory):
    async with emulator_factory(strict_fields=True) as emu:
        response = await emu.chat(HELLO, max_tokens=2, cache_salt="tenant-a")
        assert response.status_code == 400
        assert response.json() == {"error": {"message": "Unrecognized request argument supplied: cache_salt",
                                             "type": "invalid_request_error", "param": None, "code": None}}
        several = await emu.chat(HELLO, max_tokens=2, top_k=5, chat_template_kwargs={}, priority=1)
        assert several.json()["error"]["message"] == (
            "Unrecognized request arguments supplied: top_k, chat_template_kwargs, priority")
        text = await emu.client.post("/v1/completions", json={"model": "fast", "prompt": "hi", "cache_salt": "x"})
        assert text.json()["error"]["message"] == "Unrecognized request argument supplied: cache_salt"
        messages_in_completions = await emu.client.post("/v1/completions", json={"model": "fast", "prompt": "hi",
                                                                                 "messages": HELLO})
        assert messages_in_completions.json()["error"]["message"] == "Unrecognized request argument supplied: messages"
        log = await emu.requests()
        assert [(e["status"], e["error"]) for e in log] == [
            (400, "Unrecognized request argument supplied: cache_salt"),
            (400, "Unrecognized request arguments supplied: top_k, chat_template_kwargs, priority"),
            (400, "Unrecognized request argument supplied: cache_salt"),
            (400, "Unrecognized request argument supplied: messages"),
        ]
        assert log[0]["cache_salt"] is not None  # the fingerprint, as for any logged request


async def test_strict_fields_serves_openai_fields(emulator_factory):
    async with emulator_factory(strict_fields=True) as emu:
        chat = await emu.chat(
            HELLO, max_completion_tokens=3, temperature=0.2, top_p=0.9, n=1, stop=["\n\n"], seed=7, user="u-1",
            metadata={"k": "v"}, store=False, frequency_penalty=0, presence_penalty=0, logit_bias={}, logprobs=False,
            parallel_tool_calls=True, reasoning_effort="low", service_tier="auto", stream=True,
            stream_options={"include_usage": True},
        )
        assert chat.status_code == 200, chat.text
        text = await emu.client.post("/v1/completions", json={
            "model": "fast", "prompt": "hi", "max_tokens": 2, "suffix": None, "echo": False, "best_of": 1, "n": 1,
        })
        assert text.status_code == 200, text.text


async def test_without_strict_fields_vllm_extras_are_served(emulator_factory):
    async with emulator_factory() as emu:
        response = await emu.chat(HELLO, max_tokens=2, cache_salt="tenant-a", top_k=5)
        assert response.status_code == 200


def test_field_lists():
    assert {"messages", "model", "max_tokens", "max_completion_tokens", "tools", "tool_choice", "response_format",
            "functions", "function_call", "modalities", "audio", "prediction", "web_search_options"} <= CHAT_COMPLETION_FIELDS
    assert {"prompt", "suffix", "echo", "best_of", "max_tokens"} <= COMPLETION_FIELDS
    assert not {"cache_salt", "priority", "top_k", "min_p", "chat_template_kwargs", "add_generation_prompt",
                "repetition_penalty", "guided_json"} & (CHAT_COMPLETION_FIELDS | COMPLETION_FIELDS)
    assert unknown_fields({"model": 1, "zz": 2, "prompt": 3, "aa": 4}, chat=True) == ["zz", "prompt", "aa"]


# ------------------------------------------------------------------ --lora-modules

LORAS = (LoraModule("sql-lora", "/adapters/sql"), LoraModule("chat-lora", "/adapters/chat"))


async def test_lora_adapters_are_listed_after_the_base_model(emulator_factory):
    async with emulator_factory(lora_modules=LORAS) as emu:
        data = (await emu.client.get("/v1/models")).json()["data"]
        shape = [{k: card[k] for k in ("id", "object", "owned_by", "root", "parent", "max_model_len")} for card in data]
        assert shape == [
            {"id": "fast", "object": "model", "owned_by": "vllm", "root": "fast", "parent": None, "max_model_len": 4096},
            {"id": "sql-lora", "object": "model", "owned_by": "vllm", "root": "/adapters/sql", "parent": "fast",
             "max_model_len": None},
            {"id": "chat-lora", "object": "model", "owned_by": "vllm", "root": "/adapters/chat", "parent": "fast",
             "max_model_len": None},
        ]
        assert all(card["permission"][0]["object"] == "model_permission" for card in data)
        assert len({card["created"] for card in data}) == 1


async def test_hidden_window_is_hidden_on_every_card(emulator_factory):
    async with emulator_factory(lora_modules=LORAS, hide_max_model_len=True) as emu:
        assert all("max_model_len" not in card for card in (await emu.client.get("/v1/models")).json()["data"])


async def test_a_lora_request_is_served_with_the_base_window(emulator_factory):
    async with emulator_factory(lora_modules=LORAS, max_model_len=1024) as emu:
        response = await emu.chat(HELLO, model="sql-lora", max_tokens=3)
        assert response.status_code == 200
        body = response.json()
        assert body["model"] == "sql-lora"  # vLLM answers with the adapter's name
        assert body["usage"]["prompt_tokens"] == count_chat_tokens(HELLO)
        streamed = await emu.chat(HELLO, model="sql-lora", max_tokens=2, stream=True)
        assert '"model":"sql-lora"' in streamed.text
        too_long = await emu.chat([{"role": "user", "content": "word " * 1100}], model="sql-lora", max_tokens=1)
        assert too_long.status_code == 400
        assert "maximum context length is 1024 tokens" in too_long.json()["error"]["message"]
        tokenized = await emu.client.post("/tokenize", json={"model": "chat-lora", "messages": HELLO})
        assert tokenized.json()["count"] == count_chat_tokens(HELLO)
        unknown = await emu.chat(HELLO, model="other-lora", max_tokens=1)
        assert (unknown.status_code, unknown.json()["error"]["message"]) == (404, "The model `other-lora` does not exist.")
        assert [e["model"] for e in await emu.requests()] == ["sql-lora", "sql-lora", "sql-lora", "other-lora"]


async def test_prefix_cache_blocks_are_keyed_by_adapter(emulator_factory):
    """vLLM hashes a LoRA request's blocks with the adapter (name, path): an adapter hits its
    own earlier prompt, never the base model's blocks, nor another adapter's."""
    async with emulator_factory(lora_modules=LORAS) as emu:
        cap = (count_chat_tokens(LONG) - 1) // 16 * 16

        async def cached(model: str) -> int:
            response = await emu.chat(LONG, model=model, max_tokens=1)
            return response.json()["usage"]["prompt_tokens_details"]["cached_tokens"]

        assert await cached("fast") == 0
        assert await cached("sql-lora") == 0
        assert await cached("sql-lora") == cap
        assert await cached("chat-lora") == 0
        assert await cached("fast") == cap


def test_lora_module_flag_forms():
    assert parse_lora_module("sql=/adapters/sql") == LoraModule("sql", "/adapters/sql")
    assert parse_lora_module('{"name": "sql", "path": "/a", "base_model_name": "fast"}') == LoraModule("sql", "/a", "fast")
    for bad in ("sql", "=/p", '{"name": "x"}', '{"name": "x", "path": "/p", "rank": 8}'):
        with pytest.raises(ValueError, match="--lora-modules"):
            parse_lora_module(bad)
    config = config_from_args(cli("--lora-modules", "a=/p", "b=/q", "--lora-modules", "c=/r"), environ={})
    assert [m.name for m in config.lora_modules] == ["a", "b", "c"]
    assert config.model_names == ("fast", "a", "b", "c")
    with pytest.raises(ValueError, match="names must differ"):
        EmulatorConfig("fast", 64, lora_modules=(LoraModule("fast", "/p"),))
