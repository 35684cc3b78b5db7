import pytest

from litellm_kvwarm.policy import RouteAction, clamp_output, decide_route


def route(est, window, target="slow", target_window=None, floor=256):
    return decide_route(
        source="fast", target=target, routing_estimate=est, output_floor_tokens=floor,
        source_window=window, target_window=target_window,
    )


@pytest.mark.parametrize(
    "est, window, target, target_window, action",
    [
        (1000, 16384, "slow", None, RouteAction.STAY),
        (16128, 16384, "slow", None, RouteAction.STAY),  # est + floor == window still fits
        (16129, 16384, "slow", None, RouteAction.PROACTIVE),
        (59863, 16384, "slow", 131072, RouteAction.PROACTIVE),
        (59863, 16384, None, None, RouteAction.NO_TARGET),
        (200000, 16384, "slow", 131072, RouteAction.TARGET_TOO_SMALL),
        (59863, None, "slow", 131072, RouteAction.UNKNOWN_WINDOW),
    ],
    ids=["short-stays", "exactly-fits", "one-over-escalates", "long-escalates", "no-target", "target-too-small", "unknown-window"],
)
def test_route_table(est, window, target, target_window, action):
    decision = route(est, window, target, target_window)
    assert decision.action is action
    assert decision.escalate is (action is RouteAction.PROACTIVE)


def test_proactive_log_line_has_numbers_and_groups():
    line = route(59863, 16384, target_window=131072).describe()
    assert line == "proactive: est≈59863tok + 256 output floor exceeds window 16384 of 'fast' → routing to 'slow'"


def test_a_client_budget_under_the_floor_is_named_as_such():
    """A client that asked for 16 output tokens is routed on 16, not the 256 floor: the log says whose number it is
    (a fresh user read "+ 16 output floor" against a documented floor of 256)."""
    line = decide_route(source="fast", target="slow", routing_estimate=30050, output_floor_tokens=16, source_window=16384,
                        target_window=131072, exact=True, output_is_client_budget=True).describe()
    assert line == ("proactive: exact 30050tok + 16 output (the client's max_tokens) exceeds window 16384 of 'fast' "
                    "→ routing to 'slow'")


@pytest.mark.parametrize(
    "requested, prompt, window, exact, expected, changed, needs_exact",
    [
        (4096, 12289, 16384, True, 4095, True, False),  # the overflow, counted exactly
        (4096, 16400, 16384, False, 256, True, True),  # the safe estimate alone would truncate: ask for exact
        (100, 1000, 16384, False, 100, False, False),  # fits: untouched
        (4096, 16300, 16384, True, 256, True, False),  # never below the floor
        (200, 16300, 16384, True, 200, False, False),  # floor above the request: never raised
        (None, 99999, 16384, True, None, False, False),  # no max_tokens: nothing to clamp
        (4096, 12289, None, True, 4096, False, False),  # unknown window
    ],
    ids=["exact-clamp", "safe-needs-exact", "fits", "floor", "never-raise", "absent", "unknown-window"],
)
def test_clamp_table(requested, prompt, window, exact, expected, changed, needs_exact):
    d = clamp_output(requested=requested, prompt_tokens=prompt, window=window, output_floor_tokens=256, exact=exact)
    assert (d.max_tokens, d.changed, d.needs_exact) == (expected, changed, needs_exact)
    if changed and d.max_tokens > 256:
        assert prompt + d.max_tokens <= window


def test_clamp_margin_applies_to_exact_counts():
    d = clamp_output(requested=4096, prompt_tokens=12289, window=16384, output_floor_tokens=256, exact=True, margin_tokens=16)
    assert d.max_tokens == 4079


from litellm_kvwarm.policy import needs_exact_count
from litellm_kvwarm.tokens import RequestCounts, TokenEstimate


@pytest.mark.parametrize(
    "routing, safe, target, expected",
    [
        (1_000, 1_400, "slow", False),  # both fit
        (15_000, 20_000, "slow", True),  # estimates disagree
        (17_000, 23_000, "slow", True),  # would escalate on an estimate within 2x the window
        (17_000, 23_000, None, False),  # nowhere to escalate: nothing to settle
        (40_000, 53_000, "slow", False),  # far beyond: no count needed
    ],
    ids=["fits", "disagree", "near-escalation", "no-target", "far"],
)
def test_needs_exact_count(routing, safe, target, expected):
    est = TokenEstimate(safe=safe, routing=routing, counts=RequestCounts(chars=0, messages=0))
    assert needs_exact_count(est, 256, 16_384, target) is expected
