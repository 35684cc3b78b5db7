"""Learning from the server's own counts: a per-model-group correction of the estimates (pure).

The calibrated weights hold for the tokenizer families they were fitted on
(``docs/estimator.md``). A served model outside them — a fine-tune with its own vocabulary, a
small-vocabulary model — can count far more tokens per character than any of them, and then the
routing estimate stays low: warm-ahead never reaches its threshold and the overflow is found by a
400. Every response tells the truth, though: ``usage.prompt_tokens``. For each model group this
keeps the last :attr:`EstimateCorrection.window` ratios truth ÷ estimate of requests that group
served itself (not escalated, not warms), and once :attr:`EstimateCorrection.min_samples` are in:

* routing × the :attr:`EstimateCorrection.routing_quantile` of truth ÷ routing (so the routing
  estimate still leans low: at that quantile, most recent requests stay at or below the truth);
* safe × the largest truth ÷ safe seen (a safe bound must cover what was seen).

Both factors only raise an estimate (≥ 1) and are capped at :attr:`EstimateCorrection.max_factor`:
a group whose estimates run high keeps them (routing is meant to lean low; the clamp counts
exactly before cutting). State is per process and bounded (:attr:`EstimateCorrection.max_groups`
groups, LRU); each LiteLLM worker learns on its own.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, replace

from .tokens import TokenEstimate

__all__ = ["EstimateCorrection", "Factors"]


@dataclass(frozen=True)
class Factors:
    """Multipliers (≥ 1) for one group's estimates, and how many responses they rest on."""

    routing: float = 1.0
    safe: float = 1.0
    samples: int = 0


class EstimateCorrection:
    """Per model group: truth ÷ estimate of recent responses → factors for the next estimates."""

    def __init__(
        self,
        *,
        window: int = 64,
        min_samples: int = 8,
        routing_quantile: float = 0.1,
        max_factor: float = 4.0,
        max_groups: int = 256,
    ) -> None:
        if not 0.0 <= routing_quantile <= 1.0:
            raise ValueError(f"routing_quantile must be within [0, 1], got {routing_quantile}")
        self.window = window
        self.min_samples = min_samples
        self.routing_quantile = routing_quantile
        self.max_factor = max_factor
        self.max_groups = max_groups
        self._ratios: OrderedDict[str, deque[tuple[float, float]]] = OrderedDict()
        self._factors: dict[str, Factors] = {}

    def observe(self, group: str, *, routing: int, safe: int, prompt_tokens: int) -> None:
        """One response of ``group``: its uncorrected estimates and ``usage.prompt_tokens`` (tokens)."""
        if routing <= 0 or safe <= 0 or prompt_tokens <= 0:
            return
        ratios = self._ratios.get(group)
        if ratios is None:
            ratios = self._ratios[group] = deque(maxlen=self.window)
            while len(self._ratios) > self.max_groups:
                evicted, _ = self._ratios.popitem(last=False)
                self._factors.pop(evicted, None)
        else:
            self._ratios.move_to_end(group)
        ratios.append((prompt_tokens / routing, prompt_tokens / safe))
        self._factors[group] = self._compute(ratios)

    def factors(self, group: str) -> Factors:
        """The current factors of ``group`` (1.0 and 1.0 until enough responses were seen)."""
        return self._factors.get(group, Factors())

    def apply(self, group: str, estimate: TokenEstimate) -> TokenEstimate:
        """``estimate`` raised by ``group``'s factors; exact counts (token-id prompts) stay as they are."""
        f = self.factors(group)
        if (f.routing == 1.0 and f.safe == 1.0) or estimate.counts.exact_tokens is not None:
            return estimate
        safe = max(estimate.safe, int(estimate.safe * f.safe + 0.999999))
        routing = min(max(estimate.routing, int(estimate.routing * f.routing)), safe)
        return replace(estimate, safe=safe, routing=routing)

    def _compute(self, ratios: deque[tuple[float, float]]) -> Factors:
        if len(ratios) < self.min_samples:
            return Factors(samples=len(ratios))
        routing = sorted(r for r, _ in ratios)
        at = routing[min(len(routing) - 1, int(self.routing_quantile * len(routing)))]
        worst_safe = max(s for _, s in ratios)
        clamp = lambda v: min(max(v, 1.0), self.max_factor)  # noqa: E731
        return Factors(routing=clamp(at), safe=clamp(worst_safe), samples=len(ratios))
