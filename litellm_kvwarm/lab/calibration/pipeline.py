"""The calibration run end to end: data → truth per family → fit → held-out metrics → files.

:func:`measure` does the work and returns a :class:`Calibration` (arrays and weights, no
files); :func:`weights_document` and :func:`sample_document` turn it into the JSON that is
shipped (``litellm_kvwarm/data/token_weights.json``) and the fixed test sample
(``tests/data/token_sample.json``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...tokens import ANY_FAMILY, FEATURES, LinearWeights, RatioEstimator, count_request, request_features_and_regime
from .agent_corpus import REQUESTS_PER_KIND, agent_requests
from .agent_sources import AGENT_KINDS
from .dataset import KINDS, Request, load_requests
from .evaluate import Metrics, metrics
from .families import TokenCounter, available_families
from .fit import ENGLISH_SAFE_MARGIN, fit_routing, fit_safe
from .floors import class_texts, floors
from .templates import render

__all__ = ["AGENT_FIT_WEIGHT", "Calibration", "fit_all", "measure", "sample_document", "weights_document"]

#: Weight of an agent-shaped request's loss in the safe fit: they are ~1/10 of the requests but the
#: shape agents send most. (The routing fit weighs every content kind alike instead: ``fit.fit_routing``.)
AGENT_FIT_WEIGHT = 3.0


@dataclass
class Calibration:
    """Everything a report needs. Arrays are aligned with ``requests``; truths are tokens."""

    requests: list[Request]
    features: np.ndarray
    english: np.ndarray  # bool per request: the English regime (tokens.ENGLISH_MARKER)
    ratio_safe: np.ndarray
    ratio_routing: np.ndarray
    truth: dict[str, np.ndarray]  # family -> true tokens
    weights: dict[str, LinearWeights]  # family (and "any") -> fitted weights
    floors: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # family -> (safe, routing) floors
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def held_out(self) -> np.ndarray:
        return np.array([r.held_out for r in self.requests])

    @property
    def kinds(self) -> np.ndarray:
        return np.array([r.kind for r in self.requests])

    def estimates(self, family: str) -> tuple[np.ndarray, np.ndarray]:
        """Calibrated (safe, routing) of every request with ``family``'s weights (tokens)."""
        w = self.weights[family]
        out = []
        for general, english in ((w.safe, w.english_safe), (w.routing, w.english_routing)):
            values = self.features @ np.asarray(general)
            if english is not None:
                values = np.where(self.english, self.features @ np.asarray(english), values)
            out.append(values)
        safe = np.ceil(out[0])
        routing = np.maximum(0.0, np.floor(out[1]))
        return safe, np.minimum(routing, safe)

    def table(self, family: str, weights: str | None = None, *, kind: str | None = None) -> dict[str, Metrics]:
        """Held-out metrics in ``family`` of the calibrated weights (``weights``, default the
        family's own) and of the seed ratios, optionally for one content kind."""
        mask = self.held_out & (True if kind is None else self.kinds == kind)
        safe, routing = self.estimates(weights or family)
        y = self.truth[family][mask]
        return {
            "calibrated": metrics(safe[mask], routing[mask], y),
            "ratio": metrics(self.ratio_safe[mask], self.ratio_routing[mask], y),
        }


