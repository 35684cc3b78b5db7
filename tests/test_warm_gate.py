"""The warm gate: guards in order, no I/O on the request path, tenant-scoped keyed-hash keys,
and the gate and runner together under a burst (issue 12, items 4 and 10)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter

import pytest

from litellm_kvwarm import identity
from litellm_kvwarm.config import Settings
from litellm_kvwarm.cooldown import MemoryCooldownStore
from litellm_kvwarm.warm import SESSION_KEY, WarmOutcome, WarmRunner
from litellm_kvwarm.warm_gate import WarmCandidate, WarmGate, admission_key, cooldown_key, tenant_rate_key

SECRET = b"k" * 32
WINDOW, SLOW_WINDOW = 4_096, 16_384
NEAR = 3_000  # tokens: >= 60% of 4,096


def session(sid: str = "raw-session-1", tenant: str = "team:team-a") -> identity.Session:
    return identity.Session(tenant=tenant, session_id=sid, source="litellm")


def candidate(sess=None, tokens=NEAR, *, known=True, target_window=SLOW_WINDOW, growth=None) -> WarmCandidate:
    return WarmCandidate("slow", known, target_window, tokens, WINDOW, sess, growth)


def chat_data(sid: str = "raw-session-1", text: str = "hello") -> dict:
    return {
        "model": "fast",
        "messages": [{"role": "user", "content": text}],
        "max_tokens": 64,
        "litellm_session_id": sid,
        "metadata": {"session_id": sid, "user_api_key_team_id": "team-a", "user_api_key": "f" * 64},
    }


class Captured:
    """A runner stand-in that keeps what the gate submits (for the gate's own contract)."""

    def __init__(self):
        self.jobs = []

    def submit(self, job):
        self.jobs.append(job)
        return WarmOutcome.QUEUED


def gate_with(settings: Settings, runner) -> tuple[WarmGate, list]:
    counted = []
    gate = WarmGate(settings, runner=lambda: runner, count=lambda o, t, g: counted.append(o), secret=SECRET)
    return gate, counted


async def allowed():
    return True


async def denied():
    return False


@pytest.mark.parametrize(
    ("settings", "cand", "may_use", "expected"),
    [
        (Settings(warm_ahead=False), candidate(session()), allowed, WarmOutcome.SKIPPED_DISABLED),
        (Settings(), candidate(session(), tokens=2_000), allowed, WarmOutcome.SKIPPED_BELOW_THRESHOLD),
        (Settings(), candidate(session(), known=False), allowed, WarmOutcome.SKIPPED_UNKNOWN_MODEL),
        (Settings(), candidate(session(), target_window=None), allowed, WarmOutcome.SKIPPED_UNKNOWN_MODEL),
        (Settings(), candidate(session()), denied, WarmOutcome.SKIPPED_FORBIDDEN),
        (Settings(), candidate(None), allowed, WarmOutcome.SKIPPED_NO_SESSION),
        (Settings(), candidate(session()), allowed, WarmOutcome.QUEUED),
        (Settings(), candidate(session()), None, WarmOutcome.QUEUED),
    ],
    ids=["disabled", "below", "unknown", "no-window", "forbidden", "no-session", "queued", "checked-by-caller"],
)
async def test_guards_in_order(settings, cand, may_use, expected):
    runner = Captured()
    gate, counted = gate_with(settings, runner)
    assert await gate.consider(cand, chat_data(), may_use) is expected
    assert counted == [expected]
    assert len(runner.jobs) == (1 if expected is WarmOutcome.QUEUED else 0)


@pytest.mark.parametrize(("warm_limited", "expected"), [(False, WarmOutcome.SKIPPED_RATE_LIMITED), (True, WarmOutcome.QUEUED)])
async def test_a_group_litellm_limits_gets_no_warm_unless_allowed(warm_limited, expected):
    """Breaker round on b52a711: warms go through LiteLLM's router and counted against a 6-rpm slow deployment's minute, so
    another tenant's requests waited. A limited target gets none by default, after the unknown-model guard, before the
    key's access check (which it does not reach)."""
    runner, asked, checked = Captured(), [], []

    async def may_use():
        checked.append(True)
        return True

    gate = WarmGate(Settings(warm_limited=warm_limited), runner=lambda: runner, count=lambda o, t, g: None,
                    secret=SECRET, limited=lambda group: asked.append(group) or group == "slow")
    assert await gate.consider(candidate(session()), chat_data(), may_use) is expected
    assert len(runner.jobs) == (1 if expected is WarmOutcome.QUEUED else 0)
    assert asked == ([] if warm_limited else ["slow"]) and checked == ([True] if warm_limited else [])
    # below the threshold the group is never looked up (the request path of most requests pays nothing)
    asked.clear()
    assert await gate.consider(candidate(session("other"), tokens=2_000), chat_data("other")) is WarmOutcome.SKIPPED_BELOW_THRESHOLD
    assert asked == []


async def test_consider_does_no_store_io_on_the_request_path():
    """Item 4: the cooldown used to be taken in Redis on the request path, before the warm could run."""
    release = asyncio.Event()
    admitting = []

    class HangingStore(MemoryCooldownStore):
        async def admit(self, *args, **kwargs):
            admitting.append(args[0])
            await release.wait()
            return await super().admit(*args, **kwargs)

    sent = []

    async def send(kind, body):
        sent.append(body)

    runner = WarmRunner(send, cooldown=lambda: HangingStore())
    gate, _ = gate_with(Settings(), runner)
    # the store hangs until released: consider() returns anyway, it never waits on the store
    outcome = await asyncio.wait_for(gate.consider(candidate(session()), chat_data(), allowed), timeout=1)
    assert outcome is WarmOutcome.QUEUED and sent == []
    await asyncio.sleep(0.01)
    assert len(admitting) == 1 and sent == []  # the runner admits in the background, still hung
    release.set()
    await runner.drain()
    assert len(sent) == 1


async def test_job_keys_are_tenant_scoped_keyed_hashes_and_hold_no_raw_ids():
    runner = Captured()
    gate, _ = gate_with(Settings(warm_tenant_rate=60), runner)
    s = session("raw-session-1", "team:team-a")
    await gate.consider(candidate(s), chat_data("raw-session-1"), allowed)
    (job,) = runner.jobs
    assert job.key == admission_key(s, "slow", SECRET)
    assert job.cooldown_key == cooldown_key(s, "slow", NEAR, WINDOW, Settings().warm_rewarm_step, SECRET)
    assert job.rate_key == tenant_rate_key("team:team-a", SECRET)
    assert job.body["metadata"][SESSION_KEY] == identity.hashed_session(s, SECRET)
    assert job.body["metadata"]["user_api_key_team_id"] == "team-a"  # spend is the caller's
    dump = json.dumps([job.key, job.cooldown_key, job.rate_key, job.body])
    assert "raw-session-1" not in dump
    assert "team:team-a" not in dump and "session_id" not in dump


async def test_rate_key_is_one_per_tenant_and_absent_without_a_rate():
    runner = Captured()
    gate, _ = gate_with(Settings(warm_tenant_rate=60), runner)
    for sid, tenant in (("s1", "team:a"), ("s2", "team:a"), ("s3", "team:b")):
        await gate.consider(candidate(session(sid, tenant)), chat_data(sid), allowed)
    a1, a2, b = (j.rate_key for j in runner.jobs)
    assert a1 == a2 and a1 != b
    assert len({j.key for j in runner.jobs}) == 3
    runner = Captured()
    gate, _ = gate_with(Settings(warm_tenant_rate=0), runner)
    await gate.consider(candidate(session()), chat_data(), allowed)
    assert runner.jobs[0].rate_key is None


async def test_growth_step_changes_the_cooldown_key_not_the_admission_key():
    runner = Captured()
    gate, _ = gate_with(Settings(warm_rewarm_step=0.05, warm_lead_steps=0), runner)  # lead rule off: steps of 205
    s = session()
    await gate.consider(candidate(s, growth=3_000), chat_data(), allowed)
    await gate.consider(candidate(s, growth=3_000 + 205), chat_data(), allowed)  # 5% of 4,096 ≈ 205 tokens more
    first, second = runner.jobs
    assert first.key == second.key and first.cooldown_key != second.cooldown_key


async def test_text_completion_candidate_queues_a_warm_with_its_prompt():
    runner = Captured()
    gate, _ = gate_with(Settings(), runner)
    data = {"model": "fast", "prompt": "Once upon a time", "max_tokens": 50, "metadata": {}}
    await gate.consider(candidate(session()), data, allowed, kind="completion")
    (job,) = runner.jobs
    assert job.kind == "completion" and job.body["prompt"] == "Once upon a time" and job.body["max_tokens"] == 1


async def test_burst_through_the_gate_warms_every_session_once_then_the_memo_holds():
    """100 sessions cross the threshold at once (item 4): every one is warmed exactly once, four
    at a time; their next turns are skipped by the memo without asking the store."""
    admits = Counter()

    class Store(MemoryCooldownStore):
        async def admit(self, *args, **kwargs):
            admits["n"] += 1
            return await super().admit(*args, **kwargs)

    store = Store(capacity=1_000)
    sent, in_flight, peak = [], [0], [0]

    async def send(kind, body):
        in_flight[0] += 1
        peak[0] = max(peak[0], in_flight[0])
        await asyncio.sleep(0.001)
        in_flight[0] -= 1
        sent.append(body["messages"][0]["content"])

    settings = Settings(warm_max_concurrency=4)
    runner = WarmRunner(send, cooldown=lambda: store, cooldown_s=settings.warm_cooldown_s,
                        tenant_rate=settings.warm_tenant_rate, max_concurrency=settings.warm_max_concurrency,
                        queue_size=settings.warm_queue_size)
    gate, counted = gate_with(settings, runner)
    sids = [f"s{i:03d}" for i in range(100)]
    outcomes = await asyncio.gather(*(gate.consider(candidate(session(sid)), chat_data(sid, sid), allowed) for sid in sids))
    assert outcomes == [WarmOutcome.QUEUED] * 100
    await runner.drain()
    assert sorted(sent) == sids and peak[0] == 4 and admits["n"] == 100
    again = await asyncio.gather(*(gate.consider(candidate(session(sid)), chat_data(sid, sid), allowed) for sid in sids))
    assert again == [WarmOutcome.SKIPPED_COOLDOWN] * 100 and admits["n"] == 100
    assert Counter(counted) == {WarmOutcome.QUEUED: 100, WarmOutcome.SKIPPED_COOLDOWN: 100}


async def test_a_session_that_jumps_warms_below_the_threshold():
    """An 8B at 16,384 (threshold 60% = 9,830 tokens, output floor 256): a session that grew 2,000 → 9,500
    in one step (a tool result) would overflow with another such step (9,500 + 7,500 + 256 > 16,384)."""
    from dataclasses import replace

    s, data = session("jumper"), chat_data("jumper")
    base = WarmCandidate("slow", True, 131_072, 0, 16_384, s, None)
    gate, counted = gate_with(Settings(output_floor_tokens=256), runner := Captured())
    for tokens in (2_000, 2_400):  # small steps
        assert await gate.consider(replace(base, tokens=tokens), data) is WarmOutcome.SKIPPED_BELOW_THRESHOLD
    assert await gate.consider(replace(base, tokens=9_500), data) is WarmOutcome.QUEUED  # step 7,100
    assert runner.jobs[-1].trigger == "jump"
    # steady growth of the same size never triggers it: 2,000 → 4,000 → 6,000 → 8,000 (8,000 + 2,000 + 256 fits)
    gate, _ = gate_with(Settings(output_floor_tokens=256), runner := Captured())
    steady = replace(base, session=session("steady"))
    for tokens in (2_000, 4_000, 6_000, 8_000):
        assert await gate.consider(replace(steady, tokens=tokens), data) is WarmOutcome.SKIPPED_BELOW_THRESHOLD
    # switched off: below the threshold stays below
    gate, _ = gate_with(Settings(output_floor_tokens=256, warm_jump=False), Captured())
    for tokens in (2_000, 9_500):
        assert await gate.consider(replace(base, tokens=tokens), data) is WarmOutcome.SKIPPED_BELOW_THRESHOLD


async def test_reply_warm_uses_its_own_body_trigger_and_cooldown_per_state(caplog):
    gate, counted = gate_with(Settings(), runner := Captured())
    s = session("replier")
    body = {"model": "slow", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}], "metadata": {}}
    from litellm_kvwarm.warm_job import WarmTrigger
    with caplog.at_level(logging.INFO, logger="litellm_kvwarm"):
        assert await gate.consider(candidate(s, tokens=NEAR), {}, trigger=WarmTrigger.REPLY, body=body) is WarmOutcome.QUEUED
        job = runner.jobs[-1]
        await gate.consider(candidate(session("asker"), tokens=NEAR), chat_data("asker"))
    # a reply-warm's size is the server's prompt count plus the reply, not an estimate: the log says which
    assert [r.getMessage().split(":")[1].split("tok")[0] for r in caplog.records if "queued" in r.getMessage()] == \
        [f" prompt+reply≈{NEAR}", f" est≈{NEAR}"]
    assert job.trigger == "reply" and job.body["messages"] == body["messages"]
    assert job.body["extra_body"] == {"priority": 10}  # KVWARM_WARM_PRIORITY's default
    ahead = cooldown_key(s, "slow", NEAR, WINDOW, Settings().warm_rewarm_step, SECRET)
    assert job.cooldown_key != ahead  # a reply-warm never takes the warm-ahead's cooldown
    await gate.consider(candidate(s, tokens=NEAR + 1), {}, trigger=WarmTrigger.REPLY, body=body)
    assert runner.jobs[-1].cooldown_key != job.cooldown_key  # one per session state
    gate, _ = gate_with(Settings(reply_warm=False), Captured())
    assert await gate.consider(candidate(s), {}, trigger=WarmTrigger.REPLY, body=body) is WarmOutcome.SKIPPED_DISABLED
    gate, _ = gate_with(Settings(warm_priority=0), runner := Captured())
    await gate.consider(candidate(s), chat_data("replier"))
    assert "extra_body" not in runner.jobs[-1].body


