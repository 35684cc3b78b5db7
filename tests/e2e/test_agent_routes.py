"""Agent traffic end to end (issue 14): ``/v1/messages`` (Anthropic Messages, as Claude Code
sends it) and ``/v1/responses`` through a real ``litellm --config`` proxy with the plugin, to
emulated vLLM backends (fast 16,384, slow 131,072). Every fact is read from the backends' own
request logs: which backend served each turn, the output budget it saw, its prompt and cached
tokens.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent_sessions import SYSTEM, TASK, messages_body, responses_body, turns
from e2e_support import backend_requests, clear_backends, long_text, post_read
from litellm_kvwarm.lab.images import png_data_url
from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy

pytestmark = pytest.mark.e2e

FAST_WINDOW, SLOW_WINDOW, FLOOR = 16_384, 131_072, 256
TURN_CHARS = 12_000  # ≈3,500 tokens of source code per tool result
TURNS = 9  # the prompt grows from ≈4k to ≈32k tokens
CHAT, MESSAGES_PATH, RESPONSES_PATH = "/v1/chat/completions", "/v1/messages", "/v1/responses"
VL_SMALL, VL_LARGE = "Qwen2.5-VL-7B-Instruct", "Qwen2.5-VL-72B-Instruct"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("agents")
    # fast rejects prompt + max_tokens over the window, as vLLM 0.18-0.31 do
    procs = {
        "fast": start_emulator("fast-8b", FAST_WINDOW, workdir=work, vllm_version="0.31.0", time_scale=0, block_size=16),
        "slow": start_emulator("slow-27b", SLOW_WINDOW, workdir=work, vllm_version="0.32.0", time_scale=0, block_size=16),
        # vision groups: the served names tell the plugin the Qwen2.5-VL image rule the emulator counts by
        "vl_small": start_emulator(VL_SMALL, 8_192, workdir=work, vllm_version="0.32.0", time_scale=0),
        "vl_large": start_emulator(VL_LARGE, 32_768, workdir=work, vllm_version="0.32.0", time_scale=0),
        # a fast backend that hides its window: the plugin cannot route proactively, the backstop must act
        "opaque": start_emulator("opaque-8b", FAST_WINDOW, workdir=work, vllm_version="0.31.0", time_scale=0,
                                 extra_args=["--hide-max-model-len"]),
    }
    groups = {"fast": [BackendSpec.of(procs["fast"], "fast-8b")], "slow": [BackendSpec.of(procs["slow"], "slow-27b")],
              "vision": [BackendSpec.of(procs["vl_small"], VL_SMALL)], "vision-large": [BackendSpec.of(procs["vl_large"], VL_LARGE)],
              "opaque": [BackendSpec.of(procs["opaque"], "opaque-8b")]}
    config = proxy_config(groups, fallbacks=[{"fast": ["slow"]}, {"vision": ["vision-large"]}, {"opaque": ["slow"]}],
                          callbacks=["litellm_kvwarm.proxy_handler_instance", "prometheus"],
                          env_vars={"KVWARM_REQUEST_BUDGET_MS": 3000, "KVWARM_CACHE_SALT_SECRET": "agent-test-secret",
                                    "KVWARM_REPLY_WARM": 0, "KVWARM_WARM_PRIORITY": 0,  # warm-ahead alone
                                    # whole warms: these sessions send their turns with no think time, so a warm in
                                    # pieces (a round trip each) is still arriving when the escalated turn comes; that
                                    # turn then prefills the rest itself (on vLLM V1 in about the time it would wait for
                                    # a whole warm) and finds less counted as cached. Pieces on these APIs:
                                    # tests/e2e/test_warm_in_pieces.py
                                    "KVWARM_WARM_PIECE_TOKENS": 0})
    try:
        procs["proxy"] = start_proxy(config, workdir=tmp_path_factory.mktemp("proxy"))
    except Exception:
        for proc in procs.values():
            proc.stop()
        raise
    yield procs
    for proc in procs.values():
        proc.stop()


@pytest.fixture(autouse=True)
def _clean(stack):
    clear_backends(stack["fast"], stack["slow"], stack["vl_small"], stack["vl_large"], stack["opaque"])


def post(stack, path: str, body: dict) -> tuple[int, str]:
    """POST through the stack's proxy (:func:`e2e_support.post_read`)."""
    return post_read(stack["proxy"], path, body)


