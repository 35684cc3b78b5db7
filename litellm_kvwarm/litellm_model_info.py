"""What LiteLLM's own ``/v1/models`` discovery found for one deployment (pure, no LiteLLM import).

Since 1.108.7 the LiteLLM proxy reads the token limits of its OpenAI-compatible deployments itself.
Sources (the same logic in every release of the tested range, 1.108.7 .. 1.109.3):

* Schedule: ``litellm/proxy/proxy_server.py`` startup (1.108.7 l.1705-1722, 1.109.3 l.1857-1874) adds
  the job ``ProxyStartupEvent.refresh_model_info`` to an ``AsyncIOScheduler`` with
  ``next_run_time=now`` and ``seconds=MODEL_INFO_REFRESH_SECONDS`` (300): the first refresh runs
  in the background right at start-up (requests that arrive before it ends see nothing), then
  every 300 s. ``general_settings: {disable_model_info_refresh: true}`` removes the job.
  The job calls ``Router.arefresh_model_info()`` (1.108.7) or
  ``Router.aapply(ChangeSet(refresh_model_info=True))`` (1.109.x; ``arefresh_model_info`` is
  kept there as a deprecated shim, ``litellm/router_deprecated.py``).
* Fetch: ``Router._arefresh_deployment_model_info`` (1.108.7 ``litellm/router.py`` l.11197;
  1.109.3 ``litellm/router_python_core.py`` l.12564) for each deployment whose provider is in
  ``MODEL_INFO_DISCOVERY_PROVIDERS`` = hosted_vllm, openai, text-completion-openai, openai_like,
  with an ``api_base``, no ``*`` in the model and no client-side credentials. It calls
  ``litellm/llms/openai_like/model_info.py:get_openai_compatible_model_info``: ``GET
  {api_base}/v1/models`` (5 s timeout, 2 MiB cap, response cached 300 s, a failure cached 60 s),
  the card whose ``id`` equals the served model (no ``root``/``parent`` matching, so a vLLM LoRA
  adapter, whose card has ``max_model_len: null``, gets nothing). ``_ModelCard.token_limits``:
  ``max_tokens`` = ``max_model_len`` or ``context_length``; ``max_input_tokens`` =
  min(card ``max_input_tokens`` or that, that); ``max_output_tokens`` likewise. For vLLM all three
  equal ``max_model_len``.
* Storage: NOT in the deployment's ``model_info`` dict and NOT in ``litellm.model_cost``: in the
  router's private ``_discovered_model_info_cache`` (an ``InMemoryCache`` keyed by
  ``model_info.id``, TTL 600 s = 2 x 300, so values vanish after two failed refreshes), as
  ``DiscoveredDeploymentModelInfo(deployment=<the model_list dict>, limits={...})``.
* Read: ``Router.get_discovered_model_info(model_id)`` (1.108.7 l.11246; deprecated in 1.109.x)
  and ``Router.registry().discovered_model_info(id)`` (1.109.x, ``litellm/router_api.py`` l.333).
  Both return the discovered limits minus every key the operator set (non-null) in that
  deployment's ``model_info``, and nothing once the deployment dict was replaced (identity check).

So the operator's ``model_info.max_input_tokens`` and a discovered one are told apart: the
deployment entry (:meth:`~litellm_kvwarm.router_view.RouterView.deployments`) only ever holds the operator's value, and the
accessor above only ever returns discovered values. (LiteLLM's merged views, e.g.
``get_deployment_model_info``, ``get_model_group_info``, ``/model/info`` and the ``/v1/models``
listing, mix both and cannot tell them apart: never read those.) When the operator set
``max_input_tokens`` the accessor hides the discovered one; the operator's value wins in the
plugin anyway (:func:`litellm_kvwarm.catalog.operator_window`).

How the plugin uses it (:mod:`~litellm_kvwarm.facts_windows`): per deployment, the operator's
window, then a window the plugin learned from a server's rejection, then what the plugin's own
cache holds fresh, then LiteLLM's discovered window (only when :func:`litellm_windows_usable`),
and only then its own ``/v1/models`` read (LoRA adapters, providers LiteLLM does not cover,
requests before LiteLLM's first refresh ends, refresh off, or a TTL under 300 s).
"""

