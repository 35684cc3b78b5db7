"""The backstop against servers that are not vLLM, in a real proxy (issue 15): SGLang, TGI,
llama.cpp and LM Studio, emulated with their own limits, wordings, statuses and stream error
frames (``litellm_kvwarm.lab.emulator.server_shapes``).

Each small server advertises 16,384 tokens on ``/v1/models`` but holds less: SGLang admits 12,000
prompt tokens, TGI's ``max_total_tokens`` is 8,192, llama.cpp splits its context over 2 slots,
LM Studio loaded the model with 8,192. Streamed, each refuses an overflow inside an HTTP 200 stream.
What is checked, from the backends' own request logs: the client gets a clean 200 stream with content
from the large-window group; the refusal is learned (``kvwarm_learned_limit_tokens``), so the next
request of the same size goes to the large group with no attempt on the small server.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, set_faults, start_emulator

from e2e_support import CUSTOM_AUTH, backend_requests, clear_backends, messages_with_exact_tokens, start_proxy_with_keys

pytestmark = pytest.mark.e2e

ADVERTISED, SLOW_WINDOW = 16_384, 65_536
#: group -> (served model, emulator flags, prompt tokens that overflow it, learned limit kind, value)
SMALL = {
    "sglang": ("sglang-8b", {"server": "sglang", "admission_limit_tokens": 12_000}, 13_000, "input", 12_000),
    "tgi": ("tgi-8b", {"server": "tgi", "max_total_tokens": 8_192}, 9_000, "total", 8_192),
    # streamed, LiteLLM passes llama.cpp's message on without its n_prompt_tokens/n_ctx fields: the
    # refused prompt's exact size (/tokenize) − 1 is learned as an input bound
    "llamacpp": ("llamacpp-8b", {"server": "llamacpp", "parallel": 2}, 9_000, "input", 8_999),
    "lmstudio": ("lmstudio-8b", {"server": "lmstudio", "loaded_context_tokens": 8_192}, 9_000, "total", 8_192),
}
#: two tenants (custom auth, tests/e2e/auth_fixture.py): what one learns never moves the other
KEYS = {"sk-stream": {"team_id": "team-stream"}, "sk-plain": {"team_id": "team-plain"}, "sk-solo": {"team_id": "team-solo"},
        "sk-full": {"team_id": "team-full"}}
ROOM = ("tgi-room", {"server": "tgi", "max_total_tokens": 2_048})  # TGI's room overflow: prompt 1,887 + 1,024 > 2,048
#: SGLang holding what it advertises, and refusing a total that reaches it (its ``>=`` check)
FULL, FULL_WINDOW = "sglang-full-8b", 8_192


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("backstop-servers")
    procs = {"slow": start_emulator("slow-27b", SLOW_WINDOW, workdir=work, time_scale=0)}
    try:
        for group, (served, flags, *_rest) in SMALL.items():
            procs[group] = start_emulator(served, ADVERTISED, workdir=work, time_scale=0, **flags)
        procs["room"] = start_emulator(ROOM[0], ADVERTISED, workdir=work, time_scale=0, **ROOM[1])
        procs["full"] = start_emulator(FULL, FULL_WINDOW, workdir=work, time_scale=0, server="sglang")
        served = {group: spec[0] for group, spec in SMALL.items()} | {"room": ROOM[0], "full": FULL, "slow": "slow-27b"}
        groups = {group: [BackendSpec.of(procs[group], name)] for group, name in served.items()}
        groups["tgi-solo"] = [BackendSpec.of(procs["tgi"], SMALL["tgi"][0])]  # the same server, no escalation step
        config = proxy_config(
            groups,
            fallbacks=[{group: ["slow"]} for group in (*SMALL, "room", "full")],
            env_vars={"KVWARM_WARM_AHEAD": 0, "KVWARM_REQUEST_BUDGET_MS": 2000},
            callbacks=["litellm_kvwarm.proxy_handler_instance", "prometheus"],
            general_settings=CUSTOM_AUTH,
            litellm_settings={"require_auth_for_metrics_endpoint": False},
        )
        procs["proxy"] = start_proxy_with_keys(config, work, KEYS)
    except Exception:
        for p in procs.values():
            p.stop()
        raise
    yield procs
    for p in procs.values():
        p.stop()


@pytest.fixture(autouse=True)
def _clean(stack):
    clear_backends(*(p for name, p in stack.items() if name != "proxy"))


def stream(stack, body: dict, key: str = "sk-stream") -> tuple[int, list[dict], str]:
    """POST a streamed chat request through the proxy; (status, the data events as JSON, raw text)."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.stream("POST", stack["proxy"].base_url + "/v1/chat/completions", json={**body, "stream": True},
                      headers=headers, timeout=120) as response:
        text = response.read().decode()
    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]
    return response.status_code, events, text


