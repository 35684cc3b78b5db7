"""Learning from the server's own counts: a per-(model group, tenant) correction of the estimates (pure).

The calibrated weights hold for the tokenizer families they were fitted on
(``docs/estimator.md``). A served model outside them — a fine-tune with its own vocabulary, a
small-vocabulary model — or a tenant whose text is unlike the calibration data (a script or a
format the weights never saw) can count far more tokens per character, and then the routing
estimate stays low: warm-ahead never reaches its threshold and the overflow is found by a 400.
Every response tells the truth, though: ``usage.prompt_tokens``. For each (model group, tenant)
pair this keeps the last :attr:`EstimateCorrection.window` ratios truth ÷ estimate of requests
that group served itself (not escalated, not warms), and once
:attr:`EstimateCorrection.min_samples` are in:

* routing × the :attr:`EstimateCorrection.routing_quantile` of truth ÷ routing (so the routing
  estimate still leans low: at that quantile, most recent requests stay at or below the truth);
* safe × the largest truth ÷ safe seen (a safe bound must cover what was seen).

Both factors only raise an estimate (≥ 1) and are capped at :attr:`EstimateCorrection.max_factor`:
estimates that run high are kept (routing is meant to lean low; the clamp counts exactly before
cutting).

**Only prompts of at least** :attr:`EstimateCorrection.min_prompt_tokens` (256) **are learned from.**
A short prompt's truth is mostly what the server adds around it (a template's fixed tokens, a default
system prompt), which no per-character weight carries over to a long one: a breaker's tenant sent
ten ``"hi"`` requests, learned truth ÷ routing ≈ 3.4, and its next 14k-token prompt, which fits a
16k window and which LiteLLM alone served on fast, was routed to slow as 47k tokens. At 256 tokens a
25-token preamble moves a ratio by 10%.

**Why per tenant.** A factor raises estimates, and raised estimates escalate requests to the
slow model and fire warms. Learned per group, 64 requests from one team whose text the
estimator under-counts pushed the group's factors to the cap, and every other tenant's requests
were escalated and warmed from then on. Keyed by (group, tenant), a tenant's traffic can only
change its own estimates, and a new tenant starts uncorrected (the calibrated estimate, which
is what LiteLLM alone would get routed on). A robust group-wide statistic (a median or trimmed
mean over tenants) was not chosen: it still moves with whoever sends most of a group's traffic
(one tenant, or a few sharing one key), it would correct nobody in the common case that only
one tenant's text is unusual (that tenant keeps overflowing), and its guarantee would depend on
how many tenants there are. The cost of per tenant: each tenant needs its own
:attr:`~EstimateCorrection.min_samples` responses before its estimates move, and a served
model that under-counts for everyone is learned once per tenant.

Tenants are opaque keys: callers pass a keyed hash (:func:`litellm_kvwarm.identity.hash_key`),
never a raw team, user or key id, and nothing here stores anything else. State is per process
and bounded: at most :attr:`EstimateCorrection.max_pairs` pairs (least recently observed
dropped: a ``cachetools.LRUCache``), each a ring of :attr:`EstimateCorrection.window` float
pairs (≈1 kB). Each LiteLLM worker learns on its own. :meth:`EstimateCorrection.summary` reports per group, without
tenants, the largest factors and how many tenants are corrected, for ``/metrics``.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, replace

from cachetools import LRUCache

from .group_factors import GroupFactors
from .tokens import TokenEstimate

__all__ = ["DEFAULT_MAX_PAIRS", "EstimateCorrection", "Factors", "GroupSummary"]

#: (model group, tenant) pairs kept per process (least recently observed dropped).
DEFAULT_MAX_PAIRS = 4096


@dataclass(frozen=True)
class Factors:
    """Multipliers (≥ 1) for one (group, tenant)'s estimates, and how many responses they rest on."""

    routing: float = 1.0
    safe: float = 1.0
    samples: int = 0

    @property
    def corrects(self) -> bool:
        """Whether these factors raise an estimate (either factor above 1)."""
        return self.routing > 1.0 or self.safe > 1.0


@dataclass(frozen=True)
class GroupSummary:
    """One model group across its tenants, for metrics: the largest routing and safe factors
    (1.0 when none is corrected) and how many tenants have a factor above 1."""

    routing: float = 1.0
    safe: float = 1.0
    tenants: int = 0


class _Ratios:
    """The last ``window`` (truth ÷ routing, truth ÷ safe) of one pair, in two float rings."""

    __slots__ = ("routing", "safe", "count", "next")

    def __init__(self, window: int) -> None:
        self.routing = array("d", bytes(8 * window))
        self.safe = array("d", bytes(8 * window))
        self.count = 0
        self.next = 0

    def add(self, routing: float, safe: float) -> None:
        self.routing[self.next] = routing
        self.safe[self.next] = safe
        self.next = (self.next + 1) % len(self.routing)
        self.count = min(self.count + 1, len(self.routing))


class _Pairs(LRUCache):
    """(group, tenant) → :class:`_Ratios`, at most ``maxsize`` pairs, least recently used
    dropped; ``on_evict(pair)`` is called for each pair dropped to make room. Only
    :meth:`EstimateCorrection.observe` reads or writes it, so "used" means "observed"."""

    def __init__(self, maxsize: int, on_evict: Callable[[tuple[str, str]], None]) -> None:
        super().__init__(maxsize)
        self._on_evict = on_evict

    def popitem(self) -> tuple[tuple[str, str], _Ratios]:
        pair, ratios = super().popitem()
        self._on_evict(pair)
        return pair, ratios


