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