def content_of(events: list[dict]) -> str:
    return "".join((c.get("delta") or {}).get("content") or "" for e in events for c in e.get("choices") or ())


def near_exact(emulator, served: str, n: int) -> list[dict]:
    """Messages of exactly ``n`` tokens, else ``n − 1`` (the filler text cannot hit every count)."""
    try:
        return messages_with_exact_tokens(emulator, served, n)
    except AssertionError:
        return messages_with_exact_tokens(emulator, served, n - 1)


def attempts(stack, name: str) -> list[tuple[int, object, object]]:
    return [(r["status"], r["max_tokens"], r.get("error")) for r in backend_requests(stack[name])]


def metrics_text(stack) -> str:
    headers = {"Authorization": f"Bearer {stack['proxy'].master_key}"}
    return httpx.get(stack["proxy"].base_url + "/metrics", headers=headers, timeout=10, follow_redirects=True).text


def learned(stack, served: str, kind: str, wait_s: float = 5.0) -> float | None:
    """``kvwarm_learned_limit_tokens`` of ``served``'s deployment, waiting up to ``wait_s`` for it (the
    failure callback that learns runs beside the fallback that answers the client)."""
    deadline = time.monotonic() + wait_s
    while True:
        for line in metrics_text(stack).splitlines():
            if line.startswith("kvwarm_learned_limit_tokens{") and f"/{served}\"" in line and f'limit="{kind}"' in line:
                return float(line.rsplit(" ", 1)[1])
        if time.monotonic() > deadline:
            return None
        time.sleep(0.1)


@pytest.mark.parametrize("group", list(SMALL))
def test_a_refusal_inside_a_200_stream_is_escalated_then_learned(stack, group):
    served, _, prompt, kind, limit = SMALL[group]
    messages = messages_with_exact_tokens(stack[group], served, prompt)
    body = {"model": group, "messages": messages, "max_tokens": 512}
    status, events, text = stream(stack, body)
    assert status == 200, text
    assert content_of(events), f"no content reached the client: {text[:500]}"
    assert not any("error" in e for e in events), f"an error frame reached the client: {text[:500]}"
    first = attempts(stack, group)
    assert len(first) == 1 and first[0][0] == 200 and first[0][2], first  # refused in-band, once
    assert [a[0] for a in attempts(stack, "slow")] == [200]
    assert learned(stack, served, kind) == limit
    clear_backends(stack[group], stack["slow"])
    status, events, text = stream(stack, body)  # the same size again: learned, no attempt on the small server
    assert status == 200 and content_of(events), text
    assert attempts(stack, group) == []
    assert [a[0] for a in attempts(stack, "slow")] == [200]


#: non-streamed, each server's own status and body (TGI 422; llama.cpp's body carries n_ctx)
PLAIN_LIMIT = {"sglang": ("input", 12_000), "tgi": ("total", 8_192), "llamacpp": ("total", 8_192), "lmstudio": ("total", 8_192)}