#: Output budgets a warm arrives with: 1, or 16 on /v1/responses (LiteLLM 1.108 raises a Responses
#: ``max_output_tokens`` under 16 to 16, OpenAI's minimum: OPENAI_RESPONSES_API_MIN_MAX_OUTPUT_TOKENS).
WARM_BUDGETS = (1, 16)


def served(stack, name: str, path: str) -> list[dict]:
    """Requests the backend served that are not warms (the tests' own requests ask for 64+ tokens)."""
    return [r for r in backend_requests(stack[name], path) if r["max_tokens"] not in WARM_BUDGETS]


def warms(stack, path: str) -> list[dict]:
    return [r for r in backend_requests(stack["slow"], path) if r["max_tokens"] in WARM_BUDGETS]


def run_session(stack, build, path: str, backend_path: str, *, stream: bool) -> list[dict]:
    """Send the session's turns in order; returns, per turn, which backend served it and its log row."""
    rows = []
    for k in range(1, TURNS + 1):
        before = {n: len(served(stack, n, backend_path)) for n in ("fast", "slow")}
        body = build(turns(k, TURN_CHARS), model="fast", stream=stream, task=f"{TASK} (session {path} stream={stream})")
        status, text = post(stack, path, body)
        assert status == 200, text[:500]
        new = {n: served(stack, n, backend_path)[before[n]:] for n in ("fast", "slow")}
        assert len(new["fast"]) + len(new["slow"]) == 1, f"turn {k}: {new}"  # one attempt, never a failed one first
        name = "fast" if new["fast"] else "slow"
        rows.append({"turn": k, "backend": name, **new[name][0], "warms_so_far": len(warms(stack, backend_path))})
    return rows


def check_session(rows: list[dict]) -> None:
    """The three facts of issue 14 for one session."""
    for row in rows:
        fits = row["prompt_tokens"] + FLOOR <= FAST_WINDOW
        assert row["backend"] == ("fast" if fits else "slow"), f"turn {row['turn']}: {row}"
    escalated = [r for r in rows if r["backend"] == "slow"]
    # the last, ~28,000-token turn reached slow (its text is the package's own source: the count moves with every edit)
    assert escalated and escalated[-1]["turn"] == TURNS and escalated[-1]["prompt_tokens"] >= 25_000, rows
    assert escalated[0]["warms_so_far"] >= 1, "no warm on slow before the first escalated turn"
    first, last = escalated[0], escalated[-1]
    assert first["cached_tokens"] >= 0.7 * first["prompt_tokens"], first  # the warm's prefix
    assert last["cached_tokens"] >= 0.8 * last["prompt_tokens"], last


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_messages_session_escalates_before_overflow_into_a_warmed_cache(stack, stream):
    rows = run_session(stack, messages_body, MESSAGES_PATH, CHAT, stream=stream)
    check_session(rows)
    # the warm went through the same bridge as the escalated turns: exactly one warm per turn past
    # 60% of the window at most (re-warms on growth), none after the session left fast
    past = [r for r in rows if r["backend"] == "fast" and r["prompt_tokens"] >= 0.6 * FAST_WINDOW]
    assert 1 <= len(warms(stack, CHAT)) <= len(past) + 1


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_responses_session_escalates_before_overflow_into_a_warmed_cache(stack, stream):
    rows = run_session(stack, responses_body, RESPONSES_PATH, RESPONSES_PATH, stream=stream)
    check_session(rows)


HEAD_SYSTEM = SYSTEM * 12  # ≈ 14k characters, ≈ 3k tokens: a head worth a warm (KVWARM_WARM_HEAD_TOKENS, 2,048)


