"""The window of a deployment from its sources, in order (litellm_kvwarm.facts_windows), against
fake routers of both LiteLLM shapes (1.108: ``get_discovered_model_info``; 1.109:
``registry().discovered_model_info``) and a window cache whose fetcher counts its calls."""

from __future__ import annotations

import asyncio

import pytest

from litellm_kvwarm.catalog import DeploymentInfo
from litellm_kvwarm.deadline import RequestBudget
from litellm_kvwarm.facts_windows import DeploymentWindows
from litellm_kvwarm.learned_limits import LearnedLimits, LimitKind, Observed
from litellm_kvwarm.litellm_model_info import LITELLM_REFRESH_S, litellm_windows_usable
from litellm_kvwarm.windows import MISS, Deployment, WindowCache

DEP = Deployment("http://fast.test/v1", "fast-8b")
TTL = 900.0  # the plugin's default KVWARM_WINDOW_TTL_S


class OldRouter:
    """LiteLLM 1.108.x: the discovered limits through ``get_discovered_model_info``."""

    def __init__(self, discovered: dict[str, dict[str, int]]):
        self.discovered = discovered
        self.reads = 0

    def get_discovered_model_info(self, model_id):
        self.reads += 1
        return dict(self.discovered.get(model_id, {}))


class _Registry:
    def __init__(self, owner: "NewRouter"):
        self.owner = owner

    def discovered_model_info(self, model_id):
        self.owner.reads += 1
        return dict(self.owner.discovered.get(model_id, {}))


class NewRouter(OldRouter):
    """LiteLLM 1.109.x: ``registry().discovered_model_info``; the old accessor would warn."""

    def registry(self):
        return _Registry(self)

    def get_discovered_model_info(self, model_id):  # pragma: no cover - must not be called
        raise AssertionError("1.109 shape: the deprecated accessor must not be used")


class Fetcher:
    """The plugin's own ``/v1/models`` read, scripted: answers ``window`` and counts calls."""

    def __init__(self, window: int | None = 16_384):
        self.window, self.calls = window, 0

    async def __call__(self, deployment: Deployment) -> int | None:
        self.calls += 1
        return self.window


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def setup(window: int | None = 16_384, *, ttl: float = TTL):
    fetcher, clock, updates = Fetcher(window), Clock(), []
    cache = WindowCache(fetcher, ttl_s=ttl, unknown_retry_s=30, clock=clock, on_update=lambda d, w: updates.append((d, w)))
    return cache, fetcher, clock, updates


def info(*, operator: int | None = None, model_id: str | None = "id-fast", deployment: Deployment | None = DEP,
         operator_input: int | None = None) -> DeploymentInfo:
    return DeploymentInfo(deployment=deployment, operator_window=operator, model_id=model_id, operator_input=operator_input)


ROUTERS = [pytest.param(OldRouter, id="litellm-1.108"), pytest.param(NewRouter, id="litellm-1.109")]
LITELLM = {"id-fast": {"max_tokens": 8_192, "max_input_tokens": 8_192, "max_output_tokens": 8_192}}


def budget() -> RequestBudget:
    return RequestBudget(2.0)


def test_litellm_windows_are_used_only_with_a_ttl_of_at_least_its_refresh_interval():
    assert LITELLM_REFRESH_S == 300
    assert litellm_windows_usable(300) and litellm_windows_usable(900)
    assert not litellm_windows_usable(299.9) and not litellm_windows_usable(3)


@pytest.mark.parametrize("router_type", ROUTERS)
async def test_litellm_s_window_is_read_instead_of_fetching(router_type):
    cache, fetcher, _, updates = setup()
    router = router_type(LITELLM)
    windows = DeploymentWindows(cache, router, window_ttl_s=TTL)
    assert windows.cached(info()) == 8_192
    assert await windows.get(info(), budget()) == 8_192
    assert await windows.group([info(), info()], budget()) == 8_192
    assert fetcher.calls == 0
    assert updates == [(DEP, 8_192)]  # the gauge shows it, once per change
    assert router.reads >= 3


@pytest.mark.parametrize("router_type", ROUTERS)
async def test_the_operator_s_window_wins_over_everything(router_type):
    cache, fetcher, clock, _ = setup()
    learned = LearnedLimits(ttl_s=TTL, clock=clock)
    learned.observe("t1", DEP, Observed(LimitKind.TOTAL, 4_000, "test"), None)
    router = router_type(LITELLM)
    windows = DeploymentWindows(cache, router, window_ttl_s=TTL, learned=learned, tenant="t1")
    assert windows.cached(info(operator=2_048)) == 2_048
    assert await windows.get(info(operator=2_048), budget()) == 2_048
    assert windows.known(info(operator=2_048)) == 2_048
    assert fetcher.calls == 0 and router.reads == 0