async def test_decode_warms_have_their_own_cooldown_per_state_and_take_no_tenant_rate():
    """A decode warm (the reply so far, while it streams) is gated like a reply-warm but never counts toward the
    tenant's warm rate: a streamed reply is paid for, and each token of it is prefilled once by these warms."""
    from litellm_kvwarm.warm_job import WarmTrigger

    gate, counted = gate_with(Settings(warm_tenant_rate=60), runner := Captured())
    s = session("decoder")
    body = {"model": "slow", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}], "metadata": {}}
    assert await gate.consider(candidate(s, tokens=NEAR), {}, trigger=WarmTrigger.DECODE, body=body) is WarmOutcome.QUEUED
    decode = runner.jobs[-1]
    assert decode.trigger == "decode" and decode.rate_key is None and decode.tenant_key is not None
    await gate.consider(candidate(s, tokens=NEAR), {}, trigger=WarmTrigger.REPLY, body=body)
    reply = runner.jobs[-1]
    assert reply.rate_key is not None and reply.cooldown_key != decode.cooldown_key and reply.key == decode.key
    gate, _ = gate_with(Settings(reply_warm=False), Captured())
    assert await gate.consider(candidate(s), {}, trigger=WarmTrigger.DECODE, body=body) is WarmOutcome.SKIPPED_DISABLED


