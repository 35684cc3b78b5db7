"""The pure planner as a table of cases: a view and its facts in, a named plan out (no I/O)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from litellm_kvwarm import planner
from litellm_kvwarm.config import Settings
from litellm_kvwarm.facts import RouteFacts
from litellm_kvwarm.planner import Route, plan_clamp, plan_route
from litellm_kvwarm.tokens import RequestCounts, TokenEstimate
from litellm_kvwarm.view import pre_call_view


class Key:
    team_id, user_id, token = "team-a", None, "hashed"


def est(routing: int, safe: int | None = None) -> TokenEstimate:
    return TokenEstimate(safe if safe is not None else routing + routing // 3, routing, RequestCounts(chars=0, messages=1))


def facts(window: int | None = 4096, *, routing: int = 1000, safe: int | None = None, chain=("slow",), usable=None,
          windows=(("slow", 32768),), **extra) -> RouteFacts:
    estimate = est(routing, safe) if window is not None else None
    options = dict(listed=True, chain=tuple(chain), usable=tuple(chain if usable is None else usable), source_window=window,
                   estimate=estimate, raw_estimate=estimate, tenant_hash="t-hash" if window else None, windows=tuple(windows))
    return RouteFacts(**{**options, **extra})


# id, body extras, facts, settings, expected plan attributes
# (target: escalation target; backstop: (group, entries, generic); warm: (target, target_window); record: ESTIMATE written)
CASES = [
    ("not listed", {}, RouteFacts(listed=False), {}, dict(route=Route.UNTOUCHED, label=None, backstop=None, pin=False)),
    ("invalid client budget", {"max_tokens": 0}, facts(), {},
     dict(route=Route.UNTOUCHED, label="client_output_error", counted=None, backstop=None, pin=False, level="debug")),
    ("unknown window", {}, facts(None), {},
     dict(route=Route.UNTOUCHED, label="unknown_window", counted="slow", backstop=("fast", ("slow",), False), record=False, pin=True)),
    ("stay, fits", {}, facts(routing=1000), {},
     dict(route=Route.STAY, label="stay", counted="slow", backstop=("fast", ("slow",), False), warm=("slow", 32768), record=True,
          level="debug", reason="[CONTEXT-ROUTE] stay: 1000tok + 256 fits window 4096 of 'fast'")),
    ("stay, retry slot for a client budget", {"max_tokens": 300}, facts(routing=1000), {},
     dict(route=Route.STAY, backstop=("fast", ({"model": "fast", "max_tokens": 300}, "slow"), False))),
    ("stay, overflow possible by the safe estimate: generic armed", {}, facts(routing=3700, safe=4000), {},
     dict(route=Route.STAY, backstop=("fast", ("slow",), True))),
    ("client sent its own fallbacks: generic untouched", {"fallbacks": ["x"]}, facts(routing=3700, safe=4000), {},
     dict(route=Route.STAY, backstop=("fast", ("slow",), False))),
    ("operator set generic fallbacks: untouched", {}, facts(routing=3700, safe=4000, operator_fallbacks=[{"fast": ["other"]}]), {},
     dict(route=Route.STAY, backstop=("fast", ("slow",), False))),
    ("no exact count could settle it: stay", {}, facts(routing=4000, exact_asked=True), {},
     dict(route=Route.STAY, label="stay", level="info", target=None)),
    ("exact count says it fits", {}, facts(routing=4000, exact_asked=True, exact=3000), {},
     dict(route=Route.STAY, reason="[CONTEXT-ROUTE] stay: 3000tok + 256 fits window 4096 of 'fast'")),
    # the floor never asks for more room than the client itself asked for: 3,950 + 100 fits 4,096
    ("a client budget under the floor that fits stays", {"max_tokens": 100}, facts(routing=4000, exact_asked=True, exact=3950), {},
     dict(route=Route.STAY, reason="[CONTEXT-ROUTE] stay: 3950tok + 100 fits window 4096 of 'fast'")),
    ("a client budget under the floor that does not fit escalates", {"max_tokens": 200},
     facts(routing=4000, exact_asked=True, exact=3950), {}, dict(route=Route.ESCALATE, target="slow", origin_tokens=3950,
     reason_starts="[CONTEXT-ROUTE] proactive: exact 3950tok + 200 output (the client's max_tokens) exceeds window 4096")),
    ("no client budget: the floor decides", {}, facts(routing=4000, exact_asked=True, exact=3950), {},
     dict(route=Route.ESCALATE, target="slow", origin_tokens=3950)),
    ("exact count escalates", {}, facts(routing=3900, exact_asked=True, exact=5000), {},
     dict(route=Route.ESCALATE, label="proactive", counted="slow", target="slow", origin_tokens=5000, backstop=None, warm=None)),
    ("escalate", {}, facts(routing=6000), {},
     dict(route=Route.ESCALATE, label="proactive", counted="slow", target="slow", origin_tokens=6000, backstop=None, warm=None,
          level="info", record=True)),
    ("escalate to the first fitting step; the rest stays armed and warm", {},
     facts(routing=6000, chain=("mid", "large"), windows=(("mid", 8192), ("large", 65536))), {},
     dict(route=Route.ESCALATE, target="mid", backstop=("mid", ("large",), True), warm=("large", 65536))),  # safe 8000 + 256 > 8192
    ("a step too small is passed over", {},
     facts(routing=10000, chain=("mid", "large"), windows=(("mid", 8192), ("large", 65536))), {},
     dict(route=Route.ESCALATE, target="large", backstop=None, warm=None)),
    ("the step's own output override applies", {"max_tokens": 2000},
     facts(routing=6000, chain=("mid", "large"), windows=(("mid", 8192), ("large", 65536)), step_params={"mid": {"max_tokens": 512}}), {},
     dict(route=Route.ESCALATE, target="mid", overrides={"max_tokens": 512},
          backstop=("mid", ({"model": "mid", "max_tokens": 512}, "large"), True), requested=512)),
    ("target window unknown: escalate, no warm", {}, facts(routing=6000, windows=(("slow", None),)), {},
     dict(route=Route.ESCALATE, target="slow", warm=None)),
    ("stay with the next step's window unknown: the gate decides", {}, facts(routing=1000, windows=(("slow", None),)), {},
     dict(route=Route.STAY, warm=("slow", None))),
    ("proactive routing off", {}, facts(routing=6000), {"proactive_routing": False},
     dict(route=Route.KEEP_LOCAL, label="stay", counted="slow", target=None, backstop=("fast", ("slow",), True),
          reason_starts="[CONTEXT-ROUTE] not routed (KVWARM_PROACTIVE_ROUTING=0): proactive:")),
    ("no target", {}, facts(routing=6000, chain=(), windows=()), {},
     dict(route=Route.KEEP_LOCAL, label="no_target", counted=None, backstop=None)),
    ("target too small", {}, facts(routing=10000, windows=(("slow", 8192),)), {},
     dict(route=Route.KEEP_LOCAL, label="target_too_small", counted="slow", backstop=("fast", ("slow",), True))),
    ("forbidden", {}, facts(routing=6000, usable=(), windows=()), {},
     dict(route=Route.KEEP_LOCAL, label="kept_local_forbidden", counted="slow", backstop=None,
          reason="[CONTEXT-ROUTE] kept local: no step of 'fast''s chain ['slow'] is in the model list and allowed for this key")),
    ("missing", {}, facts(routing=6000, usable=(), windows=(), chain_missing=True), {},
     dict(route=Route.KEEP_LOCAL, label="kept_local_missing", counted="slow")),
    ("session pinning off", {}, facts(), {"session_pinning": False}, dict(route=Route.STAY, pin=False)),
]


@pytest.mark.parametrize("name, extra, route_facts, settings, expected", CASES, ids=[c[0] for c in CASES])
def test_plan_route(name, extra, route_facts, settings, expected):
    body = {"model": "fast", "messages": [{"role": "user", "content": "hello"}], **extra}
    plan = plan_route(pre_call_view(body, "acompletion", Key()), route_facts, Settings(**settings))
    got = {
        "route": plan.route, "label": plan.label, "counted": plan.counted_target, "level": plan.log_level, "reason": plan.reason,
        "pin": plan.pin_session, "record": plan.estimate_record is not None,
        "target": plan.escalation.target if plan.escalation else None,
        "overrides": dict(plan.escalation.overrides) if plan.escalation else None,
        "origin_tokens": plan.escalation.origin["tokens"] if plan.escalation else None,
        "backstop": (plan.backstop.group, plan.backstop.entries, plan.backstop.generic) if plan.backstop else None,
        "requested": plan.backstop.plan.requested if plan.backstop else None,
        "warm": (plan.warm.target, plan.warm.target_window) if plan.warm else None,
    }
    starts = expected.pop("reason_starts", None)
    assert {k: got[k] for k in expected} == expected
    if starts:
        assert plan.reason.startswith(starts), plan.reason


def test_estimate_record_and_warm_numbers():
    body = {"model": "fast", "messages": [{"role": "user", "content": "hello"}]}
    f = facts(routing=3000, safe=3600, raw_estimate=est(2500, 3000))
    plan = plan_route(pre_call_view(body, "acompletion", Key()), f, Settings())
    assert plan.estimate_record == {"safe": 3600, "routing": 3000, "group": "fast", "raw_safe": 3000, "raw_routing": 2500, "tenant": "t-hash",
                                   "window": 4096}
    assert (plan.warm.tokens, plan.warm.source_window, plan.warm.growth_tokens) == (3000, 4096, 3000)
    # safe 3,600 + floor over half the window: a server may hold less than it advertises, so the
    # generic fallbacks are armed (for wordings LiteLLM does not classify)
    assert plan.backstop.plan.to_dict() == {"source": "fast", "chain": ["slow"], "requested": None,
                                            "own_generic_fallbacks": True, "step_output": {},
                                            "step_windows": {}, "walks_chain": False, "generic_retry": False}
    small = plan_route(pre_call_view(body, "acompletion", Key()), facts(routing=1000, safe=1200, raw_estimate=est(1000, 1200)), Settings())
    assert small.backstop.plan.own_generic_fallbacks is False  # 1,200 + 256 under half of 4,096
    # between half the window and the window the generic fallbacks skip the retry slot on the same
    # group (a 401/404 cools its deployment down: the retry slot would answer the Router's own 429)
    assert plan.backstop.generic_retry is False
    over = plan_route(pre_call_view({**body, "max_tokens": 5000}, "acompletion", Key()), f, Settings())
    assert over.backstop.generic and over.backstop.generic_retry  # max_tokens over the window: a clamped retry can help


@pytest.mark.parametrize("state", [{"previous_response_id": "resp_abc"}, {"conversation": "conv_1"}])
def test_responses_state_on_the_server_is_never_moved(state):
    """A Responses body that continues server-stored state (its history lives only on the server
    that answered it): untouched, however large it looks; without that state it is routed."""
    body = {"model": "fast", "input": "next step", "max_output_tokens": 256}
    big = facts(routing=30_000)
    plan = plan_route(pre_call_view({**body, **state}, "aresponses", Key()), big, Settings())
    assert (plan.route, plan.label, plan.escalation, plan.warm, plan.backstop) == (Route.UNTOUCHED, "server_state", None, None, None)
    assert plan_route(pre_call_view(body, "aresponses", Key()), big, Settings()).route is Route.ESCALATE


def test_template_dependent_request_moves_only_on_an_exact_count():
    """Differential suite, 7:279: 50k tokens of text in a legacy ``function`` message, which
    Qwen2.5's template drops (the real prompt: 75 tokens). Without an exact count the request
    stays, however large its estimate; with one, the server's count decides."""
    body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}, {"role": "function", "name": "f", "content": "x"}]}
    view = pre_call_view(body, "acompletion", Key())
    odd = TokenEstimate(60_000, 50_000, RequestCounts(chars=0, messages=2, template_dependent=True))
    no_count = facts(routing=50_000, estimate=odd, raw_estimate=odd, exact_asked=True, exact=None)
    assert plan_route(view, no_count, Settings()).route is Route.STAY
    counted = facts(routing=50_000, estimate=odd, raw_estimate=odd, exact_asked=True, exact=75)
    assert plan_route(view, counted, Settings()).route is Route.STAY
    big = facts(routing=50_000, estimate=odd, raw_estimate=odd, exact_asked=True, exact=20_000)
    assert plan_route(view, big, Settings()).route is Route.ESCALATE