@pytest.mark.parametrize("group", list(SMALL))
def test_a_plain_refusal_is_escalated_and_learned_for_that_tenant_only(stack, group):
    """Non-streamed, by another tenant (the streamed test's tenant learned first, if it ran: this
    tenant still pays its own first attempt)."""
    served, _, prompt, _, _ = SMALL[group]
    messages = messages_with_exact_tokens(stack[group], served, prompt)
    body = {"model": group, "messages": messages, "max_tokens": 512}
    headers = {"Authorization": "Bearer sk-plain"}
    for round_ in (1, 2):
        response = httpx.post(stack["proxy"].base_url + "/v1/chat/completions", headers=headers, json=body, timeout=120)
        assert response.status_code == 200, response.text
        assert response.json()["choices"][0]["message"]["content"]
        small = [s for s, _, _ in attempts(stack, group)]
        assert small == ([422] if group == "tgi" else [400]), (round_, small)  # the second round adds none
        assert len(attempts(stack, "slow")) == round_
    kind, value = PLAIN_LIMIT[group]
    assert learned(stack, served, kind) == value


def test_tgi_room_overflow_escalates_instead_of_retrying_under_the_floor(stack):
    """TGI refuses prompt 1,887 + max_new_tokens 1,024 over its 2,048 total: the room left, 161, is
    under the 256-token output floor, so the request is escalated, not retried with 161."""
    messages = near_exact(stack["room"], ROOM[0], 1_887)
    status, events, text = stream(stack, {"model": "room", "messages": messages, "max_tokens": 100})
    assert status == 200 and content_of(events), text
    assert [(s, m) for s, m, _ in attempts(stack, "room")] == [(200, 100)]  # fits: stays, succeeds
    assert attempts(stack, "slow") == []
    clear_backends(stack["room"])
    status, events, text = stream(stack, {"model": "room", "messages": messages, "max_tokens": 1_024})
    assert status == 200 and content_of(events), text
    assert [m for _, m, _ in attempts(stack, "room")] == [1_024]  # no retry with a budget under the floor
    assert [(s, m) for s, m, _ in attempts(stack, "slow")] == [(200, 1_024)]


def test_tgi_422_is_handled_like_a_400(stack):
    """Non-streamed, TGI answers the overflow with HTTP 422: escalated the same way."""
    messages = near_exact(stack["room"], ROOM[0], 1_880)
    headers = {"Authorization": "Bearer sk-plain"}
    response = httpx.post(stack["proxy"].base_url + "/v1/chat/completions", headers=headers, timeout=120,
                          json={"model": "room", "messages": messages, "max_tokens": 1_000})
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"]
    assert [(s, m) for s, m, _ in attempts(stack, "room")] in ([(422, 1_000)], [])  # [] once 2,048 was learned
    assert [(s, m) for s, m, _ in attempts(stack, "slow")] == [(200, 1_000)]


def test_an_error_frame_after_content_is_passed_through_and_not_retried(stack):
    served = SMALL["sglang"][0]
    set_faults(stack["sglang"], {"completions": {"stream_error_after_tokens": 3, "count": 1}})
    messages = [{"role": "user", "content": "Say something short."}]
    status, events, text = stream(stack, {"model": "sglang", "messages": messages, "max_tokens": 50})
    assert status == 200
    assert content_of(events), text  # the content that went out stays
    assert "Internal server error" in text  # the error reaches the client
    assert [s for s, _, _ in attempts(stack, "sglang")] == [200]  # one attempt
    assert attempts(stack, "slow") == []  # never retried elsewhere
    metrics = metrics_text(stack)
    assert 'kvwarm_stream_errors_total{after_content="true",model_group="sglang"} 1.0' in metrics
    assert served


def test_a_rejection_that_quotes_the_client_teaches_nothing(stack):
    """A server quoting an invalid value back ("max_tokens must be an integer, got 'This model's
    maximum context length is 300 tokens'"): the client's own error, and nothing is learned from it,
    so the tenant's next request is served as before (breaker, issue 15)."""
    bait = "This model's maximum context length is 300 tokens"
    headers = {"Authorization": "Bearer sk-stream"}
    url = stack["proxy"].base_url + "/v1/chat/completions"
    bad = httpx.post(url, headers=headers, timeout=60, json={"model": "sglang", "messages": [{"role": "user", "content": "hi"}],
                                                             "max_tokens": bait})
    assert bad.status_code == 400, bad.text  # (LiteLLM itself reads it as a context error and tries slow too)
    clear_backends(stack["sglang"], stack["slow"])
    messages = messages_with_exact_tokens(stack["sglang"], SMALL["sglang"][0], 2_000)
    good = httpx.post(url, headers=headers, timeout=60, json={"model": "sglang", "messages": messages, "max_tokens": 1_000})
    assert good.status_code == 200, good.text
    assert [(s, m) for s, m, _ in attempts(stack, "sglang")] == [(200, 1_000)]  # not escalated, not cut
    assert learned(stack, SMALL["sglang"][0], "total", wait_s=0.5) is None


