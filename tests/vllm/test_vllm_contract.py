"""Contract: the emulator in vLLM 0.32 mode against a real vLLM 0.32 server, same requests.

Both serve ``fast-tiny`` with a 4,096-token window and 128-token blocks (vLLM's CPU default).
Their tokenizers differ (cl100k + a ChatML template in Python versus the tiny model's BPE + the
same layout in Jinja), so each prompt is sized with the server's own ``/tokenize`` and token
numbers are compared as relations (to the window, to the prompt, to the block size). Anything
the plugin reads (status, error body and wording, ``usage``, ``/tokenize``, ``/v1/models``,
the prefix-cache counters on ``/metrics``) must agree; known differences that the plugin
cannot observe are listed in ``docs/emulator-vs-vllm.md``.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from conftest import CPU_BLOCK, FAST_NAME, FAST_WINDOW, reset_prefix_cache
from litellm_kvwarm.context_errors import parse_context_error
from litellm_kvwarm.scrape import parse_prefix_cache
from litellm_kvwarm.windows import parse_models_response
from vllm_support import exact_messages

pytestmark = pytest.mark.vllm

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}]


@pytest.fixture(scope="module")
def servers(vllm, emulator):
    return {"vllm": vllm["fast"], "emulator": emulator}


def chat(server, messages, **extra) -> httpx.Response:
    # ignore_eos: dummy weights may draw the end token early; the emulator accepts and ignores it
    body = {"model": FAST_NAME, "messages": messages, "ignore_eos": True, **extra}
    return httpx.post(server.base_url + "/v1/chat/completions", json=body, timeout=300)


def shape(value: Any) -> Any:
    """Keys and value types of a JSON document, recursively (lists by their first element)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def numbers_out(message: str) -> str:
    return re.sub(r"\d+", "N", message)


def test_models_shape(servers):
    bodies = {k: httpx.get(s.base_url + "/v1/models", timeout=30).json() for k, s in servers.items()}
    real, emu = bodies["vllm"], bodies["emulator"]
    # the emulator's root is the served name; vLLM's is the model path: both strings
    assert shape(emu) == shape(real)
    for body in bodies.values():
        assert body["data"][0]["id"] == FAST_NAME
        assert parse_models_response(body, FAST_NAME) == FAST_WINDOW


