"""Minified numeric JSON in agent tool results against real token counts (estimator breaker, agent shapes): GeoJSON
polygons (``"coordinates":[[[-96.089598,-48.444023],[...``) and integer matrices (``[[-724,166,...],[...]]``), as a
GIS, data or vector-store tool returns them, on the Messages and Responses APIs (as LiteLLM sends them,
``litellm_bridge.chat_payload``), rendered in each family's chat template. Every tokenizer parametrized here is a
lab dependency (``scripts/install.sh``).

Without spaces, byte-level BPEs merge the marks between numbers into one token (``,-``, ``],[``, ``],[-``, ``[-``)
while the routing weights price each mark (0.65-0.85 tokens); digits are already priced per group of three.
Routing ÷ truth, Messages and Responses alike: GeoJSON (19-38k tokens) cl100k 1.26, o200k 1.17, deepseek 1.16,
llama3 1.12, qwen3.6 1.12 (qwen2.5 1.05); matrix (8-16k tokens) cl100k 1.32, deepseek 1.27, o200k 1.26, llama3 1.17,
qwen3.6 1.11 (qwen2.5 1.04): requests that fit the fast window are escalated. ``json.dumps`` with its default ``, ``
separators reads 1.0-1.2 (``test_token_shapes_truth``). Routing now prices a mark right after a mark at nothing where
digits are most of the text (``token_fragment_prices.mark_pairs_routing``; code and JSON keep the fitted price):
0.93-1.07 here. Safe is unchanged (1.29-2.61)."""

from __future__ import annotations

import json
import random

import pytest

from truth_support import readings
_RNG = random.Random(98)
_COMPACT = (",", ":")
TEXTS = {
    "geojson": json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"name": f"parcel-{i}"}, "geometry": {"type": "Polygon", "coordinates": [
            [[round(_RNG.uniform(-180, 180), 6), round(_RNG.uniform(-90, 90), 6)] for _ in range(30)]]}} for i in range(60)]},
        separators=_COMPACT),
    "int_matrix": json.dumps([[_RNG.randint(-999, 999) for _ in range(20)] for _ in range(200)], separators=_COMPACT),
}
BODIES = {
    "messages": lambda text: {"model": "m", "max_tokens": 4096, "messages": [
        {"role": "user", "content": "Which parcels overlap the river?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "query", "input": {"layer": "parcels"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": text}]}]},
    "responses": lambda text: {"model": "m", "input": [
        {"type": "message", "role": "user", "content": "Which parcels overlap the river?"},
        {"type": "function_call", "call_id": "call_1", "name": "query", "arguments": '{"layer": "parcels"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": text}]},
}


@pytest.mark.parametrize("kind", sorted(BODIES))
@pytest.mark.parametrize("text", sorted(TEXTS))
def test_minified_numeric_json_routes_near_the_truth(text, kind):
    body = BODIES[kind](TEXTS[text])
    high = {}
    for name, r in readings(body, kind).items():
        assert r.safe >= r.truth, (name, r.safe, r.truth)
        if not 0.8 * r.truth <= r.routing <= 1.10 * r.truth:
            high[name] = round(r.routing / r.truth, 3)
    assert not high, high
