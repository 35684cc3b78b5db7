"""litellm_kvwarm.router_view against a real ``litellm.Router`` of the venv's release (CI: 1.108.7 in
.venv, 1.109.3 in .venv-newest): the same answers through either API, and no ``Router.*``
deprecation warning from the plugin's own calls (LiteLLM 1.109 warns on every old member, see
``litellm/router_deprecated.py``), also when the hooks run end to end on that Router with
LiteLLM's own access check and LiteLLM's own discovered windows."""

from __future__ import annotations

import importlib.metadata
import warnings
from pathlib import Path

import httpx
import litellm
from prometheus_client import CollectorRegistry

from litellm_kvwarm.config import Settings
from litellm_kvwarm.hook import KVWarmHandler
from litellm_kvwarm.meta import ESCALATED_KEY
from litellm_kvwarm.metrics import Metrics
from litellm_kvwarm.router_view import RouterView

from test_litellm_model_info import _deployment, _entries, _refresh, models  # noqa: F401  (models: a fixture)

PLUGIN_DIR = str(Path(__file__).resolve().parents[1] / "litellm_kvwarm")
NEW_API = importlib.metadata.version("litellm") >= "1.109"
TEXT = "The quick brown fox jumps over the lazy dog while the river keeps running to the sea. "


def _router(base: str) -> litellm.Router:
    return litellm.Router(
        model_list=[_deployment("fast", "small", base), _deployment("slow", "big", base)],
        context_window_fallbacks=[{"fast": ["slow"]}],
        fallbacks=[{"fast": ["other"]}],
    )


def _deprecation_uses() -> dict[str, int]:
    """LiteLLM 1.109's own tally of outside uses of deprecated Router members (empty on 1.108)."""
    try:
        from litellm.router_deprecated import DEPRECATED_ROUTER_MEMBER_USES
    except ImportError:
        return {}
    return dict(DEPRECATED_ROUTER_MEMBER_USES)


def _router_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [f"{w.filename}:{w.lineno}: {w.message}" for w in caught
            if issubclass(w.category, DeprecationWarning) and str(w.message).startswith("Router.")]


def test_the_view_reads_the_same_through_either_api(models):
    router = _router(models.base)
    assert RouterView(router).new_api is NEW_API
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        view = RouterView(router)
        assert set(view.names()) == {"fast", "slow"}
        assert [e["model_name"] for e in view.deployments("fast")] == ["fast"]
        assert view.deployments("missing") == []
        assert [e["model_name"] for e in view.model_list()] == ["fast", "slow"]
        assert view.context_window_fallbacks() == [{"fast": ["slow"]}]
        assert view.fallbacks() == [{"fast": ["other"]}]
        assert view.discovered_model_info(view.deployments("fast")[0]["model_info"]["id"]) == {}
    assert _router_warnings(caught) == []