class EstimateCorrection:
    """Per (model group, tenant): truth ÷ estimate of recent responses → factors for the next estimates.

    Raises ``ValueError`` on construction when ``routing_quantile`` is outside [0, 1] or
    ``window`` / ``max_pairs`` is below 1.
    """

    def __init__(
        self,
        *,
        window: int = 64,
        min_samples: int = 8,
        routing_quantile: float = 0.1,
        max_factor: float = 4.0,
        max_pairs: int = DEFAULT_MAX_PAIRS,
        min_prompt_tokens: int = 256,
    ) -> None:
        if not 0.0 <= routing_quantile <= 1.0:
            raise ValueError(f"routing_quantile must be within [0, 1], got {routing_quantile}")
        if window < 1 or max_pairs < 1:
            raise ValueError(f"window and max_pairs must be at least 1, got {window} and {max_pairs}")
        self.window = window
        self.min_samples = min_samples
        self.routing_quantile = routing_quantile
        self.max_factor = max_factor
        self.max_pairs = max_pairs
        self.min_prompt_tokens = max(1, min_prompt_tokens)
        self._ratios = _Pairs(max_pairs, self._evicted)
        self._evicted_groups: list[str] = []  # groups of pairs dropped by the current observe()
        self._factors: dict[tuple[str, str], Factors] = {}
        # group -> its tenants whose factors raise an estimate, with their largest factors (for summary()).
        self._corrected: dict[str, GroupFactors] = {}

    def observe(self, group: str, tenant: str | None, *, routing: int, safe: int, prompt_tokens: int) -> tuple[str, ...]:
        """One response of ``group`` for ``tenant`` (a hash): its uncorrected estimates and
        ``usage.prompt_tokens`` (tokens). Ignored without a tenant, with an estimate ≤ 0, or with
        fewer than :attr:`min_prompt_tokens` prompt tokens (see the module docstring).

        Returns the groups whose :meth:`summary` may have changed: ``group``, and the group of
        a pair dropped to make room (empty when the response was ignored).
        """
        if not tenant or routing <= 0 or safe <= 0 or prompt_tokens < self.min_prompt_tokens:
            return ()
        pair = (group, tenant)
        changed = [group]
        ratios = self._ratios.get(pair)  # a hit marks the pair most recently used
        if ratios is None:
            self._evicted_groups.clear()
            ratios = self._ratios[pair] = _Ratios(self.window)  # may drop the least recently used pair
            changed.extend(dict.fromkeys(g for g in self._evicted_groups if g != group))
        ratios.add(prompt_tokens / routing, prompt_tokens / safe)
        self._set(pair, self._compute(ratios))
        return tuple(changed)

    def factors(self, group: str, tenant: str | None) -> Factors:
        """The current factors of ``tenant`` in ``group`` (1.0 and 1.0 until enough responses were
        seen, and always for ``None``)."""
        if not tenant:
            return Factors()
        return self._factors.get((group, tenant), Factors())

    def apply(self, group: str, tenant: str | None, estimate: TokenEstimate) -> TokenEstimate:
        """``estimate`` raised by the factors of ``tenant`` in ``group``; exact counts (token-id
        prompts) stay as they are, and so does every estimate of another tenant or of ``None``."""
        f = self.factors(group, tenant)
        if not f.corrects or estimate.counts.exact_tokens is not None:
            return estimate
        safe = max(estimate.safe, int(estimate.safe * f.safe + 0.999999))
        routing = min(max(estimate.routing, int(estimate.routing * f.routing)), safe)
        return replace(estimate, safe=safe, routing=routing)

    def summary(self, group: str) -> GroupSummary:
        """``group`` across its tenants (no tenant named): the largest routing and safe factors
        and the number of tenants with a factor above 1. O(1) amortized (:class:`GroupFactors`)."""
        corrected = self._corrected.get(group)
        if not corrected:
            return GroupSummary()
        routing, safe = corrected.largest()
        return GroupSummary(routing=routing or 1.0, safe=safe or 1.0, tenants=len(corrected))

    def __len__(self) -> int:
        """(group, tenant) pairs held."""
        return len(self._ratios)

    def _evicted(self, pair: tuple[str, str]) -> None:
        self._set(pair, None)
        self._evicted_groups.append(pair[0])

    def _set(self, pair: tuple[str, str], factors: Factors | None) -> None:
        group, tenant = pair
        if factors is None:
            self._factors.pop(pair, None)
        else:
            self._factors[pair] = factors
        if factors is not None and factors.corrects:
            corrected = self._corrected.get(group)
            if corrected is None:
                corrected = self._corrected[group] = GroupFactors()
            corrected.set(tenant, factors)
            return
        corrected = self._corrected.get(group)
        if corrected is not None and corrected.discard(tenant) and not corrected:
            del self._corrected[group]

    def _compute(self, ratios: _Ratios) -> Factors:
        n = ratios.count
        if n < self.min_samples:
            return Factors(samples=n)
        routing = sorted(ratios.routing[:n])
        at = routing[min(n - 1, int(self.routing_quantile * n))]
        worst_safe = max(ratios.safe[:n])
        clamp = lambda v: min(max(v, 1.0), self.max_factor)  # noqa: E731
        return Factors(routing=clamp(at), safe=clamp(worst_safe), samples=n)
