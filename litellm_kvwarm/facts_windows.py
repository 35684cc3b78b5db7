"""The window (tokens, a deployment's ``max_model_len``) of one deployment and of a model group,
read from its sources in a fixed order (async; I/O only through the injected
:class:`~litellm_kvwarm.windows.WindowCache`; LiteLLM only through the router object handed in).

Per deployment (:meth:`DeploymentWindows.cached`, :meth:`DeploymentWindows.get`):

1. the operator's ``model_info.max_input_tokens`` set without ``max_output_tokens``
   (:func:`~litellm_kvwarm.catalog.operator_window`; with both set, the window is discovered as below, and
   ``max_input_tokens`` is the window only where nothing else is known);
2. a limit below the advertised window that the server's own rejection revealed to this tenant
   (:class:`~litellm_kvwarm.learned_limits.LearnedLimits`, ``TOTAL`` kind): it outranks every
   discovered value, LiteLLM's too, until it expires with the window TTL;
3. what the plugin's own cache holds fresh (:meth:`WindowCache.lookup`; its refresh-ahead runs only
   while LiteLLM has nothing for the deployment, so the plugin stops re-reading cards LiteLLM keeps);
4. the window LiteLLM's own ``/v1/models`` refresh discovered
   (:func:`~litellm_kvwarm.litellm_model_info.window_of_id`, by ``model_info.id``), only when the
   plugin's TTL (``KVWARM_WINDOW_TTL_S``) is at least LiteLLM's 300 s refresh interval
   (:func:`~litellm_kvwarm.litellm_model_info.litellm_windows_usable`): with a shorter TTL the
   operator asked for fresher windows than LiteLLM keeps (swap slots), so the plugin reads the cards
   itself. A value taken from LiteLLM is published like one the plugin read (the
   ``kvwarm_discovered_window_tokens`` gauge and the window log line, :meth:`WindowCache.adopt`);
5. the plugin's own ``GET /v1/models`` within the request's budget (:meth:`WindowCache.get`): what
   LiteLLM does not cover (LoRA adapters, which get their parent's window; providers outside
   LiteLLM's discovery list; requests before LiteLLM's first refresh ends; the refresh turned off
   with ``general_settings.disable_model_info_refresh``).

A deployment without an endpoint (no ``api_base``) has the operator's window or none.

A limit on the prompt alone (the operator's ``max_input_tokens``; a learned ``INPUT`` limit: SGLang admission, TGI
``max_input_length``) is not a window: :meth:`DeploymentWindows.input_limit` reads it, and :meth:`DeploymentWindows.route_window`
folds it into the window *routing* uses (``min(window, input limit + output floor)``), never into
the window an output clamp uses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from . import catalog
from .catalog import DeploymentInfo
from .deadline import RequestBudget
from .learned_limits import NONE, LearnedLimits, Limits
from .litellm_model_info import litellm_windows_usable, window_of_id
from .litellm_window_memo import LiteLLMWindowMemo
from .windows import MISS, Miss, WindowCache


class DeploymentWindows:
    """The windows of deployments for one request (or one attempt).

    Args:
        cache: the plugin's window cache (its TTL, failure memory, refresh-ahead, learned windows).
        router: LiteLLM's Router to read its discovered windows from (``None``: none).
        window_ttl_s: the plugin's TTL (seconds); LiteLLM's windows are read only when it is at
            least LiteLLM's refresh interval (see the module docstring).
        learned: limits learned from rejections (``None``: none are used).
        tenant: the hashed tenant whose learned limits apply (``None``: none).
        litellm_windows: LiteLLM's discovered windows remembered for a second across requests
            (:class:`~litellm_kvwarm.litellm_window_memo.LiteLLMWindowMemo`; ``None``: asked each time).
    """

    def __init__(self, cache: WindowCache, router: object = None, *, window_ttl_s: float,
                 learned: LearnedLimits | None = None, tenant: str | None = None,
                 litellm_windows: LiteLLMWindowMemo | None = None):
        self.cache = cache
        self._litellm_windows = litellm_windows
        self._router = router if litellm_windows_usable(window_ttl_s) else None
        self._learned = learned
        self._tenant = tenant

    def learned(self, info: DeploymentInfo) -> Limits:
        """The limits this tenant learned for ``info``'s deployment (tokens; no I/O)."""
        if self._learned is None or info.deployment is None:
            return NONE
        return self._learned.get(self._tenant, info.deployment)

    def input_limit(self, info: DeploymentInfo) -> int | None:
        """A limit on the prompt alone (tokens): the operator's ``max_input_tokens``, else a learned one; ``None`` when
        none."""
        if info.operator_window is not None or info.operator_input is not None:
            return info.operator_input  # the operator's word wins over what a refusal taught
        return self.learned(info).input

    def litellm(self, info: DeploymentInfo) -> int | None:
        """LiteLLM's discovered window of ``info`` (tokens), ``None`` when it has none or is not used."""
        if self._router is None or info.model_id is None:
            return None
        if self._litellm_windows is not None:
            return self._litellm_windows.get(info.model_id, self._router, info.deployment)
        return window_of_id(info.model_id, self._router)

    def cached(self, info: DeploymentInfo) -> int | None | Miss:
        """The window without waiting, sources 1-4 in order; ``None`` when known to be unknown (or
        without an endpoint), :data:`MISS` when only the plugin's own fetch can tell."""
        if info.operator_window is not None or info.deployment is None:
            return info.stated_window
        deployment = info.deployment
        learned = self.learned(info).total
        if learned is not None:
            return learned
        theirs = self.litellm(info)
        if theirs is None:
            held = self.cache.lookup(deployment)
            return info.operator_input if held is None else held
        held = self.cache.peek(deployment)
        if held is not None:
            return held
        self.cache.adopt(deployment, theirs)
        return theirs

    def known(self, info: DeploymentInfo) -> int | None:
        """The window known now (sources 1-4), without any I/O or background refresh; ``None``: none."""
        if info.operator_window is not None or info.deployment is None:
            return info.stated_window
        return self.learned(info).total or self.discovered(info) or info.operator_input

    def discovered(self, info: DeploymentInfo) -> int | None:
        """A discovered window (the plugin's fresh cache, else LiteLLM's), never the operator's; no I/O."""
        held = self.cache.peek(info.deployment) if info.deployment is not None else None
        return held if held is not None else self.litellm(info)

    async def get(self, info: DeploymentInfo, budget: RequestBudget) -> int | None:
        """The window: :meth:`cached`, else the plugin's own fetch within ``budget``
        (:meth:`WindowCache.get`); ``None`` when unknown or without an endpoint. Never raises."""
        window = self.cached(info)
        if window is not MISS or info.deployment is None:
            return window  # type: ignore[return-value]
        fetched = await self.cache.get(info.deployment, budget)
        return info.operator_input if fetched is None else fetched

    async def group(self, infos: Sequence[DeploymentInfo], budget: RequestBudget) -> int | None:
        """The smallest known window of a group's deployments (any may be picked); the misses are
        fetched side by side, the cached ones without an event-loop round trip."""
        known = [self.cached(i) for i in infos]
        missed = [i for i, w in zip(infos, known) if w is MISS]
        if missed:
            fetched = iter(await asyncio.gather(*(self.get(i, budget) for i in missed)))
            known = [next(fetched) if w is MISS else w for w in known]
        return catalog.combine_windows(w for w in known if not isinstance(w, Miss))

    async def route_window(self, infos: Sequence[DeploymentInfo], budget: RequestBudget, output_floor_tokens: int) -> int | None:
        """The window routing uses for a group (tokens): :meth:`group`, lowered to ``input limit +
        output_floor_tokens`` where a deployment has a learned input limit (a prompt over it is refused
        whatever the output). ``None`` when the group's window is unknown."""
        window = await self.group(infos, budget)
        limits = [lim for lim in (self.input_limit(i) for i in infos) if lim is not None]
        if window is None or not limits:
            return window
        return min(window, min(limits) + output_floor_tokens)
