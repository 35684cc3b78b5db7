"""LiteLLM's discovered window of a deployment, remembered for one second (pure; clock injected).

Why: every request reads the window of its group's deployments and of its escalation target
(:mod:`~litellm_kvwarm.facts_windows`), and each attempt that of its deployment: three reads of
:func:`~litellm_kvwarm.litellm_model_info.window_of_id` a request, each a walk through LiteLLM's
``InMemoryCache`` (its TTL check), its ``get_model_info`` and a copy of the limits (~30 µs of proxy
CPU together, ~4% of the plugin's own time in the throughput benchmark's profile). LiteLLM replaces
what it discovered at most every 300 s (:data:`~litellm_kvwarm.litellm_model_info.LITELLM_REFRESH_S`),
so an answer kept :data:`DEFAULT_TTL_S` is never more than that much older than LiteLLM's own.

Kept per router object (weakly: a new router, as after a config reload, starts empty) and per
``model_info.id`` and endpoint (``/model/update`` keeps a deployment's id and may change its ``api_base``: LiteLLM then has
nothing discovered for the new one, and a memo keyed by the id alone answered the old server's window for the new
server for up to a second, a breaker found); bounded (:data:`DEFAULT_CAPACITY` ids a router, the oldest dropped). The value is the
same for every tenant (what LiteLLM discovered for a deployment), so sharing it shares nothing of a
tenant's. Learned limits and the plugin's own cache are read before this, every time
(:meth:`~litellm_kvwarm.facts_windows.DeploymentWindows.cached`).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable

from .litellm_model_info import window_of_id

__all__ = ["DEFAULT_CAPACITY", "DEFAULT_TTL_S", "LiteLLMWindowMemo"]

#: Seconds an answer is kept (LiteLLM refreshes every 300 s).
DEFAULT_TTL_S = 1.0
#: Deployment ids kept per router at most.
DEFAULT_CAPACITY = 4096


class LiteLLMWindowMemo:
    """:func:`~litellm_kvwarm.litellm_model_info.window_of_id` (tokens or ``None``), each answer kept
    ``ttl_s`` seconds of ``clock`` per (router, model id, endpoint).

    Args:
        ttl_s: seconds an answer is reused (0: never, every call asks LiteLLM).
        clock: monotonic seconds.
        capacity: model ids kept per router; the oldest entry is dropped past it.
        lookup: what is remembered (default :func:`window_of_id`; tests count its calls).
    """

    def __init__(self, ttl_s: float = DEFAULT_TTL_S, clock: Callable[[], float] = time.monotonic,
                 capacity: int = DEFAULT_CAPACITY, lookup: Callable[[str | None, object], int | None] = window_of_id):
        self.ttl_s, self._clock, self._capacity, self._lookup = ttl_s, clock, capacity, lookup
        self._by_router: weakref.WeakKeyDictionary[object, dict[tuple[str, object], tuple[float, int | None]]] = weakref.WeakKeyDictionary()

    def get(self, model_id: str | None, router: object, endpoint: object = None) -> int | None:
        """The window LiteLLM discovered for ``model_id`` on ``router`` (tokens), ``None`` when it has
        none; ``endpoint`` (hashable: the deployment's :class:`~litellm_kvwarm.windows.Deployment`) is part of the key,
        so an id whose server changed is asked again. Never raises (as :func:`window_of_id`)."""
        if model_id is None or router is None or self.ttl_s <= 0:
            return self._lookup(model_id, router)
        try:
            held = self._by_router.setdefault(router, {})
        except TypeError:  # a router that cannot be weakly referenced: asked every time
            return self._lookup(model_id, router)
        now, key = self._clock(), (model_id, endpoint)
        try:
            entry = held.get(key)
        except TypeError:  # an endpoint that cannot be hashed: asked every time
            return self._lookup(model_id, router)
        if entry is not None and entry[0] > now:
            return entry[1]
        value = self._lookup(model_id, router)
        if entry is None and len(held) >= self._capacity:
            held.pop(next(iter(held)))
        held[key] = (now + self.ttl_s, value)
        return value
