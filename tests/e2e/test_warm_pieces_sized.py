"""Warm pieces sized from the live traffic of their target, end to end: a real ``litellm --config`` proxy with
the plugin at its defaults (``KVWARM_WARM_PIECE_SHARE`` 0.05, ``KVWARM_WARM_PIECE_TOKENS`` 512) in front of
real emulator processes (fast 4,096 / slow 16,384, ``--scheduling-policy priority``).

Before slow has served 8 live requests, a warm goes in pieces of up to 512 tokens. After one tenant's 8 live
requests of ~4k tokens sent to ``slow`` directly, the warm of another tenant's session is cut into pieces of
5% of their median prompt (``kvwarm_warm_piece_tokens{target="slow"}``): about 200 tokens, so a live request
waits for ~5% of its own prefill at most; the warm still ends with the whole conversation, each piece finding
the one before it cached, and the escalated turn finds all of it cached.
"""

from __future__ import annotations

import time

import httpx
import pytest

from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator

from e2e_support import (CUSTOM_AUTH, backend_requests, clear_backends, long_text, start_proxy_with_keys, stopped_at_exit,
                          tokenize_count)
from test_reply_warm import metric, wait_for
from test_warm_in_pieces import conversation

pytestmark = pytest.mark.e2e

FAST_WINDOW, SLOW_WINDOW, BLOCK = 4_096, 16_384, 16
KEYS = {"sk-a": {"team_id": "team-a"}, "sk-b": {"team_id": "team-b"}}


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("warm-piece-size")
    with stopped_at_exit({}) as procs:
        common = {"workdir": work, "time_scale": 0, "block_size": BLOCK}
        procs["fast"] = start_emulator("fast-8b", FAST_WINDOW, **common)
        procs["slow"] = start_emulator("slow-27b", SLOW_WINDOW, extra_args=["--scheduling-policy", "priority"], **common)
        groups = {"fast": [BackendSpec.of(procs["fast"], "fast-8b")], "slow": [BackendSpec.of(procs["slow"], "slow-27b")]}
        config = proxy_config(
            groups, fallbacks=[{"fast": ["slow"]}],
            env_vars={"KVWARM_CACHE_SALT_SECRET": "test-secret-not-for-production", "KVWARM_REQUEST_BUDGET_MS": 2000},
            general_settings=CUSTOM_AUTH, callbacks=["litellm_kvwarm.proxy_handler_instance", "prometheus"],
        )
        procs["proxy"] = start_proxy_with_keys(config, work, KEYS)
        yield procs


def _chat(stack, key: str, session: str, model: str, messages: list[dict]) -> httpx.Response:
    return httpx.post(stack["proxy"].base_url + "/v1/chat/completions",
                      json={"model": model, "messages": messages, "max_tokens": 8},
                      headers={"Authorization": f"Bearer {key}", "x-litellm-session-id": session}, timeout=60)


def _warm_steps(stack, session_messages: list[dict]) -> tuple[list[dict], int]:
    whole = tokenize_count(stack["slow"], "slow-27b", session_messages)
    wait_for(lambda: any(r["max_tokens"] == 1 and r["prompt_tokens"] > whole for r in backend_requests(stack["slow"])))
    time.sleep(0.3)
    sent = [r for r in backend_requests(stack["slow"]) if r["max_tokens"] == 1 and r["prompt_tokens"] <= whole]
    return sent, whole


def test_pieces_follow_the_live_prompts_slow_served(stack):
    clear_backends(stack["fast"], stack["slow"])
    # before any live traffic on slow: the configured 512
    early = conversation("early")
    assert _chat(stack, "sk-b", "size-early", "fast", early).status_code == 200
    sent, whole = _warm_steps(stack, early)
    steps = [b["prompt_tokens"] - a["prompt_tokens"] for a, b in zip(sent, sent[1:])]
    assert sent[-1]["prompt_tokens"] == whole and max(steps) > 300, steps  # message-sized pieces (~312 tokens each)
    assert metric(stack, "kvwarm_warm_piece_tokens", target="slow") == 512

    # one tenant's live traffic on slow: 8 requests of ~4k tokens each (their own sessions)
    clear_backends(stack["fast"], stack["slow"])
    for i in range(8):
        live = [{"role": "user", "content": f"Live {i}: " + long_text(15_000 + 400 * i)}]
        assert _chat(stack, "sk-a", f"size-live-{i}", "slow", live).status_code == 200
    prompts = sorted(r["prompt_tokens"] for r in backend_requests(stack["slow"]))
    assert len(prompts) == 8 and 3_000 < prompts[0] < prompts[-1] < 5_000
    expected = int(0.05 * prompts[len(prompts) // 2]) // BLOCK * BLOCK
    assert 150 < expected < 250

    # another tenant's session past the threshold: its warm comes in pieces of that size
    clear_backends(stack["fast"], stack["slow"])
    later = conversation("later")
    assert _chat(stack, "sk-b", "size-later", "fast", later).status_code == 200
    sent, whole = _warm_steps(stack, later)
    assert wait_for(lambda: metric(stack, "kvwarm_warm_piece_tokens", target="slow") == expected)
    assert sent[-1]["prompt_tokens"] == whole and all(w["status"] == 200 and w["priority"] == 10 for w in sent)
    steps = [b["prompt_tokens"] - a["prompt_tokens"] for a, b in zip(sent, sent[1:])]
    # pieces of ~expected estimated tokens (the routing estimate runs ~10% under the emulator's count, and a cut
    # inside a message lands at whitespace): well under the message-sized pieces above, about twice as many
    assert len(sent) >= 2 * 8 and max(steps[:-1]) <= 1.5 * expected, steps
    for before, after in zip(sent, sent[1:]):
        assert after["cached_tokens"] >= before["prompt_tokens"] - 2 * BLOCK, sent  # each found the one before cached
    # the escalated turn finds the whole conversation cached
    grown = [*later, {"role": "assistant", "content": "Sure."}, {"role": "user", "content": "More: " + long_text(6_000)}]
    assert _chat(stack, "sk-b", "size-later", "fast", grown).status_code == 200
    served = [r for r in backend_requests(stack["slow"]) if r["max_tokens"] != 1]
    assert len(served) == 1 and served[0]["status"] == 200 and served[0]["cached_tokens"] >= whole - BLOCK, served
