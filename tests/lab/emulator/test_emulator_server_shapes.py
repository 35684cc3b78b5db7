"""``--server``: other servers' length limits and error shapes, streamed and not (in-process,
ASGI transport, ManualClock), the ``stream_error_after_tokens`` fault, the flags, and what the
openai SDK raises for each streamed shape."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from litellm_kvwarm.context_errors import ErrorKind, parse_context_error
from litellm_kvwarm.lab.emulator.__main__ import build_parser, config_from_args
from litellm_kvwarm.lab.emulator.app import create_app
from litellm_kvwarm.lab.emulator.clock import ManualClock
from litellm_kvwarm.lab.emulator.config import EmulatorConfig
from litellm_kvwarm.lab.emulator.faults import FaultSpecError, parse_faults
from litellm_kvwarm.lab.emulator.tokenizer import count_chat_tokens
from litellm_kvwarm.lab.processes.emulators import _emulator_args

WINDOW = 2048
LONG = [{"role": "user", "content": "word " * 3000}]
P_LONG = count_chat_tokens(LONG)  # well over WINDOW
HELLO = [{"role": "user", "content": "hello there, how are you today?"}]
SGLANG_PROMPT = f"The input ({P_LONG} tokens) is longer than the model's context length ({WINDOW} tokens)."
TGI_TOTAL = (f"Input validation error: `inputs` tokens + `max_new_tokens` must be <= {WINDOW}. "
             f"Given: {P_LONG} `inputs` tokens and 10 `max_new_tokens`")
LLAMACPP = "the request exceeds the available context size, try increasing it"
LMSTUDIO = (f"The number of tokens to keep from the initial prompt is greater than the context length "
            f"(n_keep: {P_LONG}>= n_ctx: {WINDOW}). Try to load the model with a larger context length, "
            "or provide a shorter input")


def app_client(**overrides) -> httpx.AsyncClient:
    settings = {"served_model_name": "fast", "max_model_len": WINDOW, **overrides}
    app = create_app(EmulatorConfig(**settings), ManualClock())
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://emulator")


async def log(client: httpx.AsyncClient) -> list[dict]:
    return (await client.get("/emulator/requests")).json()["requests"]


def ids(n: int) -> list[int]:
    """A /v1/completions prompt of exactly ``n`` tokens."""
    return [7] * n


# The non-streamed refusal of LONG (max_tokens 10) per server: status, exact body, the parsed
# numbers (window, prompt) and kind.
NOT_STREAMED = {
    "sglang": (400, {"object": "error", "message": SGLANG_PROMPT, "type": "BadRequestError", "param": None,
                     "code": 400}, (WINDOW, P_LONG, ErrorKind.PROMPT_OVER_WINDOW)),
    # the prompt alone is over T, so the parser calls it prompt-over-window
    "tgi": (422, {"error": TGI_TOTAL, "error_type": "validation"}, (WINDOW, P_LONG, ErrorKind.PROMPT_OVER_WINDOW)),
    "llamacpp": (400, {"error": {"code": 400, "message": LLAMACPP, "type": "exceed_context_size_error",
                                 "n_prompt_tokens": P_LONG, "n_ctx": WINDOW}}, (WINDOW, P_LONG, ErrorKind.PROMPT_OVER_WINDOW)),
    "lmstudio": (400, {"error": {"message": LMSTUDIO, "type": "invalid_request_error", "param": None, "code": None}},
                 (WINDOW, P_LONG, ErrorKind.PROMPT_OVER_WINDOW)),
}


def parsed(text: str) -> tuple[int | None, int | None, ErrorKind | None]:
    error = parse_context_error(text)
    assert error is not None, text
    window = None if error.window is None else error.window.value
    prompt = None if error.prompt_tokens is None else error.prompt_tokens.value
    return window, prompt, error.kind


@pytest.mark.parametrize("server", sorted(NOT_STREAMED))
async def test_refusal_not_streamed(server):
    status, body, numbers = NOT_STREAMED[server]
    async with app_client(server=server) as client:
        response = await client.post("/v1/chat/completions", json={"model": "fast", "messages": LONG, "max_tokens": 10})
        assert (response.status_code, response.json()) == (status, body)
        message = body["error"] if server == "tgi" else body.get("message") or body["error"]["message"]
        [entry] = await log(client)
        assert (entry["status"], entry["error"], entry["stream"], entry["prompt_tokens"], entry["max_tokens"]) == (
            status, message, False, P_LONG, 10)
        # the body as a client reads it, and the message alone
        assert parsed(response.text) == numbers
        # llama.cpp's numbers are fields beside its message: the message alone carries none
        assert parsed(message) == ((None, None, ErrorKind.UNKNOWN) if server == "llamacpp" else numbers)
        # /v1/models still advertises max_model_len
        assert (await client.get("/v1/models")).json()["data"][0]["max_model_len"] == WINDOW


def sse_blocks(text: str) -> list[str]:
    assert text.endswith("\n\n"), text
    return [block for block in text.split("\n\n") if block]


@pytest.mark.parametrize("server", sorted(NOT_STREAMED))
async def test_refusal_streamed_is_200_with_the_error_first(server):
    status, body, numbers = NOT_STREAMED[server]
    async with app_client(server=server) as client:
        response = await client.post("/v1/chat/completions",
                                     json={"model": "fast", "messages": LONG, "max_tokens": 10, "stream": True})
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        blocks = sse_blocks(response.text)
        if server == "sglang":
            assert blocks == [f"data: {json.dumps({'error': body})}", "data: [DONE]"]
            assert blocks[0].startswith('data: {"error": {"object": "error", "message": "The input (')
        elif server == "tgi":
            assert blocks == [f'data: {{"error":{json.dumps(TGI_TOTAL)},"error_type":"validation"}}']
        elif server == "llamacpp":
            [block] = blocks
            assert block.startswith('data: {"id":"chatcmpl-')
            chunk = json.loads(block.removeprefix("data: "))
            assert list(chunk) == ["id", "object", "created", "model", "error"]
            assert (chunk["object"], chunk["model"], chunk["error"]) == ("chat.completion.chunk", "fast", body["error"])
            assert isinstance(chunk["created"], int)
        else:
            assert blocks == [f"event: error\ndata: {json.dumps(body, separators=(',', ':'))}"]
        message = body["error"] if server == "tgi" else body.get("message") or body["error"]["message"]
        [entry] = await log(client)
        assert (entry["status"], entry["error"], entry["stream"], entry["prompt_tokens"], entry["completion_tokens"]) == (
            200, message, True, P_LONG, None)
        assert parsed(blocks[0]) == numbers


async def test_text_completion_stream_llamacpp_chunk_is_a_text_completion():
    async with app_client(server="llamacpp") as client:
        response = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(WINDOW), "stream": True})
        [block] = sse_blocks(response.text)
        chunk = json.loads(block.removeprefix("data: "))
        assert chunk["id"].startswith("cmpl-") and chunk["object"] == "text_completion"
        assert chunk["error"]["n_prompt_tokens"] == WINDOW and chunk["error"]["n_ctx"] == WINDOW


async def test_vllm_is_unchanged_streamed_refusals_stay_http_errors():
    async with app_client() as client:
        response = await client.post("/v1/chat/completions",
                                     json={"model": "fast", "messages": LONG, "max_tokens": 10, "stream": True})
        assert response.status_code == 400
        assert response.json()["error"]["type"] == "BadRequestError"


# ------------------------------------------------------------------ limits below the window


async def test_sglang_total_and_admission_limit():
    total = ("Requested token count exceeds the model's maximum context length of 2048 tokens. You requested a total "
             "of 2911 tokens: 1887 tokens from the input messages and 1024 tokens for the completion. Please reduce "
             "the number of tokens in the input messages or the completion to fit within the limit.")
    async with app_client(server="sglang") as client:
        refused = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(1887), "max_tokens": 1024})
        assert (refused.status_code, refused.json()["message"]) == (400, total)
        assert parsed(total) == (2048, 1887, ErrorKind.PROMPT_PLUS_OUTPUT_OVER_WINDOW)
        reaches = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(1887), "max_tokens": 161})
        assert reaches.status_code == 400  # a total of exactly the window: SGLang's ``>=`` check refuses it
        served = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(1887), "max_tokens": 160})
        assert served.status_code == 200 and served.json()["usage"]["completion_tokens"] == 160
        full = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(2048)})
        assert full.json()["message"] == "The input (2048 tokens) is longer than the model's context length (2048 tokens)."
    admission = ("Input length (1887 tokens) exceeds the maximum allowed length (1500 tokens). "
                 "Use a shorter input or enable --allow-auto-truncate.")
    async with app_client(server="sglang", admission_limit_tokens=1500) as client:
        assert (await client.post("/v1/completions", json={"model": "fast", "prompt": ids(1500)})).status_code == 200
        refused = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(1887), "max_tokens": 5})
        assert refused.status_code == 400 and refused.json() == {
            "object": "error", "message": admission, "type": "BadRequestError", "param": None, "code": 400}
        streamed = await client.post("/v1/completions",
                                     json={"model": "fast", "prompt": ids(1887), "max_tokens": 5, "stream": True})
        assert sse_blocks(streamed.text) == [f"data: {json.dumps({'error': refused.json()})}", "data: [DONE]"]
        assert [(e["status"], e["stream"], e["prompt_tokens"]) for e in await log(client)] == [
            (200, False, 1500), (400, False, 1887), (200, True, 1887)]
        error = parse_context_error(admission)
        assert error is not None and error.prompt_tokens.value == 1887 and error.printed_limit.value == 1500
        assert (await client.get("/v1/models")).json()["data"][0]["max_model_len"] == WINDOW


async def test_tgi_total_limit_below_the_window():
    async with app_client(server="tgi", max_model_len=4096, max_total_tokens=2048) as client:
        served = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(1887), "max_tokens": 100})
        assert served.status_code == 200
        assert (served.json()["usage"]["completion_tokens"], served.json()["choices"][0]["finish_reason"]) == (100, "length")
        refused = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(1887), "max_tokens": 1024})
        message = ("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. "
                   "Given: 1887 `inputs` tokens and 1024 `max_new_tokens`")
        assert (refused.status_code, refused.json()) == (422, {"error": message, "error_type": "validation"})
        assert parsed(message) == (2048, 1887, ErrorKind.PROMPT_PLUS_OUTPUT_OVER_WINDOW)
        # no max_tokens: the default (16) is C
        default = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(2040)})
        assert default.json()["error"].endswith("Given: 2040 `inputs` tokens and 16 `max_new_tokens`")
        fits = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(2032)})
        assert (fits.json()["usage"]["completion_tokens"], fits.json()["choices"][0]["finish_reason"]) == (16, "stop")
        assert [e["status"] for e in await log(client)] == [200, 422, 422, 200]
        assert (await client.get("/v1/models")).json()["data"][0]["max_model_len"] == 4096


async def test_llamacpp_per_slot_window_with_parallel_2():
    async with app_client(server="llamacpp", max_model_len=4096, parallel=2) as client:
        cut = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(1887), "max_tokens": 1024})
        assert cut.status_code == 200
        assert (cut.json()["usage"]["completion_tokens"], cut.json()["choices"][0]["finish_reason"]) == (161, "length")
        refused = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(2048), "max_tokens": 1})
        assert (refused.status_code, refused.json()["error"]["n_prompt_tokens"], refused.json()["error"]["n_ctx"]) == (
            400, 2048, 2048)
        assert parsed(refused.text) == (2048, 2048, ErrorKind.PROMPT_OVER_WINDOW)
        assert (await client.post("/v1/completions", json={"model": "fast", "prompt": ids(2047)})).status_code == 200
        assert (await client.get("/v1/models")).json()["data"][0]["max_model_len"] == 4096


async def test_lmstudio_loaded_context():
    async with app_client(server="lmstudio", max_model_len=8192, loaded_context_tokens=4864) as client:
        refused = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(5000)})
        assert refused.status_code == 400
        assert "(n_keep: 5000>= n_ctx: 4864)" in refused.json()["error"]["message"]
        cut = await client.post("/v1/completions", json={"model": "fast", "prompt": ids(4800), "max_tokens": 100})
        assert (cut.json()["usage"]["completion_tokens"], cut.json()["choices"][0]["finish_reason"]) == (64, "length")
        # needs the parser row for LM Studio's n_keep wording (added by a parallel change)
        assert parsed(refused.json()["error"]["message"]) == (4864, 5000, ErrorKind.PROMPT_OVER_WINDOW)


# ------------------------------------------------------------------ stream_error_after_tokens


FAULT_FRAMES = {
    "vllm": lambda m, head: [f"data: {json.dumps({'error': {'message': m, 'type': 'InternalServerError', 'param': None, 'code': 500}})}",
                             "data: [DONE]"],
    "sglang": lambda m, head: [f"data: {json.dumps({'error': {'object': 'error', 'message': m, 'type': 'InternalServerError', 'param': None, 'code': 500}})}",
                               "data: [DONE]"],
    "tgi": lambda m, head: [f'data: {{"error":{json.dumps(m)},"error_type":"generation"}}'],
    "llamacpp": lambda m, head: ["data: " + json.dumps({**head, "error": {"code": 500, "message": m, "type": "server_error"}},
                                                       separators=(",", ":"))],
    "lmstudio": lambda m, head: ['event: error\ndata: {"error":{"message":' + json.dumps(m)
                                 + ',"type":"server_error","param":null,"code":null}}'],
}


@pytest.mark.parametrize("server", sorted(FAULT_FRAMES))
async def test_stream_error_after_tokens(server):
    faults = parse_faults({"completions": {"stream_error_after_tokens": 3, "count": 2}})
    async with app_client(server=server, faults=faults) as client:
        body = {"model": "fast", "messages": HELLO, "max_tokens": 10}
        plain = await client.post("/v1/chat/completions", json=body)  # counts, but is served
        assert plain.status_code == 200 and plain.json()["usage"]["completion_tokens"] == 10
        response = await client.post("/v1/chat/completions", json={**body, "stream": True})
        assert response.status_code == 200
        blocks = sse_blocks(response.text)
        chunks = [json.loads(block.removeprefix("data: ")) for block in blocks[:4]]
        assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
        assert [c["choices"][0]["finish_reason"] for c in chunks] == [None] * 4
        assert all(c["choices"][0]["delta"]["content"] for c in chunks[1:])
        head = {key: chunks[0][key] for key in ("id", "object", "created", "model")}
        assert blocks[4:] == FAULT_FRAMES[server]("Internal server error", head)
        healthy = await client.post("/v1/chat/completions", json={**body, "stream": True})  # count used up
        assert sse_blocks(healthy.text)[-1] == "data: [DONE]"
        entries = await log(client)
        assert [(e["status"], e["stream"], e["error"], e["fault"], e["completion_tokens"]) for e in entries] == [
            (200, False, None, None, 10), (200, True, "Internal server error", "stream_error_after:3", 3),
            (200, True, None, None, 10)]


async def test_stream_error_message_and_text_completions():
    message = "This model's maximum context length is 2048 tokens. However, your prompt contains at least 2049 input tokens"
    faults = parse_faults({"completions": {"stream_error_after_tokens": 0, "stream_error_message": message}})
    async with app_client(server="sglang", faults=faults) as client:
        response = await client.post("/v1/completions", json={"model": "fast", "prompt": "hi", "stream": True})
        blocks = sse_blocks(response.text)
        assert json.loads(blocks[0].removeprefix("data: "))["error"]["message"] == message
        assert blocks[1:] == ["data: [DONE]"]
        shown = (await client.get("/emulator/faults")).json()["completions"]
        assert (shown["stream_error_after_tokens"], shown["stream_error_message"]) == (0, message)


@pytest.mark.parametrize(("spec", "names"), [
    ({"stream_error_after_tokens": -1}, "stream_error_after_tokens must be an integer >= 0"),
    ({"stream_error_after_tokens": True}, "stream_error_after_tokens must be an integer >= 0"),
    ({"stream_error_after_tokens": 1, "status": 500}, "excludes status and hang"),
    ({"stream_error_message": "x"}, "needs stream_error_after_tokens"),
    ({"stream_error_after_tokens": 1, "stream_error_message": ""}, "must be a non-empty string"),
])
def test_stream_error_fault_spec_errors(spec, names):
    with pytest.raises(FaultSpecError) as raised:
        parse_faults({"completions": spec})
    assert names in str(raised.value)


# ------------------------------------------------------------------ config, CLI, start_emulator


@pytest.mark.parametrize(("overrides", "names"), [
    ({"server": "ollama"}, "server (--server) must be one of vllm, sglang, tgi, llamacpp, lmstudio"),
    ({"admission_limit_tokens": 100}, "admission_limit_tokens (--admission-limit-tokens) needs server (--server) sglang"),
    ({"server": "sglang", "max_total_tokens": 100}, "max_total_tokens (--max-total-tokens) needs server (--server) tgi"),
    ({"server": "tgi", "parallel": 2}, "parallel (--parallel) needs server (--server) llamacpp"),
    ({"loaded_context_tokens": 10}, "loaded_context_tokens (--loaded-context-tokens) needs server (--server) lmstudio"),
    ({"server": "llamacpp", "parallel": 0}, "parallel (--parallel) must be an integer >= 1"),
    ({"server": "llamacpp", "parallel": 4096}, "parallel (--parallel) must be <= max_model_len"),
    ({"server": "tgi", "max_total_tokens": 0}, "max_total_tokens (--max-total-tokens) must be an integer >= 1"),
])
def test_config_validation_names_the_flag(overrides, names):
    with pytest.raises(ValueError) as raised:
        EmulatorConfig(**{"served_model_name": "m", "max_model_len": 2048, **overrides})
    assert names in str(raised.value)


def test_cli_flags_round_trip():
    def config(*extra: str) -> EmulatorConfig:
        argv = ["--served-model-name", "m", "--max-model-len", "4096", "--port", "1", *extra]
        return config_from_args(build_parser().parse_args(argv), environ={})

    assert config().server == "vllm" and config().server_limits.slot_window == 4096
    assert (config("--server", "sglang", "--admission-limit-tokens", "1500").admission_limit_tokens) == 1500
    assert config("--server", "tgi", "--max-total-tokens", "2048").max_total_tokens == 2048
    assert config("--server", "llamacpp", "--parallel", "2").server_limits.slot_window == 2048
    assert config("--server", "lmstudio", "--loaded-context-tokens", "4864").loaded_context_tokens == 4864
    with pytest.raises(ValueError, match="needs server"):
        config("--parallel", "2")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--served-model-name", "m", "--max-model-len", "1", "--port", "1", "--server", "x"])
    assert _emulator_args({"server": "llamacpp", "parallel": 2, "max_total_tokens": None}) == [
        "--server", "llamacpp", "--parallel", "2"]
    assert _emulator_args({"admission_limit_tokens": 9, "loaded_context_tokens": 8, "max_total_tokens": 7}) == [
        "--admission-limit-tokens", "9", "--max-total-tokens", "7", "--loaded-context-tokens", "8"]


# ------------------------------------------------------------------ the openai SDK


async def sdk_error(server: str, **kwargs) -> Exception:
    app = create_app(EmulatorConfig("fast", WINDOW, server=server, **kwargs), ManualClock())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://emulator/v1") as http:
        client = openai.AsyncOpenAI(base_url="http://emulator/v1", api_key="k", http_client=http, max_retries=0)
        messages = HELLO if "faults" in kwargs else LONG
        stream = await client.chat.completions.create(model="fast", messages=messages, max_tokens=10, stream=True)
        with pytest.raises(openai.APIError) as raised:
            async for _ in stream:
                pass
        return raised.value


@pytest.mark.parametrize(("server", "message"), [
    ("sglang", SGLANG_PROMPT),
    ("tgi", "An error occurred during streaming"),  # a string ``error`` has no message
    ("llamacpp", LLAMACPP),
    ("lmstudio", LMSTUDIO),
])
async def test_openai_sdk_raises_api_error_for_each_streamed_shape(server, message):
    error = await sdk_error(server)
    # not an APIStatusError: the status was 200, so no status_code, and the class is the base one
    assert type(error) is openai.APIError
    assert error.message == message
    assert error.body == (TGI_TOTAL if server == "tgi" else NOT_STREAMED[server][1].get("error", NOT_STREAMED[server][1]))


@pytest.mark.parametrize("server", ["vllm", "sglang", "tgi", "llamacpp", "lmstudio"])
async def test_openai_sdk_after_content(server):
    error = await sdk_error(server, faults=parse_faults({"completions": {"stream_error_after_tokens": 2}}))
    assert type(error) is openai.APIError
    expected = "An error occurred during streaming" if server == "tgi" else "Internal server error"
    assert error.message == expected