async def test_past_the_threshold_a_session_far_from_the_window_by_its_steps_waits_for_its_lead():
    """An 8B at 16,384 (threshold 9,830, output floor 256), a lead of 3 steps (off by default): a session
    growing ~500 tokens a turn is skipped as ``skipped_far`` past the threshold until size + 3 × its largest
    step + 256 overflows the window; then ahead and reply warms queue. One seen once, or with the lead off,
    warms at the threshold (nothing is held back on a guess)."""
    from dataclasses import replace
    from litellm_kvwarm.warm_job import WarmTrigger

    lead = Settings(output_floor_tokens=256, warm_lead_steps=3)
    base = WarmCandidate("slow", True, 131_072, 0, 16_384, session("steady"), None)
    gate, counted = gate_with(lead, runner := Captured())
    assert Settings().warm_lead_steps == 0
    got = [await gate.consider(replace(base, tokens=t), chat_data("steady"), allowed)
           for t in (9_000, 9_500, 10_000, 12_000, 14_000, 14_500)]
    # largest step 2,000 from 12,000 on: 12,000 + 6,000 + 256 > 16,384 → due; 10,000 + 3 × 500 + 256 is not
    assert got == [WarmOutcome.SKIPPED_BELOW_THRESHOLD, WarmOutcome.SKIPPED_BELOW_THRESHOLD, WarmOutcome.SKIPPED_FAR,
                   WarmOutcome.QUEUED, WarmOutcome.QUEUED, WarmOutcome.QUEUED]
    assert [j.trigger for j in runner.jobs] == ["ahead"] * 3
    # a reply-warm of the same far session is held back too, and queues once near
    far = replace(base, session=session("far-reply"))
    gate, _ = gate_with(lead, runner := Captured())
    for t in (9_000, 9_400):
        await gate.consider(replace(far, tokens=t), chat_data("far-reply"), allowed)
    body = {"model": "slow", "messages": [{"role": "user", "content": "q"}], "metadata": {}}
    assert await gate.consider(replace(far, tokens=10_000), {}, allowed, trigger=WarmTrigger.REPLY, body=body) \
        is WarmOutcome.SKIPPED_FAR
    assert await gate.consider(replace(far, tokens=15_000), {}, allowed, trigger=WarmTrigger.REPLY, body=body) \
        is WarmOutcome.QUEUED
    # seen once: warms at the threshold; the default (lead off): at the threshold whatever the steps
    gate, _ = gate_with(lead, Captured())
    assert await gate.consider(replace(base, session=session("once"), tokens=10_000), chat_data("once"), allowed) \
        is WarmOutcome.QUEUED
    gate, _ = gate_with(Settings(output_floor_tokens=256), Captured())
    for t, want in ((9_000, WarmOutcome.SKIPPED_BELOW_THRESHOLD), (9_500, WarmOutcome.SKIPPED_BELOW_THRESHOLD),
                    (10_000, WarmOutcome.QUEUED)):
        assert await gate.consider(replace(base, tokens=t), chat_data("steady"), allowed) is want