from __future__ import annotations

from collections.abc import Mapping

from .router_view import RouterView

#: LiteLLM's discovered-limit keys, in the order :func:`discovered_window` trusts them.
WINDOW_KEYS = ("max_tokens", "max_input_tokens")

#: Seconds between LiteLLM's refreshes (``MODEL_INFO_REFRESH_SECONDS``, a ``Final`` 300 in
#: ``litellm/llms/openai_like/model_info.py`` l.16 of 1.108.7 and 1.109.3; not configurable).
LITELLM_REFRESH_S = 300


def litellm_windows_usable(window_ttl_s: float) -> bool:
    """Whether the plugin may take LiteLLM's discovered windows, given its own TTL (seconds,
    ``KVWARM_WINDOW_TTL_S``): only when that TTL is at least :data:`LITELLM_REFRESH_S`. A shorter
    TTL asks for fresher windows than LiteLLM keeps (a swap slot reloaded with another model or
    ``max_model_len``: LiteLLM sees it only after its 300 s response cache, and keeps a model
    gone from its slot for up to 600 s), so the plugin then reads the cards itself."""
    return window_ttl_s >= LITELLM_REFRESH_S


def deployment_id(deployment_entry: object) -> str | None:
    """``model_info.id`` of one ``router.model_list`` entry (a dict), else ``None``."""
    model_info = deployment_entry.get("model_info") if isinstance(deployment_entry, Mapping) else None
    return model_id_of(model_info)


def model_id_of(model_info: object) -> str | None:
    """``id`` of one deployment's ``model_info`` dict (LiteLLM sets it on every deployment), else ``None``."""
    value = model_info.get("id") if isinstance(model_info, Mapping) else None
    return value if isinstance(value, str) and value else None


def limits_of_id(model_id: str | None, router: object) -> Mapping[str, int]:
    """The limits (tokens, by LiteLLM key) LiteLLM's refresh discovered for the deployment
    ``model_id`` and the operator did not set; empty when it has none (refresh off or not run yet,
    provider not covered, card missing, entry replaced, 600 s without a successful refresh) or the
    router has no such accessor (a release outside 1.108.7 .. 1.109.x). Never raises."""
    if model_id is None or router is None:
        return {}
    try:
        limits = RouterView(router).discovered_model_info(model_id)
    except Exception:  # noqa: BLE001  # an unknown router shape means "nothing discovered"
        return {}
    if not isinstance(limits, Mapping):
        return {}
    return {
        key: value
        for key, value in limits.items()
        if isinstance(key, str) and isinstance(value, int) and not isinstance(value, bool) and value > 0
    }


def window_of_id(model_id: str | None, router: object) -> int | None:
    """The context window (tokens: prompt + output, vLLM's ``max_model_len``) LiteLLM discovered for
    the deployment ``model_id``, or ``None`` when it has nothing.

    ``max_tokens`` (LiteLLM's name for the card's ``max_model_len``/``context_length``) first;
    else ``max_input_tokens`` (never larger; present alone when the card only states that, or
    when the operator set ``model_info.max_tokens``, which hides the discovered ``max_tokens``).
    Never the operator's own value: see the module docstring. Never raises.
    """
    limits = limits_of_id(model_id, router)
    return next((limits[key] for key in WINDOW_KEYS if key in limits), None)


def discovered_limits(deployment_entry: object, router: object) -> Mapping[str, int]:
    """:func:`limits_of_id` of one ``router.model_list`` entry (a dict)."""
    return limits_of_id(deployment_id(deployment_entry), router)


def discovered_window(deployment_entry: object, router: object) -> int | None:
    """:func:`window_of_id` of one ``router.model_list`` entry (a dict)."""
    return window_of_id(deployment_id(deployment_entry), router)
