from litellm_kvwarm.chain import escalation_chain, first_fitting, next_step, rest_after, step_params

CWF = [{"fast": ["mid", {"model": "large"}, "fast", "mid"]}, {"mid": ["large"]}]


def test_chain_in_operator_order_without_self_or_repeats():
    assert escalation_chain("fast", overrides={}, context_window_fallbacks=CWF) == ("mid", "large")
    assert escalation_chain("mid", overrides={}, context_window_fallbacks=CWF) == ("large",)
    assert escalation_chain("large", overrides={}, context_window_fallbacks=CWF) == ()
    assert escalation_chain("fast", overrides={"fast": "cloud"}, context_window_fallbacks=CWF) == ("cloud",)
    assert escalation_chain("fast", overrides={}, context_window_fallbacks=[{"fast": "slow"}]) == ("slow",)
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