async def test_the_lead_is_judged_on_the_exact_count_with_the_step_scaled_to_it():
    """Steps are kept on the routing estimate's scale, which leans low; the window is in real tokens. A session at
    11,000 routing / 13,500 exact (×1.227) with routing steps of 1,000 is ~1,227 real tokens a step: 13,500 +
    3 × 1,227 + 256 > 16,384, so it warms (judged on routing alone, 11,000 + 3,000 + 256, it would wait and
    overflow cold two steps later). An exact count below the routing estimate keeps the step as measured."""
    from dataclasses import replace

    lead = Settings(output_floor_tokens=256, warm_lead_steps=3)
    near = WarmCandidate("slow", True, 131_072, 0, 16_384, session("exact"), None)
    gate, _ = gate_with(lead, Captured())
    for t in (9_000, 10_000):
        await gate.consider(replace(near, tokens=t, growth_tokens=t), chat_data("exact"), allowed)
    assert await gate.consider(replace(near, tokens=13_500, growth_tokens=11_000), chat_data("exact"), allowed) \
        is WarmOutcome.QUEUED
    low = replace(near, session=session("low"))
    gate, _ = gate_with(lead, Captured())
    for t in (9_000, 10_000):
        await gate.consider(replace(low, tokens=t, growth_tokens=t), chat_data("low"), allowed)
    assert await gate.consider(replace(low, tokens=10_200, growth_tokens=10_500), chat_data("low"), allowed) \
        is WarmOutcome.SKIPPED_FAR  # 10,200 + 3 × 1,000 + 256 fits: the count's own size, the step unscaled