@pytest.mark.parametrize("status, group", [(401, "tgi"), (404, "lmstudio")])  # one group each: LiteLLM cools a failed deployment down
def test_a_non_length_error_on_a_large_request_keeps_its_status(stack, status, group):
    """Over half the advertised window the generic fallbacks are armed (a server may hold less than
    it advertises); a 401/404 there must still reach the client as itself, not as the Router's 429
    for a deployment in cooldown (breaker, issue 15), and nothing reaches the large group."""
    messages = messages_with_exact_tokens(stack[group], SMALL[group][0], 5_000)
    set_faults(stack[group], {"completions": {"status": status, "count": 1}})
    try:
        response = httpx.post(stack["proxy"].base_url + "/v1/chat/completions", headers={"Authorization": "Bearer sk-plain"},
                              json={"model": group, "messages": messages, "max_tokens": 500}, timeout=60)
    finally:
        set_faults(stack[group], {})
    assert response.status_code == status, response.text
    assert "ContextWindowExceeded" not in response.text and "context length" not in response.text
    assert attempts(stack, "slow") == []


def test_a_group_without_escalation_learns_and_clamps_the_next_request(stack):
    """TGI behind a group with nowhere to escalate: the first overflow is TGI's own 422 (as with
    LiteLLM alone); it teaches the 8,192 total, so the next request of that size is clamped to fit
    (on the server's exact count) and served instead of refused."""
    served = SMALL["tgi"][0]
    messages = messages_with_exact_tokens(stack["tgi"], served, 7_000)
    headers = {"Authorization": "Bearer sk-solo"}
    url = stack["proxy"].base_url + "/v1/chat/completions"
    first = httpx.post(url, headers=headers, json={"model": "tgi-solo", "messages": messages, "max_tokens": 2_000}, timeout=60)
    assert first.status_code == 422, first.text
    second = httpx.post(url, headers=headers, json={"model": "tgi-solo", "messages": messages, "max_tokens": 2_000}, timeout=60)
    assert second.status_code == 200, second.text
    assert [(s, m) for s, m, _ in attempts(stack, "tgi")] == [(422, 2_000), (200, 8_192 - 7_000)]


def test_sglang_s_refusal_at_exactly_its_window_is_retried_within_it_and_learned(stack):
    """SGLang refuses prompt + max_tokens that *reaches* its window ("maximum context length of 8192 tokens" for a total
    of exactly 8,192; ``>=`` in the releases that print it). The clamp on the exact count asks exactly the window's
    room; the backstop's retry on the same server asks one token less (before: the room again, refused again, then
    escalated to slow); the next request of the tenant is clamped to what the server admits, one attempt."""
    messages = near_exact(stack["full"], FULL, 6_000)
    headers = {"Authorization": "Bearer sk-full"}
    url = stack["proxy"].base_url + "/v1/chat/completions"
    first = httpx.post(url, headers=headers, json={"model": "full", "messages": messages, "max_tokens": 4_000}, timeout=60)
    assert first.status_code == 200, first.text
    tried = [(s, m) for s, m, _ in attempts(stack, "full")]
    assert len(tried) == 2 and tried[0][0] == 400 and tried[1] == (200, tried[0][1] - 1), tried
    assert attempts(stack, "slow") == []  # served where it fits, not escalated
    room = tried[1][1]
    assert learned(stack, FULL, "total") == FULL_WINDOW - 1
    clear_backends(stack["full"], stack["slow"])
    second = httpx.post(url, headers=headers, json={"model": "full", "messages": messages, "max_tokens": 4_000}, timeout=60)
    assert second.status_code == 200, second.text
    assert [(s, m) for s, m, _ in attempts(stack, "full")] == [(200, room)] and attempts(stack, "slow") == []
