"""Fitting the linear safe and routing estimates (pure: arrays in, weights out).

Both are weighted quantile regressions solved as one linear program each (HiGHS, via
``scipy.optimize.linprog``): minimise Σ cᵢ·(τ·uᵢ⁺ + (1−τ)·uᵢ⁻) subject to
X·w + u⁺ − u⁻ = y, w ≥ 0, u ≥ 0, with cᵢ = 1/yᵢ so that every request weighs by its
*relative* error (a 100-token and a 100k-token request count alike). Non-negative weights
keep the estimate monotone: more text never lowers it.

Weights stay within :data:`WEIGHT_CAPS` (a character costs at most its UTF-8 bytes).

* safe: τ = :data:`SAFE_QUANTILE`, weights at least :data:`SAFE_WEIGHT_FLOORS`, then two margins measured on the fit half: the weights
  are scaled by the :data:`SAFE_LARGE_QUANTILE` of truth/estimate over requests of at least
  :data:`LARGE_TOKENS` tokens, then the constant is raised by the :data:`SAFE_ALL_QUANTILE`
  of the remaining shortfall over all requests.
* routing: τ = :data:`ROUTING_QUANTILE`, then scaled down if needed so that at least
  :data:`ROUTING_AT_OR_BELOW` of the fit half are at or below the truth.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ENGLISH_SAFE_MARGIN", "WEIGHT_CAPS", "fit_routing", "fit_safe", "quantile_regression"]

SAFE_QUANTILE = 0.999
SAFE_LARGE_QUANTILE = 0.999
SAFE_ALL_QUANTILE = 0.998
LARGE_TOKENS = 1000
ROUTING_QUANTILE = 0.12
ROUTING_AT_OR_BELOW = 0.85
#: Lower bounds of the safe weights (tokens per character) for a class the data barely holds:
#: 4-byte characters (emoji, rare Han) are few in every source, and byte-level BPE vocabularies
#: spend up to 3 tokens on one. The other non-ASCII classes are measured (ShareGPT, BFCL live
#: prompts, ``dataset-build`` prose in 39 languages; see :mod:`.multilingual`).
SAFE_WEIGHT_FLOORS = {"utf8_4": 3.0}


#: Upper bounds of the weights (tokens per character), from the encoding: a byte-level BPE
#: token (SentencePiece with byte fallback alike) covers at least one UTF-8 byte, so a character
#: never costs more tokens than its bytes. Without them the high-quantile program buys coverage
#: of one costly language with impossible weights on unrelated classes (2.3 tokens per ASCII
#: punctuation mark), which over-estimates every JSON-heavy request.
WEIGHT_CAPS = {
    "letters": 1.0, "digits": 1.0, "spaces": 1.0, "breaks": 1.0, "punct": 1.0, "latin_ext": 2.0, "utf8_2": 2.0,
    "symbols": 3.0, "cjk": 3.0, "utf8_3": 3.0, "utf8_4": 4.0, "dense": 1.0,
}
#: Extra factor on the English-regime safe weights: fitted on the English requests only, the bound
#: is tight enough that the held-out half needs a few percent the fit half did not show.
ENGLISH_SAFE_MARGIN = 1.06


def _caps(p: int) -> list[float | None]:
    from ...tokens import FEATURES

    if p != len(FEATURES):
        return [None] * p
    return [WEIGHT_CAPS.get(name) for name in FEATURES]


def quantile_regression(x: np.ndarray, y: np.ndarray, tau: float, floors: np.ndarray | None = None) -> np.ndarray:
    """Weights ``floors`` (default 0) ≤ w ≤ :data:`WEIGHT_CAPS` minimising the relative pinball
    loss of x·w at quantile ``tau``."""
    from scipy import sparse
    from scipy.optimize import linprog

    n, p = x.shape
    scale = np.maximum(y, 1.0)
    cost = np.concatenate([np.zeros(p), tau / scale, (1 - tau) / scale])
    eye = sparse.identity(n, format="csr")
    a_eq = sparse.hstack([sparse.csr_matrix(x / scale[:, None]), eye, -eye], format="csr")
    lower = np.zeros(p) if floors is None else floors
    caps = _caps(p)
    bounds = [(float(v), None if c is None else max(float(v), c)) for v, c in zip(lower, caps)] + [(0, None)] * (2 * n)
    result = linprog(cost, A_eq=a_eq, b_eq=y / scale, bounds=bounds, method="highs")
    if not result.success:
        raise RuntimeError(f"quantile regression (tau={tau}) failed: {result.message}")
    return np.asarray(result.x[:p])


def fit_safe(x: np.ndarray, y: np.ndarray, margin: float = 1.0) -> np.ndarray:
    """Safe weights (see module docstring), times ``margin``; ``x[:, 0]`` must be the constant feature."""
    w = quantile_regression(x, y, SAFE_QUANTILE, _floors(x.shape[1])) * margin
    large = y >= LARGE_TOKENS
    if large.any():
        ratio = y[large] / np.maximum(x[large] @ w, 1e-9)
        w = w * max(1.0, float(np.quantile(ratio, SAFE_LARGE_QUANTILE)))
    shortfall = y - np.ceil(x @ w)
    w[0] += max(0.0, float(np.quantile(shortfall, SAFE_ALL_QUANTILE)))
    return w


def _floors(p: int) -> np.ndarray:
    from ...tokens import FEATURES

    floors = np.zeros(p)
    if p == len(FEATURES):
        for name, value in SAFE_WEIGHT_FLOORS.items():
            floors[FEATURES.index(name)] = value
    return floors


def fit_routing(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Routing weights (see module docstring)."""
    w = quantile_regression(x, y, ROUTING_QUANTILE)
    ratio = np.floor(x @ w) / np.maximum(y, 1.0)
    needed = float(np.quantile(ratio, ROUTING_AT_OR_BELOW))
    if needed > 1.0:
        w = w / needed
    return w
