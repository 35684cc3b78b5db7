from litellm_kvwarm.chain import escalation_chain, escalation_targets, first_fitting, next_step, rest_after, step_params

CWF = [{"fast": ["mid", {"model": "large"}, "fast", "mid"]}, {"mid": ["large"]}]


def test_chain_in_operator_order_without_self_or_repeats():
    assert escalation_chain("fast", overrides={}, context_window_fallbacks=CWF) == ("mid", "large")
    assert escalation_chain("mid", overrides={}, context_window_fallbacks=CWF) == ("large",)
    assert escalation_chain("large", overrides={}, context_window_fallbacks=CWF) == ()
    assert escalation_chain("fast", overrides={"fast": "cloud"}, context_window_fallbacks=CWF) == ("cloud",)
    assert escalation_chain("fast", overrides={}, context_window_fallbacks=[{"fast": "slow"}]) == ()  # LiteLLM iterates its characters
    assert escalation_chain("fast", overrides={}, context_window_fallbacks=None) == ()
    assert escalation_chain("fast", overrides={}, context_window_fallbacks=["junk", {"fast": 3}]) == ()


def test_first_fitting_picks_the_first_step_that_holds_the_request():
    windows = [("mid", 8_192), ("large", 131_072)]
    assert first_fitting(windows, 10_000 + 256) == ("large", 131_072)
    assert first_fitting(windows, 6_000 + 256) == ("mid", 8_192)
    assert first_fitting(windows, 200_000) == (None, 131_072)
    assert first_fitting([("mid", None), ("large", 131_072)], 10_256) == ("mid", None)  # unknown: the backstop covers it
    assert first_fitting([], 10) == (None, None)


def test_next_step_is_the_group_the_next_escalation_reaches():
    windows = [("mid", 8_192), ("large", 131_072)]
    assert next_step(windows, 4_096, 256) == ("mid", 8_192)
    assert next_step([("large", 131_072)], 8_192, 256) == ("large", 131_072)
    assert next_step([("tiny", 4_000), ("large", 131_072)], 4_096, 256) == ("large", 131_072)
    assert next_step([("mid", None)], 4_096, 256) == ("mid", None)
    assert next_step([], 4_096, 256) == (None, None)


def test_rest_after():
    assert rest_after(("mid", "large"), "mid") == ("large",)
    assert rest_after(("mid", "large"), "large") == ()
    assert rest_after(("mid", "large"), "other") == ("mid", "large")


def test_step_params_keep_what_a_dict_entry_overrides():
    cwf = [{"fast": [{"model": "slow", "max_tokens": 512, "temperature": 0}, "large", {"model": "bare"}]}]
    assert step_params("fast", cwf) == {"slow": {"max_tokens": 512, "temperature": 0}}
    assert step_params("other", cwf) == {}
    assert step_params("fast", "junk") == {} and step_params("fast", None) == {}
    assert step_params("fast", [{"fast": "slow"}]) == {}


def test_fallbacks_with_source_keeps_what_was_armed_and_ends_with_the_source():
    from litellm_kvwarm.chain import fallbacks_with_source

    assert fallbacks_with_source(None, "slow", ("fast",)) == [{"slow": ["fast"]}]
    assert fallbacks_with_source(None, "mid", ("backup", "fast")) == [{"mid": ["backup", "fast"]}]
    assert fallbacks_with_source([{"mid": ["large"]}], "mid", ("fast",)) == [{"mid": ["large", "fast"]}]


def test_escalation_targets_is_the_union_of_every_groups_chain():
    """One pass over the fallbacks gives what a chain per group gives (the first entry naming a group
    wins; overrides replace it; groups outside the model list are ignored), on random configs."""
    import random

    rng = random.Random(5)
    for _ in range(400):
        names = {f"g{i}" for i in range(rng.randrange(1, 8))}
        pool = sorted(names | {"x", "y"})

        def steps():
            return rng.choice([rng.choice(pool), [rng.choice(pool) for _ in range(rng.randrange(0, 3))],
                               [{"model": rng.choice(pool), "max_tokens": 9}], None, 7])

        cwf = [rng.choice([{rng.choice(pool): steps() for _ in range(rng.randrange(0, 3))}, "junk", None])
               for _ in range(rng.randrange(0, 6))]
        overrides = {rng.choice(pool): rng.choice(pool + [""]) for _ in range(rng.randrange(0, 2))}
        expected = set()
        for name in names:
            expected.update(escalation_chain(name, overrides=overrides, context_window_fallbacks=cwf))
        assert escalation_targets(names, overrides=overrides, context_window_fallbacks=cwf) == expected, (names, cwf, overrides)


