"""Fitting the linear safe and routing estimates (pure: arrays in, weights out).

Both are weighted quantile regressions solved as one linear program each (HiGHS, via
``scipy.optimize.linprog``): minimise Σ cᵢ·(τ·uᵢ⁺ + (1−τ)·uᵢ⁻) subject to
X·w + u⁺ − u⁻ = y, w ≥ 0, u ≥ 0, with cᵢ = 1/yᵢ so that every request weighs by its
*relative* error (a 100-token and a 100k-token request count alike). Non-negative weights
keep the estimate monotone: more text never lowers it.

Weights stay within :data:`WEIGHT_CAPS` (a character costs at most its UTF-8 bytes).

* safe: τ = :data:`SAFE_QUANTILE`, weights at least the given per-class floors (:mod:`.floors`: what the
  family's tokenizer spends on each non-ASCII class, or the byte-level bound where the data is
  thin), then two margins measured on the fit half: the weights
  are scaled by the :data:`SAFE_LARGE_QUANTILE` of truth/estimate over requests of at least
  :data:`LARGE_TOKENS` tokens, then the constant is raised by the :data:`SAFE_ALL_QUANTILE`
  of the remaining shortfall over all requests.
* routing: aims each content kind's median routing ÷ truth at :data:`ROUTING_MEDIAN_AIM`. Every
  kind weighs alike (each request's weight is 1 / its kind's request count, so 70 agent log
  requests count as much as 4,000 ShareGPT prose ones), and each kind gets its own quantile: all
  start at :data:`ROUTING_QUANTILE`; after each fit a kind whose median on the fit half is below
  the aim gets a higher quantile (one above it a lower one), ``τ_k += ROUTING_GAIN · (aim −
  median_k)``, for :data:`ROUTING_ROUNDS` rounds. Weights at least the given routing floors, then
  scaled down if needed so that at least :data:`ROUTING_AT_OR_BELOW` of the fit half are at or
  below the truth. (A single low quantile over all requests let a kind sit at 0.63–0.89 so that
  another stayed below the truth; issue 14.)
"""

from __future__ import annotations

import numpy as np

__all__ = ["ENGLISH_SAFE_MARGIN", "WEIGHT_CAPS", "fit_routing", "fit_safe", "quantile_regression"]

SAFE_QUANTILE = 0.999
SAFE_LARGE_QUANTILE = 0.999
SAFE_ALL_QUANTILE = 0.998
LARGE_TOKENS = 1000
ROUTING_QUANTILE = 0.3
ROUTING_MEDIAN_AIM = 0.95
ROUTING_GAIN = 2.0
ROUTING_ROUNDS = 6
ROUTING_QUANTILE_BOUNDS = (0.05, 0.95)
ROUTING_AT_OR_BELOW = 0.82
#: Upper bounds of the weights (tokens per character), from the encoding: a byte-level BPE
#: token (SentencePiece with byte fallback alike) covers at least one UTF-8 byte, so a character
#: never costs more tokens than its bytes. Without them the high-quantile program buys coverage
#: of one costly language with impossible weights on unrelated classes (2.3 tokens per ASCII
#: punctuation mark), which over-estimates every JSON-heavy request.
WEIGHT_CAPS = {
    "letters": 1.0, "digits": 1.0, "spaces": 1.0, "indent": 1.0, "breaks": 1.0, "punct": 1.0, "latin_ext": 2.0,
    "cyrillic": 2.0, "utf8_2": 2.0, "gen_punct": 3.0, "indic": 3.0, "symbols": 3.0, "cjk": 3.0, "utf8_3": 3.0, "utf8_4": 4.0, "dense": 1.0,
    "indented_lines": 2.0,  # an indented line has at least one space and its break
}
#: Extra factor on the English-regime safe weights: fitted on the English requests only, the bound
#: is tight enough that the held-out half needs a few percent the fit half did not show.
ENGLISH_SAFE_MARGIN = 1.06