async def test_the_hooks_on_a_real_router_raise_no_deprecation_warning(models, monkeypatch):
    from litellm.proxy._types import UserAPIKeyAuth

    router = _router(models.base)
    await _refresh(router, monkeypatch)  # LiteLLM's own /v1/models read: fast 16,384, slow 131,072
    hits = models.hits
    plugin_calls: list[str] = []

    def no_backend(request: httpx.Request) -> httpx.Response:
        plugin_calls.append(request.url.path)
        return httpx.Response(404, json={"error": "not found"})

    settings = Settings(estimator="ratio", exact_count=False, warm_ahead=False, hash_secret="s" * 32)
    handler = KVWarmHandler(settings, router_getter=lambda: router, metrics_=Metrics.create(CollectorRegistry()),
                            http_client=httpx.AsyncClient(transport=httpx.MockTransport(no_backend)))
    key = UserAPIKeyAuth(api_key="sk-caller", token="hashed-caller", team_id="team-a")
    uses = _deprecation_uses()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        long = {"model": "fast", "messages": [{"role": "user", "content": TEXT * 1_400}], "max_tokens": 64}
        data = await handler.async_pre_call_hook(key, None, long, "acompletion")
        assert data["model"] == "slow" and data["metadata"][ESCALATED_KEY] == "proactive"  # on LiteLLM's windows
        short = {"model": "fast", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 20_000}
        data = await handler.async_pre_call_hook(key, None, short, "acompletion")
        assert data["model"] == "fast" and data["context_window_fallbacks"]
        entry = _entries(router, "fast")[0]
        kwargs = {**entry["litellm_params"], "model_info": entry["model_info"], "messages": short["messages"],
                  "max_tokens": 20_000, "metadata": {"model_group": "fast"}}
        await handler.async_pre_call_deployment_hook(kwargs, "acompletion")
        healthy = [{"model_info": {"id": f"d{i}"}} for i in range(3)]
        assert len(await handler.async_filter_deployments("slow", healthy, None, {"metadata": {"kvwarm_affinity": "k"}})) == 1
    assert _router_warnings(caught) == []
    assert [w for w in caught if w.filename.startswith(PLUGIN_DIR)] == []
    assert _deprecation_uses() == uses  # LiteLLM's own count of outside uses did not move
    assert plugin_calls == [] and models.hits == hits  # no card read a second time
    await handler.aclose()


def test_failed_deployments_reads_litellms_retry_records():
    from litellm_kvwarm.router_view import failed_deployments

    records = [{"deployment_id": "a"}, {"model_info": {"id": "b"}}, {"model_id": "c"}, {"deployment_id": None}, "junk", 7]
    assert failed_deployments({"metadata": {"previous_models": records}}) == {"a", "b", "c"}
    assert failed_deployments({"litellm_metadata": {"previous_models": ({"deployment_id": "x"},)}}) == {"x"}
    # what it read is kept in the request's metadata: LiteLLM's record keeps only its last four failures
    kwargs = {"metadata": {"previous_models": [{"deployment_id": f"bad-{i}"} for i in range(4)]}}
    assert failed_deployments(kwargs) == {f"bad-{i}" for i in range(4)}
    kwargs["metadata"]["previous_models"] = [{"deployment_id": f"bad-{i}"} for i in range(1, 5)]  # bad-0 trimmed
    assert failed_deployments(kwargs) == {f"bad-{i}" for i in range(5)}
    for odd in (None, [], {"metadata": None}, {"metadata": {"previous_models": "a"}}, {"metadata": {}}):
        assert failed_deployments(odd) == frozenset()


def test_failed_deployments_from_a_real_router_retry():
    """LiteLLM's own ``log_retry`` (the release in this venv) writes what the filter reads."""
    from litellm_kvwarm.router_view import failed_deployments

    router = litellm.Router(model_list=[{"model_name": "slow", "litellm_params": {"model": "hosted_vllm/big", "api_base": "http://x/v1"},
                                         "model_info": {"id": "dep-1"}}])
    kwargs = {"model": "slow", "metadata": {"model_info": {"id": "dep-1"}, "deployment": "hosted_vllm/big"}}
    try:  # LiteLLM 1.109 moved it to the RoutingContext (Router.log_retry warns it is deprecated); 1.108 has only Router's
        from litellm.router_api import RoutingContext
        logger = RoutingContext(router)
    except ImportError:
        logger = router
    kwargs = logger.log_retry(kwargs=kwargs, e=litellm.InternalServerError("boom", "hosted_vllm", "big"))
    assert failed_deployments(kwargs) == {"dep-1"}


