"""What the plugin reads of LiteLLM's ``Router``, through the API each release of the range offers
(pure, duck-typed: nothing here imports LiteLLM).

LiteLLM 1.109 added entry points and deprecated the members the plugin read before
(``litellm/router_deprecated.py``: each old member still answers, with a ``DeprecationWarning``
naming its replacement; their removal is announced). Sources, 1.109.3 ``litellm/router_api.py``
(``Router.registry()`` / ``Router.settings()`` themselves: ``litellm/router_python_core.py`` l.1341/1350,
both cached on the router, so calling them per read is cheap):

============================== ================================================ ===========================
what                           1.109.x                                          1.108.x (the old members)
============================== ================================================ ===========================
a group's deployments          ``registry().deployments(group)`` (l.463)        ``get_model_list(model_name=)``
every deployment               ``registry().all()`` (l.518, the live list)      ``model_list``
the group names                ``registry().names(kind="group_set")`` (l.620)   ``model_names``
context-window fallbacks       ``settings().context_window_fallbacks`` (l.1082) ``context_window_fallbacks``
generic fallbacks              ``settings().fallbacks`` (l.1081)                ``fallbacks``
discovered limits of an id     ``registry().discovered_model_info(id)`` (l.333) ``get_discovered_model_info(id)``
============================== ================================================ ===========================

The 1.109 shape is chosen when the router has a callable ``registry`` (1.108.7 has none), so the
plugin's own calls raise no deprecation warning on either release. Every reader tolerates a
router that lacks the member (a test double, an embedder's router): it answers empty.
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from .meta import FAILED_KEY


@dataclass(frozen=True)
class RouterView:
    """The plugin's reads of one ``router`` (a ``litellm.Router`` of 1.108.x or 1.109.x, or a double
    with the 1.108 members). Cheap to build: one per request or per call."""

    router: Any

    @property
    def new_api(self) -> bool:
        """Whether the router offers LiteLLM 1.109's entry points (``registry()``/``settings()``)."""
        return callable(getattr(self.router, "registry", None))

    def _registry(self) -> Any:
        return self.router.registry()

    def setting(self, name: str) -> object:
        """The router setting ``name`` (``router_settings``' key, e.g. ``routing_strategy``) as the router
        holds it, through LiteLLM 1.109's ``settings()`` where offered; ``None``: unset or unknown."""
        if self.new_api and callable(getattr(self.router, "settings", None)):
            return getattr(self.router.settings(), name, None)
        return getattr(self.router, name, None)

    def names(self) -> Collection[str]:
        """The configured group names (a set on LiteLLM's Router); empty when unreadable."""
        names = self._registry().names(kind="group_set") if self.new_api else getattr(self.router, "model_names", None)
        return names if isinstance(names, Collection) and not isinstance(names, str) else ()

    def deployments(self, group: str) -> list[Mapping[str, Any]]:
        """The ``model_list`` entries (dicts) of ``group``, as the router resolves a group name."""
        if self.new_api:
            entries = self._registry().deployments(group)
        else:
            get = getattr(self.router, "get_model_list", None)
            entries = get(model_name=group) if callable(get) else None
        return [e for e in entries or () if isinstance(e, Mapping)]

    def model_list(self) -> list[Any]:
        """Every ``model_list`` entry, in configured order (the router's live list, or a copy)."""
        entries = self._registry().all() if self.new_api else getattr(self.router, "model_list", None)
        return entries if isinstance(entries, list) else list(entries or ())

    def context_window_fallbacks(self) -> object:
        """``router_settings.context_window_fallbacks`` as the router holds it (``None``: unset)."""
        return self.setting("context_window_fallbacks")

    def fallbacks(self) -> object:
        """``router_settings.fallbacks`` as the router holds it (``None``: unset)."""
        return self.setting("fallbacks")

    def discovered_model_info(self, model_id: str) -> object:
        """What LiteLLM's ``/v1/models`` refresh discovered for the deployment ``model_id`` and the
        operator did not set (a mapping of limits in tokens, read by
        :mod:`~litellm_kvwarm.litellm_model_info`). Raises what the router raises, or
        ``AttributeError`` when it has no such accessor."""
        if self.new_api:
            return self._registry().discovered_model_info(model_id)
        return _discovered_1108(self.router, model_id)


#: per router (weakly held): model id → (LiteLLM's cache entry, the deployment, its ``model_info``, the answer)
_DISCOVERED: weakref.WeakKeyDictionary[Any, dict[str, tuple[object, object, object, object]]] = weakref.WeakKeyDictionary()