def _caps(p: int) -> list[float | None]:
    from ...tokens import FEATURES

    if p != len(FEATURES):
        return [None] * p
    return [WEIGHT_CAPS.get(name) for name in FEATURES]


def quantile_regression(x: np.ndarray, y: np.ndarray, tau: float | np.ndarray, floors: np.ndarray | None = None,
                        sample_weight: np.ndarray | None = None) -> np.ndarray:
    """Weights ``floors`` (default 0) ≤ w ≤ :data:`WEIGHT_CAPS` minimising the relative pinball
    loss of x·w at quantile ``tau`` (one for all requests, or one per request) (each request's
    loss times ``sample_weight``, default 1)."""
    from scipy import sparse
    from scipy.optimize import linprog

    n, p = x.shape
    scale = np.maximum(y, 1.0) / (1.0 if sample_weight is None else np.asarray(sample_weight, dtype=float))
    tau = np.broadcast_to(np.asarray(tau, dtype=float), (n,))
    cost = np.concatenate([np.zeros(p), tau / scale, (1 - tau) / scale])
    eye = sparse.identity(n, format="csr")
    rows = np.maximum(y, 1.0)
    a_eq = sparse.hstack([sparse.csr_matrix(x / rows[:, None]), eye, -eye], format="csr")
    lower = np.zeros(p) if floors is None else floors
    caps = _caps(p)
    bounds = [(float(v), None if c is None else max(float(v), c)) for v, c in zip(lower, caps)] + [(0, None)] * (2 * n)
    result = linprog(cost, A_eq=a_eq, b_eq=y / rows, bounds=bounds, method="highs")
    if not result.success:
        raise RuntimeError(f"quantile regression (tau={tau}) failed: {result.message}")
    return np.asarray(result.x[:p])


def fit_safe(x: np.ndarray, y: np.ndarray, margin: float = 1.0, floors: np.ndarray | None = None,
             sample_weight: np.ndarray | None = None) -> np.ndarray:
    """Safe weights (see module docstring), times ``margin``, each at least ``floors`` (default 0);
    ``x[:, 0]`` must be the constant feature."""
    floors = np.zeros(x.shape[1]) if floors is None else np.asarray(floors, dtype=float)
    w = np.maximum(quantile_regression(x, y, SAFE_QUANTILE, floors, sample_weight) * margin, floors)
    large = y >= LARGE_TOKENS
    if large.any():
        ratio = y[large] / np.maximum(x[large] @ w, 1e-9)
        w = w * max(1.0, float(np.quantile(ratio, SAFE_LARGE_QUANTILE)))
    shortfall = y - np.ceil(x @ w)
    w[0] += max(0.0, float(np.quantile(shortfall, SAFE_ALL_QUANTILE)))
    return w


def fit_routing(x: np.ndarray, y: np.ndarray, floors: np.ndarray | None = None,
                kinds: np.ndarray | None = None) -> np.ndarray:
    """Routing weights (see module docstring), each at least ``floors`` (default 0) before the
    final scaling; ``kinds``: each request's content kind (default: all one kind)."""
    groups, index, sizes = np.unique(np.zeros(len(y)) if kinds is None else np.asarray(kinds), return_inverse=True,
                                     return_counts=True)
    weight = len(y) / len(groups) / sizes[index]
    taus = np.full(len(groups), ROUTING_QUANTILE)
    for round_ in range(ROUTING_ROUNDS + 1):
        w = quantile_regression(x, y, taus[index], floors, weight)
        ratio = np.floor(x @ w) / np.maximum(y, 1.0)
        if round_ < ROUTING_ROUNDS:
            medians = np.array([np.median(ratio[index == g]) for g in range(len(groups))])
            taus = np.clip(taus + ROUTING_GAIN * (ROUTING_MEDIAN_AIM - medians), *ROUTING_QUANTILE_BOUNDS)
    needed = float(np.quantile(ratio, ROUTING_AT_OR_BELOW))
    if needed > 1.0:
        w = w / needed
    return w
