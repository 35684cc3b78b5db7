"""GroupFactors: the largest factors of a group's corrected tenants, against a brute-force maximum."""

import random
from dataclasses import dataclass

from litellm_kvwarm.correction import EstimateCorrection, GroupSummary
from litellm_kvwarm.group_factors import GroupFactors


@dataclass(frozen=True)
class F:
    routing: float
    safe: float


def test_largest_follows_every_change_including_the_top_tenant_falling_or_leaving():
    g = GroupFactors()
    assert g.largest() == (None, None) and len(g) == 0
    g.set("a", F(3.0, 1.5))
    g.set("b", F(2.5, 2.5))
    assert g.largest() == (3.0, 2.5)
    g.set("a", F(1.2, 1.1))  # the top tenant's factor falls: the next one is the largest
    assert g.largest() == (2.5, 2.5)
    assert g.discard("b") and not g.discard("b")
    assert g.largest() == (1.2, 1.1) and len(g) == 1
    g.set("a", F(1.2, 1.1))  # the same values twice: still one tenant
    assert g.discard("a") and g.largest() == (None, None)


def test_random_changes_match_the_brute_force_maximum_and_memory_stays_bounded():
    rng = random.Random(7)
    g, live = GroupFactors(), {}
    for step in range(20_000):
        tenant = f"t{rng.randrange(300)}"
        if rng.random() < 0.2:
            assert g.discard(tenant) == (live.pop(tenant, None) is not None)
        else:
            live[tenant] = F(round(rng.uniform(1.0, 4.0), 2), round(rng.uniform(1.0, 4.0), 2))
            g.set(tenant, live[tenant])
        if step % 7 == 0:
            expected = (max((f.routing for f in live.values()), default=None), max((f.safe for f in live.values()), default=None))
            assert g.largest() == expected
        assert len(g) == len(live)
        assert all(len(heap.entries) <= 2 * 300 + 64 for heap in g._heaps)  # O(tenants), not O(changes)


def test_summary_of_many_tenants_is_the_brute_force_one():
    c = EstimateCorrection(min_samples=2, window=4)
    rng = random.Random(11)
    for _ in range(3):
        for t in range(500):
            c.observe("fast", f"t{t}", routing=1000, safe=2000, prompt_tokens=rng.randint(900, 3000))
    factors = [c.factors("fast", f"t{t}") for t in range(500)]
    corrected = [f for f in factors if f.corrects]
    assert c.summary("fast") == GroupSummary(routing=max(f.routing for f in corrected), safe=max(f.safe for f in corrected),
                                             tenants=len(corrected))
    assert len(corrected) > 400  # most tenants here are corrected: the case that made summary() O(tenants)