def test_messages_escalate_by_skipping_the_source():
    """An Anthropic Messages request keeps its group; LiteLLM's context_window_fallbacks carry it to
    the target after the source's first attempt is skipped (so a failing target leaves the
    source's context error as the request's error, as with LiteLLM alone)."""
    body = {"model": "fast", "max_tokens": 512, "messages": [{"role": "user", "content": "hello"}]}
    plan = plan_route(pre_call_view(body, "anthropic_messages", Key()), facts(routing=30_000, chain=("slow", "huge"),
                      windows=(("slow", 32768), ("huge", 131072))), Settings())
    assert plan.route is Route.ESCALATE and plan.escalation.target == "slow"
    assert plan.escalation.via_fallback == ("slow", "huge") and plan.backstop is None
    chat = plan_route(pre_call_view({**body, "messages": body["messages"]}, "acompletion", Key()), facts(routing=30_000), Settings())
    assert chat.escalation.via_fallback is None


def test_no_session_no_pin():
    body = {"model": "fast", "messages": [{"role": "user", "content": "hello"}]}

    class NoTenant:
        team_id = user_id = token = None

    assert plan_route(pre_call_view(body, "acompletion", NoTenant()), facts(), Settings()).pin_session is False


@pytest.mark.parametrize(
    "requested, window, safe, exact, margin, expected",
    [
        (2000, 4096, 1000, None, 0, (None, False)),  # fits by the safe estimate
        (2000, 4096, 3000, None, 0, (None, True)),  # would cut: only an exact count may
        (2000, 4096, 3000, 3500, 0, (596, False)),
        (2000, 4096, 3000, 3500, 100, (496, False)),
        (2000, 4096, 3000, 3950, 0, (256, False)),  # never below the floor
        (2000, 4096, 3000, 1000, 0, (None, False)),  # the exact count says it fits
        (200, 4096, 3000, 3950, 0, (None, False)),  # below the floor already: untouched
    ],
)
def test_plan_clamp(requested, window, safe, exact, margin, expected):
    plan = plan_clamp(requested, window, safe, exact, Settings(clamp_margin_tokens=margin))
    assert (plan.max_tokens, plan.needs_exact) == expected


