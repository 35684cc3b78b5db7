"""Whether a request's session gets a warm now: the guards, in order, each with its own outcome.

Order (each outcome is a metric label): switched off → below the threshold (a fraction of the
source group's window) → target unknown (not in the model list, or no discovered window for
its served model) → the caller's key may not use the target → no session to scope the cooldown
→ cooldown running → at the concurrency bound → fired.

The cooldown key is one per (tenant, session, target, growth step): with
``warm_rewarm_step`` > 0 a session that has grown by that fraction of the window since its last
warm may warm again within the cooldown, because a re-warm prefills only the new tokens (the
earlier warm is cached); ``0`` keeps strictly one warm per session per cooldown.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import identity
from .config import Settings
from .cooldown import CooldownStore
from .meta import AFFINITY_KEY, WARM_MARKER
from .warm import WarmOutcome, WarmRunner, warm_request

logger = logging.getLogger("litellm_kvwarm")


@dataclass(frozen=True)
class WarmCandidate:
    """A request that stays on ``source`` whose group has an escalation ``target``. Tokens:
    ``tokens`` is the routing estimate (or exact count), windows are ``max_model_len``;
    ``growth_tokens`` is always the routing estimate, so the re-warm step is measured on one
    scale even when some turns were counted exactly (mixing them once made buckets go backwards)."""

    target: str
    target_known: bool
    target_window: int | None
    tokens: int
    source_window: int
    session: identity.Session | None
    growth_tokens: int | None = None  # what the re-warm step is measured on (default: tokens)


def cooldown_key(session: identity.Session, target: str, tokens: int, source_window: int, step: float) -> str:
    """Tenant-scoped cooldown key of a warm (hashes only)."""
    bucket = int(tokens // (step * source_window)) if step > 0 else 0
    return identity.scoped_key(f"warm:{target}:{bucket}", session)


class WarmGate:
    """Applies the guards and hands fired warms to the runner.

    Args:
        settings: plugin settings.
        cooldown: returns the cooldown store (built lazily by the services).
        runner: returns the warm runner.
        count: records an outcome for a target (metrics).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        cooldown: Callable[[], CooldownStore],
        runner: Callable[[], WarmRunner],
        count: Callable[[WarmOutcome, str], None],
    ):
        self._settings = settings
        self._cooldown = cooldown
        self._runner = runner
        self._count = count

    async def consider(
        self, candidate: WarmCandidate, data: Mapping[str, Any], may_use: Callable[[], Awaitable[bool]]
    ) -> WarmOutcome:
        """Run the guards for ``candidate``; fire the warm built from ``data`` if they pass."""
        outcome = await self._guard(candidate, may_use)
        if outcome is WarmOutcome.FIRED:
            session = candidate.session
            assert session is not None
            metadata: dict[str, Any] = {WARM_MARKER: True, "session_id": session.session_id}
            request_meta = data.get("metadata")
            if isinstance(request_meta, Mapping) and AFFINITY_KEY in request_meta:
                metadata[AFFINITY_KEY] = request_meta[AFFINITY_KEY]
            if not self._runner().submit(warm_request(data, target=candidate.target, metadata=metadata)):
                outcome = WarmOutcome.SKIPPED_BUSY
        self._count(outcome, candidate.target)
        if outcome is WarmOutcome.FIRED:
            logger.info(
                "[KV-WARM] fired: est≈%dtok ≥ %.0f%% of window %d → warming %r (max_tokens=1)",
                candidate.tokens, self._settings.warm_threshold * 100, candidate.source_window, candidate.target,
            )
        elif outcome is not WarmOutcome.SKIPPED_BELOW_THRESHOLD:
            logger.info(
                "[KV-WARM] %s: est≈%dtok, window %d, target %r",
                outcome.value, candidate.tokens, candidate.source_window, candidate.target,
            )
        return outcome

    async def _guard(self, c: WarmCandidate, may_use: Callable[[], Awaitable[bool]]) -> WarmOutcome:
        s = self._settings
        if not s.warm_ahead:
            return WarmOutcome.SKIPPED_DISABLED
        if c.tokens < s.warm_threshold * c.source_window:
            return WarmOutcome.SKIPPED_BELOW_THRESHOLD
        if not c.target_known or c.target_window is None:
            return WarmOutcome.SKIPPED_UNKNOWN_MODEL
        if not await may_use():
            return WarmOutcome.SKIPPED_FORBIDDEN
        if c.session is None:
            return WarmOutcome.SKIPPED_NO_SESSION
        growth = c.growth_tokens if c.growth_tokens is not None else c.tokens
        key = cooldown_key(c.session, c.target, growth, c.source_window, s.warm_rewarm_step)
        if not await self._cooldown().acquire(key, s.warm_cooldown_s):
            return WarmOutcome.SKIPPED_COOLDOWN
        return WarmOutcome.FIRED
