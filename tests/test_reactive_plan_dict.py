"""BackstopPlan.to_dict is built by hand (a per-request cost cut; ``asdict`` deep-copies
recursively): it must stay equal to what ``dataclasses.asdict`` gave, with the tuple and mapping
fields as a plain list and dict."""

from __future__ import annotations

import json
from dataclasses import asdict, fields

import pytest

from litellm_kvwarm.reactive import BackstopPlan

PLANS = {
    "full": BackstopPlan("fast", ("mid", "large"), 4096, True, {"mid": 512, "large": 1024}, {"mid": 32_768, "large": 131_072}),
    "one_step": BackstopPlan("fast", ("slow",), 7, False, {"slow": 3}),
    "no_budget_no_steps": BackstopPlan("fast", (), None, False),
}


def _as_before(plan: BackstopPlan) -> dict:
    """What to_dict returned while it used ``asdict``."""
    out = asdict(plan)
    out["chain"] = list(plan.chain)
    out["step_output"] = dict(plan.step_output)
    out["step_windows"] = dict(plan.step_windows)
    return out


@pytest.mark.parametrize("plan", PLANS.values(), ids=PLANS.keys())
def test_to_dict_equals_asdict_with_plain_containers(plan):
    got = plan.to_dict()
    assert got == _as_before(plan)
    assert list(got) == [f.name for f in fields(plan)]  # same keys, same order
    assert type(got["chain"]) is list and type(got["step_output"]) is dict
    assert json.loads(json.dumps(got)) == got  # plain JSON types (it goes into metadata)
    assert BackstopPlan.from_dict(got) == plan


def test_to_dict_is_a_copy():
    plan = PLANS["full"]
    got = plan.to_dict()
    got["chain"].append("x")
    got["step_output"]["mid"] = 1
    assert plan.to_dict() == _as_before(plan)
