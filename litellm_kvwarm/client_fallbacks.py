"""The request's own fallback choice, read as LiteLLM's Router reads it (pure: no I/O, no LiteLLM).

A client (or its key's metadata, which LiteLLM 1.108.7's ``proxy/litellm_pre_call_utils.py`` copies
into the body as ``disable_fallbacks``) can choose, per request, where a failed request may go.
LiteLLM 1.108.7 reads that choice in ``router.py`` ``Router.async_function_with_fallbacks``
(``kwargs.pop("disable_fallbacks")``, ``kwargs.get("fallbacks", self.fallbacks)``,
``kwargs.get("context_window_fallbacks", self.context_window_fallbacks)``) and applies it in
``Router.async_function_with_fallbacks_common_utils``, for a ``ContextWindowExceededError``:

1. ``disable_fallbacks is True`` (or the body's ``max_fallbacks`` is ``<= 0``): the original error is raised, no
   fallback at all;
2. ``fallbacks`` in the client-side format (``router_utils/fallback_event_handlers.py``
   ``check_non_standard_fallback_format``: a list of group names, or of ``{"model": name, ...}``
   dicts): those groups are tried, for any error, and the ``context_window_fallbacks`` are never read;
3. else the ``context_window_fallbacks`` (the request's when its body has the key, else the
   router's): their entry for the group, none → the original error; only when they are ``None``
   the generic ``fallbacks`` (the request's else the router's) entry for the group, else ``"*"``.

:func:`permitted_steps` keeps, of the operator's escalation chain, only the groups LiteLLM alone
could send this request to on a context-length error: a proactive escalation, a backstop hop and a
warm never reach a group the client's own choice rules out (a choice can narrow the chain, never
widen it). The choice of the operator alone (the router's own fallbacks) changes nothing here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ABSENT", "FallbackChoice", "client_side_format", "operator_lists", "permitted_steps"]


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


#: A body field the client did not send (LiteLLM tells a missing key from ``null``).
ABSENT: Any = _Absent()


@dataclass(frozen=True)
class FallbackChoice:
    """The fallback fields of one request body as sent: ``disabled`` (``disable_fallbacks is True``),
    ``fallbacks`` and ``context_window_fallbacks`` (:data:`ABSENT` when the body has no such key)."""

    disabled: bool = False
    fallbacks: object = ABSENT
    context_window_fallbacks: object = ABSENT

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> FallbackChoice:
        return cls(disabled=data.get("disable_fallbacks") is True or _no_fallback_depth(data.get("max_fallbacks")),
                   fallbacks=data.get("fallbacks", ABSENT), context_window_fallbacks=data.get("context_window_fallbacks", ABSENT))

    @property
    def narrows(self) -> bool:
        """The body carries any fallback choice of its own."""
        return self.disabled or self.fallbacks is not ABSENT or self.context_window_fallbacks is not ABSENT


def _no_fallback_depth(max_fallbacks: object) -> bool:
    """A request's own ``max_fallbacks`` that allows no fallback at all: LiteLLM 1.108.7 keeps the body's value
    (``Router.async_function_with_fallbacks_common_utils`` sets the router's only when the key is missing) and
    ``run_async_fallback`` raises the original error at once when ``fallback_depth (0) >= max_fallbacks``: any number
    ``<= 0`` (``false`` included, as Python compares it)."""
    return isinstance(max_fallbacks, (int, float)) and max_fallbacks <= 0


def operator_lists(data: Mapping[str, Any], router_cwf: object, router_fallbacks: object) -> tuple[object, object]:
    """``(context_window_fallbacks, fallbacks)`` the operator set for this request: the caller's key's or team's
    ``router_settings`` where they set one (LiteLLM 1.108.7 carries them as ``data["router_settings_override"]`` and
    ``route_llm_request`` applies each that is not ``None`` and not already in the body), else the router's. A key
    whose ``router_settings`` give ``context_window_fallbacks: []`` escalates nowhere through LiteLLM alone; one naming
    ``backup`` escalates there (a breaker's proxies: the plugin read only the router's lists, then wrote its own into
    the body, which shut the key's out)."""
    override = data.get("router_settings_override")
    if not isinstance(override, Mapping):
        return router_cwf, router_fallbacks
    cwf, generic = override.get("context_window_fallbacks"), override.get("fallbacks")
    return (router_cwf if cwf is None else cwf), (router_fallbacks if generic is None else generic)


def client_side_format(fallbacks: object) -> bool:
    """LiteLLM 1.108.7's ``check_non_standard_fallback_format``: a non-empty list of strings, or of dicts
    of which one has a LiteLLM parameter (``model`` here, the one that names a group) that is not a list."""
    if not isinstance(fallbacks, list) or not fallbacks:
        return False
    if all(isinstance(item, str) for item in fallbacks):
        return True
    return all(isinstance(item, dict) for item in fallbacks) and any(
        "model" in item and not isinstance(item["model"], list) for item in fallbacks)


def _named(entries: object) -> list[object]:
    """The groups one fallback list names (``"g"`` or ``{"model": "g", ...}`` entries). A string names none: LiteLLM
    iterates its characters (see :func:`~litellm_kvwarm.chain.escalation_chain`)."""
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        return []
    return [e.get("model") if isinstance(e, Mapping) else e for e in entries]


def _entry(fallbacks: object, source: str, star: bool) -> object:
    """The list a standard-format ``[{group: [...]}, ...]`` gives ``source`` (``"*"`` when ``star`` and
    none names it); ``None`` when none."""
    if not isinstance(fallbacks, Sequence) or isinstance(fallbacks, str):
        return None
    maps = [item for item in fallbacks if isinstance(item, Mapping)]
    for item in maps:
        if source in item:
            return item[source]
    return next((item["*"] for item in maps if "*" in item), None) if star else None


def permitted_steps(choice: FallbackChoice, source: str, chain: Sequence[str], operator_cwf: object = None,
                    operator_fallbacks: object = None) -> tuple[str, ...]:
    """The groups of ``chain`` (the operator's order) that LiteLLM alone could send a request of
    ``source`` that overflowed to, given the request's own ``choice`` (see the module docstring).
    No choice of its own: all of ``chain``. ``operator_cwf``/``operator_fallbacks``: the router's
    ``context_window_fallbacks`` / ``fallbacks``, read only where the request's own replace one of them."""
    if choice.disabled:
        return ()
    if not choice.narrows:
        return tuple(chain)
    if choice.fallbacks is not ABSENT and client_side_format(choice.fallbacks):
        # a ``{"model": g, "messages": ...}`` entry is another request, which LiteLLM alone sends after the 400: not the plugin's
        names = [e if isinstance(e, str) else e.get("model") if set(e) == {"model"} else None for e in choice.fallbacks]  # type: ignore[attr-defined]
        return tuple(g for g in chain if g in names)
    own_cwf = choice.context_window_fallbacks is not ABSENT
    cwf = choice.context_window_fallbacks if own_cwf else operator_cwf
    if cwf is not None:
        # the context-window list decides; a request's own list only narrows (a group of its own is not the operator's)
        return tuple(g for g in chain if g in _named(_entry(cwf, source, False))) if own_cwf else tuple(chain)
    # the request's own null context-window list: LiteLLM alone reads the generic fallbacks (the request's, else the router's)
    names = _named(_entry(operator_fallbacks if choice.fallbacks is ABSENT else choice.fallbacks, source, True))
    return tuple(g for g in chain if g in names)
