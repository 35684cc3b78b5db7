"""A model group's deployments as the request path reads them, parsed once per content (pure).

:class:`GroupFacts`: the group's well-formed deployments and their LiteLLM providers.
:class:`GroupMemo`: the facts of each group name kept until anything they are read from changes,
so a request does not re-parse every ``model_list`` entry of its group (and of its escalation
steps) on every call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .catalog import DeploymentInfo

__all__ = ["GroupFacts", "GroupMemo"]


@dataclass(frozen=True)
class GroupFacts:
    """One model group's well-formed deployments and each one's LiteLLM provider."""

    infos: tuple[DeploymentInfo, ...]
    providers: tuple[str | None, ...]

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