def test_group_limited_reads_every_place_litellm_reads_a_limit():
    """Breaker rounds on 5c938b3/aa643e2: rpm/tpm are limits per minute only where LiteLLM enforces them (usage-based
    routing, the enforce_model_rate_limits check); elsewhere only their concurrency semaphore limits, and only where 4
    warms would hold more than a tenth of it (rpm 900/100 are routing weights under simple-shuffle: warms stay on)."""
    from litellm_kvwarm.limits import group_limited

    def router(entries, **settings):
        return litellm.Router(model_list=entries, **settings)

    plain = {"model_name": "slow", "litellm_params": {"model": "hosted_vllm/big", "api_base": "http://x/v1"}}

    def with_(place, **limit):
        return {**plain, place: {**plain.get(place, {}), **limit}}

    assert group_limited(router([plain]), "slow") is False
    for place in ("litellm_params", "model_info"):
        for limit in ({"rpm": 6}, {"tpm": 6_000}, {"max_parallel_requests": 6}, {"rpm": "6"}):
            assert group_limited(router([plain, with_(place, **limit)]), "slow") is True, (place, limit)
            assert group_limited(router([plain, {**with_(place, **limit), "model_name": "other"}]), "slow") is False
        # routing weights under simple-shuffle: 900 and 100 concurrent slots, 4 warms hold under a tenth
        assert group_limited(router([with_(place, rpm=900), with_(place, rpm=100)]), "slow") is False, place
        assert group_limited(router([with_(place, tpm=1_000_000)]), "slow") is False, place  # 6,000 slots
        # the same numbers enforced per minute
        for enforcing in ({"routing_strategy": "usage-based-routing-v2"}, {"optional_pre_call_checks": ["enforce_model_rate_limits"]}):
            assert group_limited(router([with_(place, rpm=900)], **enforcing), "slow") is True, (place, enforcing)
    assert group_limited(router([plain], default_max_parallel_requests=4), "slow") is True
    assert group_limited(router([plain], default_max_parallel_requests=400), "slow") is False
    assert group_limited(router([with_("litellm_params", max_parallel_requests=40)]), "slow", warm_slots=4) is False
    assert group_limited(router([with_("litellm_params", max_parallel_requests=39)]), "slow", warm_slots=4) is True
    assert group_limited(None, "slow") is False
    assert group_limited(object(), "slow") is False  # unreadable: not limited (the other guards still apply)


def test_caller_limited_reads_every_limit_of_litellms_key_object():
    from litellm.proxy._types import UserAPIKeyAuth

    from litellm_kvwarm.limits import caller_limited

    assert caller_limited(UserAPIKeyAuth(api_key="sk-1", team_id="t")) is False
    for field_name in ("tpm_limit", "team_tpm_limit", "user_tpm_limit", "end_user_tpm_limit", "organization_tpm_limit",
                       "team_member_tpm_limit"):
        assert caller_limited(UserAPIKeyAuth(api_key="sk-1", **{field_name: 10})) is True, field_name
    # requests per minute and parallel requests are taken by the proxy's pre-call hook, which a warm never passes
    for field_name in ("rpm_limit", "team_rpm_limit", "user_rpm_limit", "max_parallel_requests"):
        assert caller_limited(UserAPIKeyAuth(api_key="sk-1", **{field_name: 10})) is False, field_name
    assert caller_limited(UserAPIKeyAuth(api_key="sk-1", rpm_limit_per_model={"slow": 10})) is False
    # per model group: only the warm's own group counts (LiteLLM charges a warm's tokens to model_per_key:<key>:slow)
    assert caller_limited(UserAPIKeyAuth(api_key="sk-1", tpm_limit_per_model={"slow": 1000}), "slow") is True
    assert caller_limited(UserAPIKeyAuth(api_key="sk-1", tpm_limit_per_model={"fast": 1000}), "slow") is False
    for meta in ("metadata", "team_metadata"):
        assert caller_limited(UserAPIKeyAuth(api_key="sk-1", **{meta: {"model_tpm_limit": {"slow": 1000}}}), "slow") is True
        assert caller_limited(UserAPIKeyAuth(api_key="sk-1", **{meta: {"model_itpm_limit": {"slow": 1000}}}), "slow") is True
        assert caller_limited(UserAPIKeyAuth(api_key="sk-1", **{meta: {"model_tpm_limit": {"fast": 1000}}}), "slow") is False
    assert caller_limited(UserAPIKeyAuth(api_key="sk-1", metadata={"model_tpm_limit": {}}), "slow") is False
    assert caller_limited(None) is False and caller_limited(object()) is False