def test_wants_exact_count():
    assert planner.wants_exact_count(est(3800, 4500), 256, 4096, ()) is True  # the estimates disagree
    assert planner.wants_exact_count(est(6000), 256, 4096, ("slow",)) is True  # would escalate within 2x
    assert planner.wants_exact_count(est(6000), 256, 4096, ()) is False  # nowhere to go
    assert planner.wants_exact_count(est(9000), 256, 4096, ("slow",)) is False  # far past 2x


IO_MODULES = {"httpx", "redis", "litellm", "asyncio", "fastapi", "aiohttp", "socket"}


def test_the_planner_imports_no_io():
    tree = ast.parse(Path(planner.__file__).read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and n.level == 0}
    assert not imported & IO_MODULES
    code = ("import sys; import litellm_kvwarm.planner; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'httpx', 'redis', 'litellm', 'fastapi', 'aiohttp'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_keep_output_budget_carries_the_steps_windows_so_nothing_cuts_a_budget_a_step_holds():
    """KVWARM_KEEP_OUTPUT_BUDGET=1 (a breaker: on vLLM 0.18-0.31 LiteLLM alone serves max_tokens 2,048 whole from slow
    after fast refuses; the clamp cut it to 558): the backstop plan knows slow's window; off, it knows none."""
    view = pre_call_view({"model": "fast", "messages": [{"role": "user", "content": "x"}], "max_tokens": 2048}, "acompletion", Key())
    kept = plan_route(view, facts(window=16_384, routing=14_000, windows=(("slow", 131_072),)), Settings(keep_output_budget=True))
    assert kept.route is Route.STAY and kept.backstop.plan.step_windows == {"slow": 131_072}
    assert kept.backstop.plan.step_holding(15_600) == "slow"
    plain = plan_route(view, facts(window=16_384, routing=14_000, windows=(("slow", 131_072),)), Settings())
    assert plain.backstop.plan.step_windows == {} and plain.backstop.plan.step_holding(15_600) is None


def test_an_escalation_falls_back_to_its_source_after_the_operators_steps():
    """A target that fails leaves the request to the group LiteLLM alone would have served it from (found by a
    breaker: a prompt that fits fast but not with the output floor was answered 400 with slow down)."""
    view = pre_call_view({"model": "fast", "messages": [{"role": "user", "content": "x"}]}, "acompletion", Key())
    plan = plan_route(view, facts(routing=6000), Settings())
    assert plan.escalation.source_fallback == ("fast",)
    plan = plan_route(view, facts(routing=6000, operator_fallbacks=[{"slow": ["slow-backup"]}]), Settings())
    assert plan.escalation.source_fallback == ("slow-backup", "fast")
    sent = pre_call_view({"model": "fast", "messages": [{"role": "user", "content": "x"}], "fallbacks": ["other"]}, "acompletion", Key())
    assert plan_route(sent, facts(routing=6000), Settings()).escalation.source_fallback == ()  # the client's own stand


def test_plan_clamp_never_cuts_below_the_request_s_min_tokens():
    """Found by the breaker: a cut below vLLM's ``min_tokens`` is refused ("min_tokens must be less than or equal
    to max_tokens"), not a context error, so nothing escalated it; LiteLLM alone sends it as it came."""
    s = Settings()
    assert plan_clamp(4000, 16384, 14000, 13865, s, min_output=3000).max_tokens is None  # room 2519 < 3000: as sent
    assert plan_clamp(4000, 16384, 14000, 13865, s, min_output=2000).max_tokens == 2519  # room holds it: cut
    assert plan_clamp(4000, 16384, 13000, 12584, s, min_output=3600).max_tokens == 3800  # room 3800 holds it: cut
    assert plan_clamp(4000, 16384, 13865, None, s, min_output=3000).needs_exact  # the count still decides
    assert plan_clamp(4000, 16384, 14000, 13865, s).max_tokens == 2519  # without min_tokens: as before


@pytest.mark.parametrize(("kind", "call_type", "items"), [
    ("chat", "acompletion", [{"role": "user", "content": 123}, {"role": "user", "content": "x"}]),
    ("chat", "acompletion", [{"role": "user", "content": ["a bare string part"]}]),
    ("chat", "acompletion", ["not an object", {"role": "user", "content": "x"}]),
    ("chat", "acompletion", "a string, not a list"),
    ("messages", "anthropic_messages", [{"role": "user", "content": [{"type": "text", "text": "x"}, 7]}]),
    ("responses", "aresponses", [{"role": "user", "content": "x"}, "loose string item"]),
])
def test_a_malformed_conversation_is_the_client_s_error_and_never_moved(kind, call_type, items):
    """Fault (breaker, 2026-12): a malformed message in a conversation over the window was escalated, so LiteLLM ran
    its whole retry sequence on slow and again on fast: the same 500 as LiteLLM alone in twice the time, naming
    'slow'. Untouched now, however large it looks; the same body well formed is routed."""
    field = "input" if kind == "responses" else "messages"
    body = {"model": "fast", field: items, "max_tokens": 256}
    big = facts(routing=30_000)
    plan = plan_route(pre_call_view(body, call_type, Key()), big, Settings())
    assert (plan.route, plan.label, plan.escalation, plan.warm, plan.backstop) == (Route.UNTOUCHED, "client_malformed", None, None, None)
    sound = {**body, field: [{"role": "user", "content": "x"}, {"role": "custom-role", "content": [{"type": "text", "text": "y"}]}]}
    assert plan_route(pre_call_view(sound, call_type, Key()), big, Settings()).route is Route.ESCALATE


def test_an_escalation_to_a_middle_step_falls_back_along_the_rest_of_the_chain_first():
    """Found by a breaker: fast → [mid, slow], the request escalated ahead of time to mid, mid down (500 or 429):
    LiteLLM alone, walking fast's context-window fallbacks, goes on to slow and answers 200; the plugin's fallbacks
    for mid went straight back to fast (a 500). Now slow comes before the source, and the escalated request's
    backstop plan walks the chain on any error."""
    view = pre_call_view({"model": "fast", "messages": [{"role": "user", "content": "x"}], "max_tokens": 1000}, "acompletion", Key())
    three = facts(window=16_384, routing=25_000, chain=("mid", "slow"), windows=(("mid", 32_768), ("slow", 131_072)))
    plan = plan_route(view, three, Settings())
    assert plan.route is Route.ESCALATE and plan.escalation.target == "mid"
    assert plan.escalation.source_fallback == ("slow", "fast")
    assert plan.backstop.plan.source == "mid" and plan.backstop.plan.chain == ("slow",) and plan.backstop.plan.walks_chain
    with_ops = plan_route(view, facts(window=16_384, routing=25_000, chain=("mid", "slow"), windows=(("mid", 32_768), ("slow", 131_072)),
                                      operator_fallbacks=[{"mid": ["mid-backup", "slow"]}]), Settings())
    assert with_ops.escalation.source_fallback == ("mid-backup", "slow", "fast")  # the operator's first, slow once
    stay = plan_route(view, facts(window=16_384, routing=1_000, chain=("mid", "slow")), Settings())
    assert stay.route is Route.STAY and not stay.backstop.plan.walks_chain  # a request on its own group: as before


def test_a_streamed_messages_request_gets_no_generic_fallbacks_of_the_plugins():
    """A streamed Messages request near the window: LiteLLM's Messages stream reads ahead for an error once any
    generic fallbacks are set, so the plugin sets none there (the context-window ones stay); a non-streamed one,
    and a streamed chat one, keep them."""
    near = facts(window=16_384, routing=12_000, safe=15_000, windows=(("slow", 131_072),))
    body = {"model": "fast", "messages": [{"role": "user", "content": "x"}], "max_tokens": 2000}
    streamed = plan_route(pre_call_view({**body, "stream": True}, "anthropic_messages", Key()), near, Settings())
    plain = plan_route(pre_call_view(body, "anthropic_messages", Key()), near, Settings())
    chat = plan_route(pre_call_view({**body, "stream": True}, "acompletion", Key()), near, Settings())
    assert streamed.route is Route.STAY and streamed.backstop is not None and streamed.backstop.entries
    assert streamed.backstop.generic is False and not streamed.backstop.plan.own_generic_fallbacks
    assert plain.backstop.generic is True and chat.backstop.generic is True