@pytest.mark.parametrize("router_type", ROUTERS)
async def test_a_learned_window_keeps_winning_over_litellm_s(router_type):
    cache, fetcher, clock, _ = setup()
    learned = LearnedLimits(ttl_s=TTL, clock=clock)
    assert learned.observe("t1", DEP, Observed(LimitKind.TOTAL, 6_000, "test"), 8_192)  # the server's rejection said 6,000
    windows = DeploymentWindows(cache, router_type(LITELLM), window_ttl_s=TTL, learned=learned, tenant="t1")
    assert windows.cached(info()) == 6_000 and windows.known(info()) == 6_000
    assert await windows.get(info(), budget()) == 6_000
    other = DeploymentWindows(cache, router_type(LITELLM), window_ttl_s=TTL, learned=learned, tenant="t2")
    assert await other.get(info(), budget()) == 8_192  # another tenant's routing is not moved
    clock.now += TTL  # the learned limit ages out with the window TTL: LiteLLM's again
    assert learned.get("t1", DEP).total is None
    assert await windows.get(info(), budget()) == 8_192
    assert fetcher.calls == 0


@pytest.mark.parametrize("router_type", ROUTERS)
async def test_a_learned_input_limit_lowers_the_routing_window_only(router_type):
    """SGLang admits 12,000 prompt tokens of a 16,384... here 8,192 window: routing uses 5,000 +
    floor, the window (for clamping) stays 8,192; a limit not below the window is not learned."""
    cache, _, clock, _ = setup()
    learned = LearnedLimits(ttl_s=TTL, clock=clock)
    assert not learned.observe("t1", DEP, Observed(LimitKind.INPUT, 8_192, "test"), 8_192)
    assert learned.observe("t1", DEP, Observed(LimitKind.INPUT, 5_000, "test"), 8_192)
    windows = DeploymentWindows(cache, router_type(LITELLM), window_ttl_s=TTL, learned=learned, tenant="t1")
    assert windows.input_limit(info()) == 5_000
    assert await windows.get(info(), budget()) == 8_192
    assert await windows.route_window([info()], budget(), 256) == 5_256
    assert windows.input_limit(info(operator=2_048)) is None  # the operator's window wins
    # max_input_tokens beside max_output_tokens: the prompt's limit (the operator's, not the learned one), for routing
    # only; the window, which a clamp uses, is discovered (LiteLLM's 8,192 here)
    split = info(operator_input=12_288)
    assert windows.input_limit(split) == 12_288
    assert await windows.get(split, budget()) == 8_192 and windows.known(split) == 8_192
    assert await windows.route_window([split], budget(), 256) == 8_192
    assert await windows.route_window([info(operator_input=4_096)], budget(), 256) == 4_352
    # nothing discovered (no card, no LiteLLM, no endpoint): max_input_tokens is the window, as LiteLLM's map means it
    cache, fetcher, _, _ = setup(None)
    blind = DeploymentWindows(cache, None, window_ttl_s=TTL)
    assert await blind.get(split, budget()) == 12_288 and fetcher.calls == 1
    assert blind.cached(split) == 12_288 and blind.known(split) == 12_288
    assert await blind.get(info(deployment=None, operator_input=12_288), budget()) == 12_288


@pytest.mark.parametrize("router_type", ROUTERS)
async def test_the_plugin_s_fresh_window_wins_over_litellm_s_without_refreshing_ahead(router_type):
    cache, fetcher, clock, _ = setup(16_384)
    assert await DeploymentWindows(cache, None, window_ttl_s=TTL).get(info(), budget()) == 16_384  # before LiteLLM's refresh
    assert fetcher.calls == 1
    windows = DeploymentWindows(cache, router_type(LITELLM), window_ttl_s=TTL)
    clock.now += 0.9 * TTL  # inside the refresh-ahead window
    assert windows.cached(info()) == 16_384
    await asyncio.sleep(0)
    assert fetcher.calls == 1  # LiteLLM keeps this deployment fresh: no re-read of the card
    clock.now += 0.2 * TTL  # the plugin's entry expired: LiteLLM's value from now on
    assert await windows.get(info(), budget()) == 8_192
    assert fetcher.calls == 1
    assert windows.discovered(info()) == 8_192


async def test_without_litellm_s_window_the_plugin_refreshes_ahead_as_before():
    cache, fetcher, clock, _ = setup(16_384)
    windows = DeploymentWindows(cache, OldRouter({}), window_ttl_s=TTL)
    assert await windows.get(info(), budget()) == 16_384
    clock.now += 0.9 * TTL
    assert windows.cached(info()) == 16_384
    await asyncio.sleep(0)  # the refresh-ahead fetch it started runs
    assert fetcher.calls == 2


