"""A model group's deployments as the request path reads them, parsed once per content (pure).

:class:`GroupFacts`: the group's well-formed deployments and their LiteLLM providers.
:class:`GroupMemo`: the facts of each group name kept until anything they are read from changes,
so a request does not re-parse every ``model_list`` entry of its group (and of its escalation
steps) on every call. :func:`target_groups`: the groups escalations reach (session pinning), and
:class:`TargetGroupsMemo`, the same remembered for a second.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .catalog import DeploymentInfo
from .chain import escalation_targets
from .router_view import RouterView

__all__ = ["GroupFacts", "GroupMemo", "TargetGroupsMemo", "target_groups"]


@dataclass(frozen=True)
class GroupFacts:
    """One model group's well-formed deployments and each one's LiteLLM provider; ``messages_bridged``:
    an Anthropic Messages request to the group may be bridged to chat (a deployment without a native
    ``/v1/messages``: its routing estimate counts what the bridge sends, :mod:`.token_bridge`);
    ``responses_bridged``: a Responses request to the group may reach vLLM (natively or bridged to chat:
    its routing estimate counts only the items vLLM renders, :mod:`.token_responses_items`)."""

    infos: tuple[DeploymentInfo, ...]
    providers: tuple[str | None, ...]
    messages_bridged: bool = True
    responses_bridged: bool = True

    def bridged(self, kind: str | None) -> bool:
        """The ``bridged`` flag of :func:`~litellm_kvwarm.tokens.estimate_request` for a ``kind`` request."""
        return self.responses_bridged if kind == "responses" else self.messages_bridged

    @property
    def served_models(self) -> tuple[str, ...]:
        return tuple(i.deployment.served_model for i in self.infos if i.deployment is not None)


class GroupMemo:
    """:class:`GroupFacts` per group name, rebuilt when anything they are read from changed: the
    entries' ``litellm_params`` fields ``model``, ``api_base``, ``api_key``, ``custom_llm_provider``
    and their ``model_info`` (``max_input_tokens``, ``id``). Bounded by the model list's group names."""

    def __init__(self) -> None:
        self._by_group: dict[str, tuple[tuple[object, ...], GroupFacts]] = {}

    @staticmethod
    def _key(entries: list[Mapping[str, Any]]) -> tuple[object, ...]:
        key: list[object] = []
        for e in entries:
            params, info = e["litellm_params"], e.get("model_info")
            key += (params.get("model"), params.get("api_base"), params.get("api_key"), params.get("custom_llm_provider"))
            key += (info.get("max_input_tokens"), info.get("id")) if isinstance(info, Mapping) else (None, None)
        return tuple(key)

    def get(self, name: str, entries: list[Mapping[str, Any]], build: Callable[[], GroupFacts]) -> GroupFacts:
        """The memoised facts of ``entries`` (the group's entries now), or ``build()``'s."""
        key = self._key(entries)
        hit = self._by_group.get(name)
        if hit is not None and hit[0] == key:
            return hit[1]
        facts = build()
        self._by_group[name] = (key, facts)
        return facts


def target_groups(router: object, overrides: Mapping[str, str]) -> set[str]:
    """Every group some group of the model list escalates to (one pass: :func:`escalation_targets`)."""
    view = RouterView(router)
    return escalation_targets(view.names(), overrides=overrides, context_window_fallbacks=view.context_window_fallbacks())


class TargetGroupsMemo:
    """:func:`target_groups` of one router, remembered for ``ttl_s`` seconds (``clock``: monotonic
    seconds). Session pinning asks it on every routing decision of a group with two or more healthy
    deployments; the answer moves only when the operator changes the model list or the fallbacks,
    and a stale answer for a second only decides whether a session is pinned to one replica."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, ttl_s: float = 1.0):
        self._clock, self._ttl_s = clock, ttl_s
        self._held: tuple[object, object, float, frozenset[str]] | None = None

    def get(self, router: object, overrides: Mapping[str, str]) -> frozenset[str]:
        now, held = self._clock(), self._held
        if held is not None and held[0] is router and held[1] is overrides and now < held[2]:
            return held[3]
        groups = frozenset(target_groups(router, overrides))
        self._held = (router, overrides, now + self._ttl_s, groups)
        return groups
