"""What a length refusal costs the proxy when it teaches nothing: the client's text is read (``echoes_client``: a
parse of up to 20,000 characters, ~0.1 s of the event loop on prose) only for a limit that would be new. A breaker's
proxies (2026-12-07): every refusal paid it, vLLM's usual one included (it prints the advertised window, which teaches
nothing), +116-167 ms a refused request, and one tenant's refusals slowed another tenant's requests ~2x."""

from __future__ import annotations

from litellm_kvwarm import limit_learning
from litellm_kvwarm.learned_limits import Deployment, LearnedLimits, LimitKind, Observed

from test_hook_adapters import CHAIN, FakeRouter, Key, attempt, body, handler  # noqa: E402


def refusal(window: int) -> str:
    return (f"This model's maximum context length is {window} tokens. However, you requested 6000 tokens "
            "(4000 in the messages, 2000 in the completion). Please reduce the length of the messages or completion.")


async def test_the_client_text_is_read_only_for_a_limit_that_would_be_new(monkeypatch):
    router = FakeRouter({"fast": None, "slow": None}, chains=CHAIN, discovered={"fast": 4096, "slow": 32768})
    h, _ = handler(router, monkeypatch)
    read = []
    real = limit_learning.echoes_client
    monkeypatch.setattr(limit_learning, "echoes_client", lambda observed, request: read.append(observed.tokens) or real(observed, request))
    data = await h.async_pre_call_hook(Key(), None, body(13000, max_tokens=2000), "acompletion")
    fast = h.facts.services.learned

    async def hop(text: str) -> None:
        record = {"deployment_id": "fast-0", "exception_string": text, "exception_type": "ContextWindowExceededError"}
        kwargs = attempt({**data["metadata"], "previous_models": [record], "model_group": "slow"}, fallback_depth=1, max_tokens=2000,
                         model="hosted_vllm/slow-model", api_base="http://slow.test/v1", model_info={"id": "slow-0"})
        await h.async_pre_call_deployment_hook(kwargs, "acompletion")

    await hop(refusal(4096))  # the advertised window: nothing to learn, the client's text is not read
    assert read == [] and fast._entries == {}
    await hop(refusal(3500))  # below it: new, read once, learned
    assert read == [3500]
    learned = [slot for slot in fast._entries.values()]
    assert [s[LimitKind.TOTAL][0] for s in learned] == [3500]
    await hop(refusal(3500))  # the same limit again: its TTL restarts, nothing read
    assert read == [3500]


def test_adds_says_what_observe_then_does():
    clock = [0.0]
    store = LearnedLimits(ttl_s=900, clock=lambda: clock[0])
    dep = Deployment("http://fast.test/v1", "fast-model")
    steps = [(Observed(LimitKind.TOTAL, 16_384, "vllm"), 16_384), (Observed(LimitKind.TOTAL, 8_192, "tgi"), 16_384),
             (Observed(LimitKind.TOTAL, 8_192, "tgi"), 16_384), (Observed(LimitKind.INPUT, 9_000, "x", bound=True), 16_384),
             (Observed(LimitKind.INPUT, 9_500, "x", bound=True), 16_384), (Observed(LimitKind.INPUT, 8_000, "x", bound=True), 16_384),
             (Observed(LimitKind.TOTAL, 8_192, "tgi"), None), (Observed(LimitKind.TOTAL, 7_000, "tgi"), 7_000)]
    seen = []
    for observed, known in steps:
        clock[0] += 600  # TTL 900 s: a value not seen again within it is new once more
        seen.append((store.adds("t1", dep, observed, known), store.observe("t1", dep, observed, known)))
    assert [a for a, _ in seen] == [o for _, o in seen]
    # not below the window; new; the same again; a bound; a larger bound; a lower bound; 8,192 expired (last seen 1,200 s
    # before): new again; not below the window
    assert seen == [(False, False), (True, True), (False, False), (True, True), (False, False), (True, True), (True, True), (False, False)]
    assert store.adds("", dep, Observed(LimitKind.TOTAL, 100, "x"), None) is False