CASES = {
    # name: (prompt tokens, request extras)
    "prompt_alone_too_long": (FAST_WINDOW + 500, {"max_tokens": 16}),
    "prompt_plus_max_tokens_over_window": (FAST_WINDOW - 96, {"max_tokens": 500}),
    "max_tokens_over_window": (100, {"max_tokens": FAST_WINDOW + 904}),
    "prompt_exactly_fills_window": (FAST_WINDOW, {"max_tokens": 16}),
    "prompt_exactly_fills_window_no_max_tokens": (FAST_WINDOW, {}),
    "max_tokens_zero": (100, {"max_tokens": 0}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_context_cases_answer_alike(servers, case):
    prompt, extra = CASES[case]
    answers = {}
    for kind, server in servers.items():
        msgs = exact_messages(server, FAST_NAME, prompt, f"contract-{case}")
        response = chat(server, msgs, **extra)
        answers[kind] = (response.status_code, response.json())
    (real_status, real), (emu_status, emu) = answers["vllm"], answers["emulator"]
    print(f"\n[contract] {case}: vLLM {real_status} {real.get('error', {}).get('message') or real['usage']}")
    assert emu_status == real_status
    if real_status != 200:
        assert shape(emu) == shape(real)
        assert {k: v for k, v in emu["error"].items() if k != "message"} == {k: v for k, v in real["error"].items() if k != "message"}
        # the numbers in these messages are window, max_tokens and "at least" = window + 1:
        # tokenizer-independent, so the texts must be identical
        assert emu["error"]["message"] == real["error"]["message"]
        parsed = {k: parse_context_error(v["error"]["message"]) for k, v in (("vllm", real), ("emulator", emu))}
        assert parsed["emulator"] == parsed["vllm"]
    else:
        for body in (real, emu):
            assert body["choices"][0]["finish_reason"] == "length"
            assert body["usage"]["prompt_tokens"] == prompt
            assert body["usage"]["completion_tokens"] == FAST_WINDOW - prompt  # silently clamped to the window


def test_usage_fields_and_block_granular_cached_tokens(servers):
    seen = {}
    for kind, server in servers.items():
        reset_prefix_cache(server)
        rows = []
        for prompt in (256, 300):
            msgs = exact_messages(server, FAST_NAME, prompt, f"usage-{prompt}")
            first = chat(server, msgs, max_tokens=4).json()["usage"]
            second = chat(server, msgs, max_tokens=4).json()["usage"]
            rows.append((prompt, first, second))
        seen[kind] = rows
    for kind, rows in seen.items():
        for prompt, first, second in rows:
            assert first["prompt_tokens"] == second["prompt_tokens"] == prompt
            assert first["completion_tokens"] == 4 and first["total_tokens"] == prompt + 4
            assert first["prompt_tokens_details"]["cached_tokens"] == 0
            # whole blocks only, and at least one prompt token is always computed
            assert second["prompt_tokens_details"]["cached_tokens"] == (prompt - 1) // CPU_BLOCK * CPU_BLOCK, kind
            # newly written blocks: the prompt's full blocks that were not hits
            assert first["prompt_tokens_details"]["created_cache_tokens"] == prompt // CPU_BLOCK * CPU_BLOCK
            assert second["prompt_tokens_details"]["created_cache_tokens"] == (
                prompt // CPU_BLOCK * CPU_BLOCK - second["prompt_tokens_details"]["cached_tokens"])
    assert shape(seen["emulator"][0][1]) == shape(seen["vllm"][0][1])


def test_growing_conversation_hits_the_earlier_turns_blocks(servers):
    for kind, server in servers.items():
        reset_prefix_cache(server)
        first = exact_messages(server, FAST_NAME, 1_000, "grow")
        chat(server, first, max_tokens=8)
        grown = first + [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": "Go on, please."}]
        usage = chat(server, grown, max_tokens=4).json()["usage"]
        # the earlier prompt's full blocks; the block with its end also held generated tokens
        assert usage["prompt_tokens_details"]["cached_tokens"] == 1_000 // CPU_BLOCK * CPU_BLOCK, kind


def test_tokenize(servers):
    msgs = [{"role": "user", "content": "What is the weather in Paris today?"}]
    for kind, server in servers.items():
        def tok(**extra):
            r = httpx.post(server.base_url + "/tokenize", json={"model": FAST_NAME, "messages": msgs, **extra}, timeout=30)
            assert r.status_code == 200, (kind, r.text)
            return r.json()
        plain, with_tools, no_prompt = tok(), tok(tools=TOOLS), tok(add_generation_prompt=False)
        assert set(plain) == {"count", "max_model_len", "tokens", "token_strs"}, kind
        assert plain["max_model_len"] == FAST_WINDOW
        assert plain["count"] == len(plain["tokens"])
        assert with_tools["count"] > plain["count"] + 20, f"{kind}: tools are not rendered into the prompt"
        assert no_prompt["count"] < plain["count"]
        assert plain["tokens"][: no_prompt["count"]] == no_prompt["tokens"]
        # tool_choice "none": vLLM refuses the default "auto" unless started with a tool parser
        # (docs/emulator-vs-vllm.md); the tools are still rendered into the prompt
        usage = chat(server, msgs, max_tokens=1, tools=TOOLS, tool_choice="none").json()["usage"]
        assert usage["prompt_tokens"] == with_tools["count"], f"{kind}: /tokenize disagrees with usage"


def test_metrics_the_plugin_reads(servers):
    for kind, server in servers.items():
        reset_prefix_cache(server)
        before = parse_prefix_cache(httpx.get(server.base_url + "/metrics", timeout=30).text, FAST_NAME)
        assert before is not None, f"{kind}: no vllm:prefix_cache_* counters"
        msgs = exact_messages(server, FAST_NAME, 700, "metrics")
        chat(server, msgs, max_tokens=2)
        usage = chat(server, msgs, max_tokens=2).json()["usage"]
        text = httpx.get(server.base_url + "/metrics", timeout=30).text
        after = parse_prefix_cache(text, FAST_NAME)
        assert after.queries - before.queries == 2 * 700, kind
        assert after.hits - before.hits == usage["prompt_tokens_details"]["cached_tokens"] == 640, kind
        for name in ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:prompt_tokens_cached_total",
                     "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:num_requests_running",
                     "vllm:num_requests_waiting", "vllm:request_success_total", "vllm:time_to_first_token_seconds_bucket"):
            assert re.search(rf"^{re.escape(name)}{{", text, re.M), f"{kind}: {name} missing"


def test_cache_salt_rules(servers):
    msgs = exact_messages(servers["vllm"], FAST_NAME, 300, "salt")
    answers = {}
    for kind, server in servers.items():
        msgs = exact_messages(server, FAST_NAME, 300, "salt")
        reset_prefix_cache(server)
        a = chat(server, msgs, max_tokens=2, cache_salt="tenant-a").json()["usage"]["prompt_tokens_details"]["cached_tokens"]
        b = chat(server, msgs, max_tokens=2, cache_salt="tenant-b").json()["usage"]["prompt_tokens_details"]["cached_tokens"]
        a2 = chat(server, msgs, max_tokens=2, cache_salt="tenant-a").json()["usage"]["prompt_tokens_details"]["cached_tokens"]
        empty = chat(server, msgs, max_tokens=2, cache_salt="")
        answers[kind] = (a, b, a2, empty.status_code, empty.json())
    assert answers["vllm"][:3] == answers["emulator"][:3] == (0, 0, 256)
    assert answers["vllm"][3] == answers["emulator"][3] == 400
    assert answers["vllm"][4] == answers["emulator"][4]
