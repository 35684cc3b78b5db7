"""Limits learned from rejections (litellm_kvwarm.learned_limits), the in-stream error counter
(litellm_kvwarm.stream_errors) and the backstop's use of a printed room (reactive): pure, real parser."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from litellm_kvwarm.backend_call import Deployment
from litellm_kvwarm.context_errors import parse_context_error
from litellm_kvwarm.learned_limits import LearnedLimits, LimitKind, Observed, limit_from_error, needs_prompt_count
from litellm_kvwarm.metrics import Metrics
from litellm_kvwarm.reactive import BackstopPlan, HopAction, decide_hop
from litellm_kvwarm.stream_errors import pass_through

DEP = Deployment("http://fast.test/v1", "fast-8b")

# (message, what is learned: (kind, tokens) or None)
CASES = [
    ("Input length (13000 tokens) exceeds the maximum allowed length (12000 tokens). Use a shorter input or enable "
     "--allow-auto-truncate.", (LimitKind.INPUT, 12_000)),  # SGLang KV admission
    ("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8192. Given: 9000 `inputs` tokens and "
     "512 `max_new_tokens`", (LimitKind.TOTAL, 8_192)),  # TGI max_total_tokens
    ("Input validation error: `inputs` must have less than 4096 tokens. Given: 5000", (LimitKind.INPUT, 4_096)),
    ("The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 9000>= "
     "n_ctx: 8192). Try to load the model with a larger context length, or provide a shorter input", (LimitKind.TOTAL, 8_192)),
    ('{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it",'
     '"type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}', (LimitKind.TOTAL, 8_192)),
    ("This model's maximum context length is 16384 tokens. However, your prompt contains at least 16385 input "
     "tokens, which exceeds this limit even without any output tokens.", (LimitKind.TOTAL, 16_384)),
    # never learned: output caps, one request's budget, a lower bound on the window, no numbers
    ("max_tokens: 10000 > 4096, which is the maximum allowed number of output tokens for claude-3-5-sonnet", None),
    ("max_tokens is too large: 100000. This model supports at most 16384 completion tokens", None),
    ("Input validation error: `max_new_tokens` must be <= 161. Given: 1024", None),  # TGI: the room left
    ("This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens", None),
    ("max_tokens must be at least 1, got 0.", None),
    ("the request exceeds the available context size, try increasing it", None),  # needs the refused prompt's count
]


@pytest.mark.parametrize("message, expected", CASES)
def test_what_each_rejection_teaches(message, expected):
    observed = limit_from_error(parse_context_error(message))
    assert (None if observed is None else (observed.kind, observed.tokens)) == expected


def test_a_numberless_prompt_alone_refusal_teaches_a_bound_from_the_refused_prompt():
    error = parse_context_error("the request exceeds the available context size, try increasing it")
    assert needs_prompt_count(error)
    assert limit_from_error(error, 9_000) == Observed(LimitKind.INPUT, 8_999, error.family, bound=True)
    assert not needs_prompt_count(parse_context_error("prompt is too long"))  # the generic row: no meaning to learn
    assert limit_from_error(parse_context_error("prompt is too long"), 9_000) is None


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_scoped_per_tenant_below_the_known_window_and_expiring():
    clock, seen = Clock(), []
    store = LearnedLimits(ttl_s=900, clock=clock, on_learn=lambda *a: seen.append(a))
    assert not store.observe("t1", DEP, Observed(LimitKind.TOTAL, 16_384, "x"), 16_384)  # not below: nothing to learn
    assert store.observe("t1", DEP, Observed(LimitKind.TOTAL, 8_192, "tgi-total"), 16_384)
    assert store.observe("t1", DEP, Observed(LimitKind.INPUT, 6_000, "sglang-max-allowed"), 16_384)
    assert not store.observe("", DEP, Observed(LimitKind.TOTAL, 8_192, "x"), None)  # no tenant, no scope
    assert (store.get("t1", DEP).total, store.get("t1", DEP).input) == (8_192, 6_000)
    assert store.get("t2", DEP).total is None  # another tenant is not moved
    # the key LiteLLM sends with is not part of the deployment's limit
    assert store.get("t1", Deployment(DEP.api_base, DEP.served_model, api_key="sk-x")).total == 8_192
    assert seen == [(DEP, LimitKind.TOTAL, 8_192, "tgi-total"), (DEP, LimitKind.INPUT, 6_000, "sglang-max-allowed")]
    clock.now += 899
    assert store.get("t1", DEP).total == 8_192
    clock.now += 1
    assert store.get("t1", DEP).total is None and store.get("t1", DEP).input is None


def test_a_bound_only_lowers_and_the_same_value_only_restarts_its_ttl():
    clock, seen = Clock(), []
    store = LearnedLimits(ttl_s=900, clock=clock, on_learn=lambda *a: seen.append(a[2]))
    assert store.observe("t1", DEP, Observed(LimitKind.INPUT, 8_549, "llamacpp", bound=True), 16_384)
    assert not store.observe("t1", DEP, Observed(LimitKind.INPUT, 9_049, "llamacpp", bound=True), 16_384)
    assert store.get("t1", DEP).input == 8_549  # a larger refused prompt says nothing new
    assert store.observe("t1", DEP, Observed(LimitKind.INPUT, 8_191, "llamacpp", bound=True), 16_384)
    clock.now += 800
    assert not store.observe("t1", DEP, Observed(LimitKind.INPUT, 8_191, "llamacpp", bound=True), 16_384)
    clock.now += 800  # 1,600 s after it was first learned, 800 s after it was seen again
    assert store.get("t1", DEP).input == 8_191 and seen == [8_549, 8_191]
    assert store.observe("t1", DEP, Observed(LimitKind.INPUT, 12_000, "sglang-max-allowed"), 16_384)  # an exact value replaces


def test_a_limit_the_request_could_not_have_reached_is_not_explained():
    """An input limit of 4,000 on a 550-token prompt is not about this request (an error frame
    quoting some other text): not learned."""
    assert not Observed(LimitKind.INPUT, 4_000, "x").explains(550, 50)
    assert Observed(LimitKind.INPUT, 12_000, "x").explains(13_500, 512)
    assert Observed(LimitKind.TOTAL, 2_048, "x").explains(1_900, 1_024)  # TGI's room: prompt + output
    assert not Observed(LimitKind.TOTAL, 8_192, "x").explains(3_000, None)
    assert Observed(LimitKind.TOTAL, 8_192, "x").explains(None, None)  # nothing to judge by


def test_bounded_least_recently_used_first():
    store = LearnedLimits(ttl_s=900, clock=Clock(), capacity=2)
    for tenant in ("a", "b", "c"):
        store.observe(tenant, DEP, Observed(LimitKind.TOTAL, 1_000, "x"), None)
    assert len(store) == 2 and store.get("a", DEP).total is None and store.get("c", DEP).total == 1_000


def test_the_room_the_server_printed_decides_retry_or_escalation():
    """TGI "`max_new_tokens` must be <= N" (N: the room left): under the floor → skip the retry slot
    (the chain's next step, the large group, follows); at or above it → retry with N."""
    plan = BackstopPlan("fast", ("slow",), 1_024, own_generic_fallbacks=True)
    small = parse_context_error("Input validation error: `max_new_tokens` must be <= 161. Given: 1024")
    decision = decide_hop(plan=plan, hop_group="fast", error=small, prompt_count=None, known_window=None, output_floor_tokens=256)
    assert decision.action is HopAction.SKIP
    roomy = parse_context_error("Input validation error: `max_new_tokens` must be <= 700. Given: 1024")
    decision = decide_hop(plan=plan, hop_group="fast", error=roomy, prompt_count=None, known_window=None, output_floor_tokens=256)
    assert (decision.action, decision.max_tokens) == (HopAction.RETRY_CLAMPED, 700)


class Chunk(dict):
    pass


async def _items(items, fail: Exception | None):
    for item in items:
        yield item
    if fail is not None:
        raise fail


def _run(items, fail):
    registry = CollectorRegistry()
    metrics = Metrics.create(registry)
    got = []

    async def consume():
        async for item in pass_through(_items(items, fail), {"model": "fast"}, metrics):
            got.append(item)

    raised = None
    try:
        asyncio.run(consume())
    except Exception as exc:  # noqa: BLE001 - the test reads what propagated
        raised = exc
    counts = {flag: registry.get_sample_value("kvwarm_stream_errors_total", {"model_group": "fast", "after_content": flag})
              for flag in ("true", "false")}
    return got, raised, counts


def test_an_error_after_content_passes_through_unchanged_and_is_counted():
    role = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    text = {"choices": [{"index": 0, "delta": {"content": "Hello"}}]}
    boom = RuntimeError("Internal server error")
    got, raised, counts = _run([role, text], boom)
    assert got == [role, text] and raised is boom
    assert counts == {"true": 1.0, "false": None}
    got, raised, counts = _run([role], boom)  # only the role chunk went out: no content yet
    assert raised is boom and counts == {"true": None, "false": 1.0}
    got, raised, counts = _run([role, text], None)
    assert raised is None and got == [role, text] and counts == {"true": None, "false": None}


def test_the_failed_deployment_is_the_one_litellm_recorded():
    """LiteLLM's Router records a failed attempt's deployment by ``model_info.id`` (previous_models);
    its failure callback's call details may already name the fallback's (breaker: a limit of
    'sglang-8b' was once learned for 'slow-27b')."""
    from litellm_kvwarm.catalog import deployment_by_id
    from litellm_kvwarm.reactive import last_attempt

    entries = [
        {"model_name": "fast", "litellm_params": {"model": "hosted_vllm/fast-8b"}, "model_info": {"id": "a"}},
        {"model_name": "slow", "litellm_params": {"model": "hosted_vllm/slow-27b"}, "model_info": {"id": "b"}},
    ]
    assert deployment_by_id(entries, "b") is entries[1] and deployment_by_id(entries, "c") is None
    assert deployment_by_id(entries, None) is None
    skip = {"deployment_id": "a", "exception_string": "litellm-kvwarm: prompt ≥3000tok ..."}
    real = {"deployment_id": "a", "exception_string": "maximum context length is 4096 tokens"}
    assert last_attempt([real]) == real and last_attempt([real, skip]) is None and last_attempt([]) is None