def test_a_session_that_jumps_past_the_window_at_once_finds_its_head_cached(stack):
    """Issue 16 item 4: an agent session at ≈4k tokens whose next tool result is 30k tokens. No growth step
    before it predicts the jump and it never reaches the threshold on fast; its head (system prompt, tools,
    first user message) was warmed the first time the proxy saw it, so the escalated turn finds it cached."""
    task = TASK + " (a session that jumps)"
    first = {**messages_body(turns(1, 4_000), model="fast", task=task), "system": HEAD_SYSTEM}
    status, text = post(stack, MESSAGES_PATH, first)
    assert status == 200, text[:300]
    assert len(served(stack, "fast", CHAT)) == 1 and served(stack, "slow", CHAT) == []
    deadline = time.monotonic() + 15  # the warm is fire-and-forget: it lands on slow shortly after the reply
    while not warms(stack, CHAT) and time.monotonic() < deadline:
        time.sleep(0.1)
    head = warms(stack, CHAT)
    assert len(head) == 1 and head[0]["prompt_tokens"] >= 2_048, head  # the head alone: system, tools, the task
    assert head[0]["prompt_tokens"] < served(stack, "fast", CHAT)[0]["prompt_tokens"] - 500
    jump = {**messages_body([*turns(1, 4_000), ("corpus.txt", long_text(120_000))], model="fast", task=task),
            "system": HEAD_SYSTEM}
    status, text = post(stack, MESSAGES_PATH, jump)
    assert status == 200, text[:300]
    escalated = served(stack, "slow", CHAT)
    assert len(escalated) == 1 and len(served(stack, "fast", CHAT)) == 1  # proactively, no failed attempt on fast
    turn = escalated[0]
    assert turn["prompt_tokens"] > FAST_WINDOW and turn["cached_tokens"] >= head[0]["prompt_tokens"] - 32, (turn, head)
    assert len(warms(stack, CHAT)) == 1  # one head warm per session: the second request was not its first sight


def test_messages_clamp_on_a_strict_fast_backend(stack):
    """``max_tokens`` 32,000 with a ~12,300-token prompt on a backend that rejects prompt +
    max_tokens over its window (vLLM 0.18-0.31): answered on the first attempt, with a budget
    that fits."""
    body = {"model": "fast", "max_tokens": 32_000, "system": "Summarise.",
            "messages": [{"role": "user", "content": long_text(58_500)}]}
    status, text = post(stack, MESSAGES_PATH, body)
    assert status == 200, text[:300]
    rows = served(stack, "fast", CHAT)
    assert len(rows) == 1 and served(stack, "slow", CHAT) == []
    assert 11_800 < rows[0]["prompt_tokens"] < 12_800
    assert rows[0]["max_tokens"] <= FAST_WINDOW - rows[0]["prompt_tokens"]


def test_messages_with_thinking_history_is_routed_by_its_text(stack):
    """Thinking blocks (and redacted ones) in the history are estimated without error; a short
    conversation stays on fast."""
    body = {"model": "fast", "max_tokens": 64, "messages": [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "Simple arithmetic.", "signature": "s" * 300},
                                          {"type": "redacted_thinking", "data": "R" * 5000},
                                          {"type": "text", "text": "4"}]},
        {"role": "user", "content": "And 3+3?"}]}
    status, text = post(stack, MESSAGES_PATH, body)
    assert status == 200, text[:300]
    assert len(served(stack, "fast", CHAT)) == 1 and served(stack, "slow", CHAT) == []


def test_responses_with_reasoning_items_is_routed_by_its_text(stack):
    body = {"model": "fast", "max_output_tokens": 64, "input": [
        {"type": "message", "role": "user", "content": "What is 2+2?"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Arithmetic."}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "4"}]},
        {"type": "message", "role": "user", "content": "And 3+3?"}]}
    status, text = post(stack, RESPONSES_PATH, body)
    assert status == 200, text[:300]
    assert len(served(stack, "fast", RESPONSES_PATH)) == 1 and served(stack, "slow", RESPONSES_PATH) == []
    # the same history with a long final message is escalated by its text
    long = {**body, "input": [*body["input"], {"type": "message", "role": "user", "content": long_text(80_000)}]}
    status, text = post(stack, RESPONSES_PATH, long)
    assert status == 200, text[:300]
    assert len(served(stack, "slow", RESPONSES_PATH)) == 1 and len(served(stack, "fast", RESPONSES_PATH)) == 1
    json.loads(text)


def screenshot_request(api: str, sizes: list[tuple[int, int]]) -> tuple[str, dict]:
    """A vision request with one PNG per size and ~1,500 tokens of text, as chat or Messages."""
    text = long_text(7_000)  # ≈1,500 tokens
    if api == "chat":
        parts = [{"type": "image_url", "image_url": {"url": png_data_url(w, h)}} for w, h in sizes]
        return CHAT, {"model": "vision", "max_tokens": 64, "messages": [{"role": "user", "content": [*parts, {"type": "text", "text": text}]}]}
    blocks = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png_data_url(w, h).split(",", 1)[1]}}
              for w, h in sizes]
    return MESSAGES_PATH, {"model": "vision", "max_tokens": 64, "messages": [{"role": "user", "content": [*blocks, {"type": "text", "text": text}]}]}