def measure(
    *,
    families: Sequence[str] | None = None,
    sharegpt_limit: int | None = None,
    bfcl_limit: int | None = None,
    english_every: int = 1,
    agent_per_kind: int = REQUESTS_PER_KIND,
    log: Any = print,
) -> Calibration:
    """Load the data (with ``agent_per_kind`` agent-shaped requests per kind, :mod:`.agent_corpus`),
    count the truth in every available family, measure the per-class floors (:mod:`.floors`),
    fit every family and "any"."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    requests = load_requests(sharegpt_limit=sharegpt_limit, bfcl_limit=bfcl_limit, english_every=english_every)
    if agent_per_kind:
        requests += agent_requests(per_kind=agent_per_kind)
    timings["load"] = time.perf_counter() - start
    log(f"[calibrate] {len(requests)} requests ({sum(r.held_out for r in requests)} held out) in {timings['load']:.1f}s")

    start = time.perf_counter()
    seed = RatioEstimator()
    counts = [count_request(r.payload, call_kind="chat") for r in requests]
    regimes = [request_features_and_regime(c) for c in counts]
    features = np.array([f for f, _ in regimes], dtype=float)
    english = np.array([e for _, e in regimes], dtype=bool)
    ratio = [seed.estimate_counts(c) for c in counts]
    timings["features"] = time.perf_counter() - start

    fit = ~np.array([r.held_out for r in requests])
    texts = class_texts(c.text for c, keep in zip(counts, fit) if keep)
    truth: dict[str, np.ndarray] = {}
    class_floors: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for family in available_families(families):
        start = time.perf_counter()
        counter = TokenCounter(family)
        rendered = [render(family.template, r.payload["messages"], r.payload.get("tools")) for r in requests]
        truth[family.name] = np.array(counter.count_all(rendered), dtype=float)
        class_floors[family.name] = floors(texts, counter.count_texts, FEATURES)
        timings[f"truth:{family.name}"] = time.perf_counter() - start
        log(f"[calibrate] truth in {family.name}: {timings[f'truth:{family.name}']:.1f}s")
    if not truth:
        raise RuntimeError("no tokenizer family is available (install the 'calibrate' extra)")

    start = time.perf_counter()
    targets = {name: (y, y) for name, y in truth.items()}
    stacked = np.vstack(list(truth.values()))
    # "any": safe above every family's count, routing below every family's count.
    targets[ANY_FAMILY] = (stacked.max(axis=0), stacked.min(axis=0))
    class_floors[ANY_FAMILY] = (np.max([f[0] for f in class_floors.values()], axis=0),
                                np.min([f[1] for f in class_floors.values()], axis=0))
    agent = np.array([r.source.startswith("agent:") for r in requests])
    kinds = np.array([r.kind for r in requests])
    weights = fit_all(features, english, fit, targets, class_floors, np.where(agent, AGENT_FIT_WEIGHT, 1.0), kinds)
    timings["fit"] = time.perf_counter() - start
    log(f"[calibrate] fitted {len(weights)} weight sets in {timings['fit']:.1f}s")
    return Calibration(
        requests=requests,
        features=features,
        english=english,
        ratio_safe=np.array([e.safe for e in ratio], dtype=float),
        ratio_routing=np.array([e.routing for e in ratio], dtype=float),
        truth=truth,
        weights=weights,
        floors=class_floors,
        timings=timings,
    )


def fit_all(features: np.ndarray, english: np.ndarray, fit: np.ndarray, targets: dict[str, tuple[np.ndarray, np.ndarray]],
            class_floors: dict[str, tuple[np.ndarray, np.ndarray]], sample_weight: np.ndarray,
            kinds: np.ndarray) -> dict[str, LinearWeights]:
    """Weights of every target (family -> (safe truth, routing truth)) on the ``fit`` rows: general
    and English-regime, each class at least its floors; each request's safe loss times
    ``sample_weight``, routing aimed per content kind (``kinds``, one per request)."""
    weights: dict[str, LinearWeights] = {}
    en = fit & english
    for name, (y_safe, y_routing) in targets.items():
        low_safe, low_routing = class_floors[name]
        sets = {}
        for key, rows, margin in (("", fit, 1.0), ("english_", en, ENGLISH_SAFE_MARGIN)):
            if rows.sum() < 20:
                continue
            x, sw = features[rows], sample_weight[rows]
            sets[f"{key}safe"] = tuple(float(v) for v in fit_safe(x, y_safe[rows], margin, low_safe, sw))
            sets[f"{key}routing"] = tuple(float(v) for v in fit_routing(x, y_routing[rows], low_routing, kinds[rows]))
        weights[name] = LinearWeights(**sets)
    return weights


def weights_document(cal: Calibration, command: str) -> dict[str, Any]:
    """The shipped weights file: features, per-family weights, and how they were made."""
    return {
        "features": list(FEATURES),
        "generated_by": command,
        "data": {
            "requests": len(cal.requests),
            "fit_requests": int((~cal.held_out).sum()),
            "sources": sorted({r.source.split(":")[0] for r in cal.requests}),
        },
        "families": {
            name: {key: [max(0.0, round(v, 6)) for v in values] for key, values in (
                ("safe", w.safe), ("routing", w.routing), ("english_safe", w.english_safe),
                ("english_routing", w.english_routing)) if values is not None}
            for name, w in cal.weights.items()
        },
    }


def sample_document(cal: Calibration, *, size: int = 320, min_per_kind: int = 12, max_chars: int = 9_000) -> dict[str, Any]:
    """A small fixed held-out sample for the tests: payloads and their true counts per family.

    About ``size`` requests, each content kind in proportion to its share of the held-out half
    (so medians and shares over the sample stand for the held-out ones) but at least
    ``min_per_kind`` (so rare kinds, CJK and other non-Latin, are pinned too); at most
    ``max_chars`` characters each, chosen evenly over the kind's requests sorted by size.
    """
    held = [i for i, r in enumerate(cal.requests) if r.held_out]
    chosen: list[int] = []
    for kind in (*KINDS, *(f"agent:{k}" for k in AGENT_KINDS)):
        pool = [i for i in held if cal.requests[i].kind == kind
                and len(json.dumps(cal.requests[i].payload, ensure_ascii=False)) <= max_chars]
        if not pool:
            continue
        share = sum(1 for i in held if cal.requests[i].kind == kind) / len(held)
        wanted = max(min_per_kind, round(size * share))
        pool.sort(key=lambda i: cal.truth[next(iter(cal.truth))][i])
        step = max(1, len(pool) // wanted)
        chosen.extend(pool[::step][:wanted])
    return {
        "families": sorted(cal.truth),
        "requests": [
            {
                "id": cal.requests[i].id,
                "kind": cal.requests[i].kind,
                "payload": cal.requests[i].payload,
                "truth": {name: int(y[i]) for name, y in cal.truth.items()},
            }
            for i in chosen
        ],
    }