def _discovered_1108(router: Any, model_id: str) -> object:
    """``router.get_discovered_model_info(model_id)`` (LiteLLM 1.108.x), remembered while LiteLLM's
    inputs to it are the same objects.

    The call builds a pydantic ``TypeAdapter`` each time (1.108.7 ``litellm/router.py`` l.11253:
    about 150 µs of CPU, three times a request). Its answer depends only on the entry of the
    router's ``_discovered_model_info_cache`` for the id (replaced on each refresh, gone when it
    expires) and on the deployment dict and its ``model_info`` (replaced when the deployment is):
    while all three are the very objects of the last call, the last answer is returned. A router
    without that cache (a test double, another release) is asked every time."""
    get_entry = getattr(getattr(router, "_discovered_model_info_cache", None), "get_cache", None)
    get_deployment = getattr(router, "get_model_info", None)
    if not callable(get_entry) or not callable(get_deployment):
        return router.get_discovered_model_info(model_id)
    entry = get_entry(model_id)
    if entry is None:  # nothing discovered (or expired): LiteLLM answers empty without the adapter
        return router.get_discovered_model_info(model_id)
    deployment = get_deployment(model_id)
    model_info = deployment.get("model_info") if isinstance(deployment, Mapping) else None
    try:
        memo = _DISCOVERED.setdefault(router, {})
    except TypeError:  # a router that cannot be weakly referenced
        return router.get_discovered_model_info(model_id)
    held = memo.get(model_id)
    if held is not None and held[0] is entry and held[1] is deployment and held[2] is model_info:
        return held[3]
    answer = router.get_discovered_model_info(model_id)
    memo[model_id] = (entry, deployment, model_info, answer)
    return answer


def group_names(router: object) -> Collection[str]:
    """:meth:`RouterView.names` of ``router`` (empty for ``None``)."""
    return RouterView(router).names() if router is not None else ()



def served_model(router: object, group: str) -> str | None:
    """The model the first deployment of ``group`` serves (the name its ``/v1/models`` lists, e.g.
    ``Qwen/Qwen3-8B`` for ``hosted_vllm/Qwen/Qwen3-8B``); ``None`` when unknown. Reads the router only."""
    from .catalog import served_model_name  # catalog imports this module (through litellm_model_info)

    entries = RouterView(router).deployments(group) if router is not None else []
    params = entries[0].get("litellm_params") if entries else None
    model = params.get("model") if isinstance(params, Mapping) else None
    return served_model_name(model) if isinstance(model, str) else None


def failed_deployments(request_kwargs: object) -> frozenset[str]:
    """Ids of the deployments earlier attempts of this request failed on: those LiteLLM's router records before a
    retry or fallback (``Router.log_retry``: ``metadata["previous_models"]``, or ``litellm_metadata``'s, one record
    per failed attempt with its ``deployment_id``; 1.108.7 ``litellm/router.py`` l.9138; the record's
    ``model_info.id`` or ``model_id`` where a release writes those), and those already kept in the request's
    metadata under :data:`~litellm_kvwarm.meta.FAILED_KEY` (LiteLLM keeps only its last four records,
    ``RETRY_BREADCRUMB_LIMIT``: a fifth failure would drop the first). The union is written back there, into the
    metadata dict LiteLLM hands every retry of the request (a client's ``kvwarm_*`` keys are removed at entry).
    Empty on the first attempt and for anything unreadable; never raises."""
    if not isinstance(request_kwargs, Mapping):
        return frozenset()
    found: set[str] = set()
    held = []
    for name in ("metadata", "litellm_metadata"):
        meta = request_kwargs.get(name)
        if not isinstance(meta, Mapping):
            continue
        held.append(meta)
        kept = meta.get(FAILED_KEY)
        if isinstance(kept, (list, tuple)):
            found.update(k for k in kept if isinstance(k, str))
        records = meta.get("previous_models")
        for record in records if isinstance(records, (list, tuple)) else ():
            if not isinstance(record, Mapping):
                continue
            info = record.get("model_info")
            for value in (record.get("deployment_id"), record.get("model_id"), info.get("id") if isinstance(info, Mapping) else None):
                if isinstance(value, str):
                    found.add(value)
    if found:
        for meta in held:
            if isinstance(meta, dict):
                meta[FAILED_KEY] = sorted(found)
    return frozenset(found)