@pytest.mark.parametrize("api", ["chat", "messages"])
def test_screenshots_are_priced_by_their_size(stack, api):
    """Three 1920x1080 screenshots (2,693 tokens each on Qwen2.5-VL) and ~1,500 tokens of text
    cannot fit an 8,192 window: routed to the larger group before dispatch. One 200x100 image
    (30 tokens) with the same text stays."""
    path, big = screenshot_request(api, [(1920, 1080)] * 3)
    status, text = post(stack, path, big)
    assert status == 200, text[:300]
    assert served(stack, "vl_small", CHAT) == []  # no attempt on the small window
    [row] = served(stack, "vl_large", CHAT)
    assert row["prompt_tokens"] > 8_192 and row["prompt_tokens"] >= 3 * 2_693
    clear_backends(stack["vl_small"], stack["vl_large"])
    path, small = screenshot_request(api, [(200, 100)])
    status, text = post(stack, path, small)
    assert status == 200, text[:300]
    assert served(stack, "vl_large", CHAT) == []
    [row] = served(stack, "vl_small", CHAT)
    assert 1_400 < row["prompt_tokens"] < 2_000


def backstop_body(api: str, chars: int, output: int) -> tuple[str, str, dict]:
    """(proxy path, backend path, body) of a one-message request to the ``opaque`` group."""
    if api in ("chat", "messages"):
        return MESSAGES_PATH if api == "messages" else CHAT, CHAT, {
            "model": "opaque", "max_tokens": output, "messages": [{"role": "user", "content": long_text(chars)}]}
    return RESPONSES_PATH, RESPONSES_PATH, {"model": "opaque", "max_output_tokens": output, "input": long_text(chars)}


@pytest.mark.parametrize("api", ["chat", "messages", "responses"])
def test_backstop_clamps_on_the_servers_own_numbers(stack, api):
    """The window cannot be read: the backend's 400 carries its numbers; the retry on the same
    group asks for what fits, and the client gets a 200 (not the 400). Once one 400 taught the
    plugin the window (any API's), the next request is clamped on its first attempt."""
    path, backend_path, body = backstop_body(api, 58_500, 8_000)
    status, text = post(stack, path, body)
    assert status == 200, text[:300]
    rows = backend_requests(stack["opaque"], backend_path)
    assert [r["status"] for r in rows] in ([400, 200], [200])
    assert rows[-1]["max_tokens"] + rows[-1]["prompt_tokens"] <= FAST_WINDOW
    assert served(stack, "slow", backend_path) == []


@pytest.mark.parametrize("api", ["messages", "responses"])
def test_backstop_escalates_what_cannot_fit(stack, api):
    path, backend_path, body = backstop_body(api, 120_000, 256)
    status, text = post(stack, path, body)
    assert status == 200, text[:300]
    # one 400 on opaque, or none once an earlier 400 taught the plugin its window (then: proactive)
    assert [r["status"] for r in backend_requests(stack["opaque"], backend_path)] in ([400], [])
    [row] = served(stack, "slow", backend_path)
    assert row["prompt_tokens"] > FAST_WINDOW


def counters(stack) -> dict[tuple[str, tuple], float]:
    text = httpx.get(stack["proxy"].base_url + "/metrics", headers={"Authorization": f"Bearer {stack['proxy'].master_key}"},
                     timeout=10, follow_redirects=True).text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def total(samples, name: str, **labels: str) -> float:
    return sum(v for (n, lab), v in samples.items() if n == name and all(dict(lab).get(k) == x for k, x in labels.items()))


@pytest.mark.parametrize("api", ["messages", "responses"])
def test_usage_is_counted_once_per_backend_attempt(stack, api):
    """The prompt and cached tokens of an agent request are counted once (a Messages request is
    bridged to a chat call inside LiteLLM: one backend attempt, one count)."""
    before = counters(stack)
    path, backend_path, body = backstop_body(api, 4_000, 64)
    body["model"] = "fast"
    status, text = post(stack, path, body)
    assert status == 200, text[:300]
    [row] = served(stack, "fast", backend_path)
    assert row["cache_salt"] is not None  # the tenant's prefix-cache isolation reaches the backend on every API
    after = counters(stack)
    name = "kvwarm_prompt_tokens_total"
    assert total(after, name, model_group="fast") - total(before, name, model_group="fast") == row["prompt_tokens"]
