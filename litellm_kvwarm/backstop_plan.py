"""What the pre-call hook arms for one request's backstop (:class:`BackstopPlan`), carried in its
``metadata`` as plain JSON types and read back on every hop (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BackstopPlan"]


@dataclass(frozen=True)
class BackstopPlan:
    """What the pre-call hook armed for one request (stored in ``metadata``; plain JSON types).

    ``source``: the group the request was sent to; ``chain``: the groups it may escalate to, in
    the operator's order (``context_window_fallbacks`` after ``source``), each in the model list
    and allowed for the caller's key, and not ruled out by the client's own list; ``requested``:
    the output budget the server will use (``max_completion_tokens``, else ``max_tokens``;
    tokens) or ``None`` when the client sent none; ``own_generic_fallbacks``: the plugin set
    ``fallbacks`` itself (the operator configured none for this group); ``step_output``: the
    output budget a step's own fallback entry sets (``{"model": "slow", "max_tokens": 512}``),
    which wins over ``requested`` on that step's hop; ``step_windows``: the window (tokens) the
    pre-call hook knew for each step, where it knew one; ``walks_chain``: the request was escalated
    ahead of time (``source`` is a step of another group's chain): LiteLLM alone would be walking that
    group's ``context_window_fallbacks``, which moves on to the next step whatever error a step
    answers, so a non-context failure here goes on along ``chain`` too; ``generic_retry``: the generic
    ``fallbacks`` the plugin set hold a same-group entry (the retry slot on ``source``), so a same-group hop
    after a non-context error may be the plugin's own; without it such a hop is LiteLLM's own failover
    inside the group (``order`` levels, ``enable_weighted_failover``), which the plugin leaves alone."""

    source: str
    chain: tuple[str, ...]
    requested: int | None
    own_generic_fallbacks: bool
    step_output: Mapping[str, int] = field(default_factory=dict)
    step_windows: Mapping[str, int] = field(default_factory=dict)
    walks_chain: bool = False
    generic_retry: bool = False

    @property
    def target(self) -> str | None:
        """The first escalation group, or ``None``."""
        return self.chain[0] if self.chain else None

    def step_holding(self, prompt_tokens: int) -> str | None:
        """The first step whose known window holds ``prompt_tokens`` plus the whole output budget that step
        would be asked for (its own entry's, else the client's); ``None`` when the client sent no budget or
        no step is known to hold it. Where one does, LiteLLM alone answers an over-budget request with that
        step and the full budget (``context_window_fallbacks`` after the source refused it), or the source
        trims it itself (vLLM ≥ 0.32 clamps silently): the plugin cuts nothing then."""
        for step in self.chain:
            out = self.step_output.get(step, self.requested)
            window = self.step_windows.get(step)
            if out is not None and window is not None and prompt_tokens + out <= window:
                return step
        return None

    def to_dict(self) -> dict[str, Any]:
        """The plan as plain JSON types (what :func:`dataclasses.asdict` gives, built by hand: it
        is written into every request's metadata, and ``asdict`` deep-copies recursively)."""
        return {
            "source": self.source,
            "chain": list(self.chain),
            "requested": self.requested,
            "own_generic_fallbacks": self.own_generic_fallbacks,
            "step_output": dict(self.step_output),
            "step_windows": dict(self.step_windows),
            "walks_chain": self.walks_chain,
            "generic_retry": self.generic_retry,
        }

    @classmethod
    def from_dict(cls, raw: object) -> BackstopPlan | None:
        if not isinstance(raw, Mapping):
            return None
        try:
            chain = raw.get("chain") or ()
            requested = raw.get("requested")
            return cls(
                source=str(raw["source"]),
                chain=tuple(str(g) for g in chain if isinstance(g, str)),
                requested=requested if isinstance(requested, int) and not isinstance(requested, bool) else None,
                own_generic_fallbacks=bool(raw.get("own_generic_fallbacks")),
                step_output=_positive_ints(raw.get("step_output")),
                step_windows=_positive_ints(raw.get("step_windows")),
                walks_chain=raw.get("walks_chain") is True,
                generic_retry=raw.get("generic_retry") is True,
            )
        except (KeyError, TypeError, AttributeError):
            return None


def _positive_ints(raw: object) -> dict[str, int]:
    """``{group: positive int}`` of a metadata mapping (anything else: empty)."""
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): v for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}