def test_escalation_targets_of_a_large_model_list():
    names = {f"g{i}" for i in range(200)}
    cwf = [{f"g{i}": [f"g{(i + 1) % 200}", {"model": "big"}]} for i in range(200)] + [{"g0": ["ignored"]}]
    assert escalation_targets(names, overrides={"g5": "override"}, context_window_fallbacks=cwf) == (names - {"g6"}) | {"big", "override"}


def test_target_groups_memo_answers_for_a_second_then_reads_the_router_again():
    from litellm_kvwarm.facts_groups import TargetGroupsMemo

    class Router:  # LiteLLM 1.108's attributes, as RouterView reads them
        def __init__(self):
            self.model_names = {"fast", "slow", "big"}
            self.context_window_fallbacks = [{"fast": ["slow"]}]

    now = [100.0]
    memo, router, overrides = TargetGroupsMemo(clock=lambda: now[0], ttl_s=1.0), Router(), {}
    assert memo.get(router, overrides) == {"slow"}
    router.context_window_fallbacks = [{"fast": ["big"]}]  # the operator changes the fallbacks
    now[0] += 0.5
    assert memo.get(router, overrides) == {"slow"}  # remembered within the second
    assert memo.get(router, {"fast": "big"}) == {"big"}  # other overrides: read again
    now[0] += 1.0
    assert memo.get(router, overrides) == {"big"}
    assert memo.get(Router(), overrides) == {"slow"}  # another router: read again


def test_generic_chain_reads_the_group_s_entry_else_the_wildcard_as_litellm_does():
    """``router_settings.default_fallbacks: ["slow"]`` is stored as ``[{"*": ["slow"]}]``. Before: the plugin read it as
    "no generic fallbacks", armed its own for the request (which replace the router's) and a 503 from fast ended the
    request where LiteLLM alone answered from slow (a breaker's proxies)."""
    from litellm_kvwarm.chain import generic_chain

    assert generic_chain("fast", [{"*": ["slow", "fast"]}]) == ("slow",)
    assert generic_chain("fast", [{"*": ["backup"]}, {"fast": ["slow"]}]) == ("slow",)  # its own entry first, wherever it is
    assert generic_chain("fast", [{"fast": []}, {"*": ["backup"]}]) == ()  # an empty entry of its own: no wildcard
    assert generic_chain("fast", None) == () and generic_chain("fast", "slow") == () and generic_chain("fast", [{"x": ["y"]}]) == ()


def test_kept_entries_are_the_router_s_generic_fallbacks_for_every_other_group():
    from litellm_kvwarm.chain import fallbacks_with_source, kept_entries

    router = [{"fast": ["slow"], "slow": ["backup"]}, {"*": ["backup"]}, {"backup": ["last"]}]
    assert kept_entries(router, "fast") == ({"slow": ["backup"]}, {"*": ["backup"]}, {"backup": ["last"]})
    assert kept_entries(router, "backup") == ({"fast": ["slow"], "slow": ["backup"]}, {"*": ["backup"]})
    assert kept_entries(None, "fast") == () and kept_entries("x", "fast") == () and kept_entries([{"fast": ["slow"]}], "fast") == ()
    # the plugin's own entry for the target is found wherever it sits among them
    assert fallbacks_with_source([{"*": ["b"]}, {"slow": ["mid"]}], "slow", ("fast",)) == [{"slow": ["mid", "fast"]}]


def test_a_hop_s_generic_chain_falls_back_to_the_entry_of_the_group_the_request_was_for():
    """LiteLLM's lookup groups on a hop end with the original group: its own entry wins over ``"*"``, after the hop's."""
    from litellm_kvwarm.chain import generic_chain

    fallbacks = [{"fast": ["backup"]}, {"*": ["other"]}]
    assert generic_chain("slow", fallbacks) == ("other",)
    assert generic_chain("slow", fallbacks, original="fast") == ("backup",)
    assert generic_chain("slow", [{"slow": ["x"]}, *fallbacks], original="fast") == ("x",)