@pytest.mark.parametrize("router_type", ROUTERS)
async def test_a_cached_unknown_gives_way_to_litellm_s_window(router_type):
    cache, fetcher, _, _ = setup(None)  # the plugin's own read found no window
    assert await DeploymentWindows(cache, None, window_ttl_s=TTL).get(info(), budget()) is None
    windows = DeploymentWindows(cache, router_type(LITELLM), window_ttl_s=TTL)
    assert windows.cached(info()) == 8_192
    assert fetcher.calls == 1


@pytest.mark.parametrize("router_type", ROUTERS)
async def test_nothing_from_litellm_falls_back_to_the_plugin_s_own_fetch(router_type):
    cache, fetcher, _, _ = setup(16_384)
    router = router_type({"other-id": LITELLM["id-fast"]})  # e.g. a LoRA adapter: LiteLLM has nothing
    windows = DeploymentWindows(cache, router, window_ttl_s=TTL)
    assert windows.cached(info()) is MISS
    assert await windows.get(info(), budget()) == 16_384
    assert fetcher.calls == 1
    assert await windows.get(info(model_id=None), budget()) == 16_384  # no id: the plugin's cache
    assert fetcher.calls == 1


@pytest.mark.parametrize("router_type", ROUTERS)
async def test_a_ttl_under_litellm_s_refresh_interval_reads_the_cards_itself(router_type):
    cache, fetcher, _, _ = setup(16_384, ttl=3)
    router = router_type(LITELLM)
    windows = DeploymentWindows(cache, router, window_ttl_s=3)
    assert windows.litellm(info()) is None and windows.known(info()) is None
    assert await windows.get(info(), budget()) == 16_384
    assert fetcher.calls == 1 and router.reads == 0


async def test_max_input_tokens_alone_and_junk_from_the_router():
    cache, fetcher, _, _ = setup(16_384)
    windows = DeploymentWindows(cache, OldRouter({"id-fast": {"max_input_tokens": 7_000}}), window_ttl_s=TTL)
    assert windows.cached(info()) == 7_000

    class Broken:
        def get_discovered_model_info(self, model_id):
            raise RuntimeError("router shape changed")

    windows = DeploymentWindows(cache, Broken(), window_ttl_s=TTL)
    assert await windows.get(info(), budget()) == 16_384  # an unreadable router means "nothing discovered"
    assert fetcher.calls == 1


async def test_no_endpoint_has_the_operator_s_window_or_none():
    cache, fetcher, _, _ = setup()
    windows = DeploymentWindows(cache, OldRouter(LITELLM), window_ttl_s=TTL)
    assert windows.cached(info(deployment=None)) is None
    assert await windows.get(info(deployment=None, operator=4_096), budget()) == 4_096
    assert windows.discovered(info(deployment=None)) == 8_192 and fetcher.calls == 0


async def test_adopt_publishes_once_per_change_and_after_the_plugin_s_own_value():
    cache, _, _, updates = setup(16_384)
    cache.adopt(DEP, 8_192)
    cache.adopt(DEP, 8_192)
    assert updates == [(DEP, 8_192)] and cache.lookup(DEP) is MISS  # published, not cached
    await cache.get(DEP, budget())  # the plugin's own value replaces it on the gauge
    cache.adopt(DEP, 8_192)
    assert updates == [(DEP, 8_192), (DEP, 16_384), (DEP, 8_192)]


@pytest.mark.parametrize("router_type", ROUTERS)
async def test_a_deployment_moved_to_another_server_under_the_same_id_is_read_again(router_type):
    """``/model/update`` keeps ``model_info.id`` and moves ``api_base`` (a breaker's upsert, 16,384 → 32,768): LiteLLM has
    nothing discovered for the replaced deployment, and the remembered answer of the old server is not used for the new
    one: the plugin reads the new server's card (and publishes that, not the old server's window)."""
    from litellm_kvwarm.litellm_window_memo import LiteLLMWindowMemo

    cache, fetcher, _, updates = setup(32_768)
    router, memo = router_type({"id-fast": {"max_tokens": 16_384}}), LiteLLMWindowMemo()
    windows = DeploymentWindows(cache, router, window_ttl_s=TTL, litellm_windows=memo)
    assert await windows.get(info(), budget()) == 16_384 and fetcher.calls == 0
    router.discovered.clear()  # the update replaced the deployment: LiteLLM's accessor answers nothing for it
    moved = info(deployment=Deployment("http://fast-b.test/v1", "fast-8b"))
    assert await windows.get(moved, budget()) == 32_768 and fetcher.calls == 1
    assert updates == [(DEP, 16_384), (moved.deployment, 32_768)]
