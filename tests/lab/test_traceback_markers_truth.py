"""Error markers in agent tool results against real token counts (estimator breaker, agent shapes): Python 3.11+
tracebacks underline the failing expression (``~~~~~~~~^^^^^^^^^``), rustc underlines a span (``^^^^^ expected
`u32```), and a coding agent's test and build output is full of both. Each body is sent as LiteLLM sends it
(``litellm_bridge.chat_payload``) and rendered in the family's chat template. Every tokenizer parametrized here is a
lab dependency (``scripts/install.sh``).

Byte-level BPEs spend one token on four carets (``^^^^``) or eight tildes, while the routing weights price each mark at
0.65-0.85 tokens (``token_runs`` prices only runs of 16 and more, and not carets). Routing ÷ truth at 11-15k tokens
(Messages; Responses alike): the traceback read 1.25 (qwen3.6), 1.23 (o200k), 1.21 (cl100k), 1.15 (qwen2.5, deepseek),
1.09 (llama3), rustc errors 1.11 (cl100k, o200k), 1.10 (deepseek): requests that fit the fast window were escalated.
Routing now prices a caret or tilde after the same mark at ``token_fragment_prices.MARKER_ROUTING_TOKENS``: 0.86-0.98."""

from __future__ import annotations

import random

import pytest

from truth_support import readings
_WORDS = ("request model token window proxy cache route slow fast budget output input context server client error "
          "retry handler config session user agent tool result message stream chunk prefix warm queue limit").split()
_RNG = random.Random(101)


def _frame() -> str:
    a, b, c = (_RNG.choice(_WORDS) for _ in range(3))
    call, args = f"self.{a}_{b}", f"({c}, timeout=timeout)"
    return (f'  File "/app/.venv/lib/python3.12/site-packages/{a}/{b}.py", line {_RNG.randint(1, 999)}, in {c}_{a}\n'
            f"    result = {call}{args}\n    {' ' * len('result = ')}{'~' * len(call)}{'^' * len(args)}\n")


def _traceback() -> str:
    return ("Traceback (most recent call last):\n" + "".join(_frame() for _ in range(_RNG.randint(5, 15)))
            + f"{_RNG.choice(['KeyError', 'ValueError'])}: '{_RNG.choice(_WORDS)}'\n\n")


def _rustc_error() -> str:
    var, obj, meth = (_RNG.choice(_WORDS) for _ in range(3))
    line, span = _RNG.randint(10, 999), f"{obj}.{meth}()"
    gutter, start = " " * len(str(line)), len(f"let {var}: u32 = ")
    return (f"error[E0308]: mismatched types\n{gutter}--> src/{obj}/{meth}.rs:{line}:{start + 5}\n{gutter} |\n"
            f"{line} |     let {var}: u32 = {span};\n{gutter} |     {' ' * start}{'^' * len(span)} expected `u32`, found `String`\n"
            f"{gutter} |\n\n")


def _repeat(make, size: int) -> str:
    out: list[str] = []
    while sum(map(len, out)) < size:
        out.append(make())
    return "".join(out)


TEXTS = {"python_traceback": _repeat(_traceback, 45_000), "rustc_errors": _repeat(_rustc_error, 45_000)}
BODIES = {
    "messages": lambda text: {"model": "m", "max_tokens": 4096, "messages": [
        {"role": "user", "content": "Fix the failing tests."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "bash", "input": {"command": "make test"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": text, "is_error": True}]}]},
    "responses": lambda text: {"model": "m", "input": [
        {"type": "message", "role": "user", "content": "Fix the failing tests."},
        {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": '{"command": ["make", "test"]}'},
        {"type": "function_call_output", "call_id": "call_1", "output": text}]},
}


@pytest.mark.parametrize("kind", sorted(BODIES))
@pytest.mark.parametrize("text", sorted(TEXTS))
def test_error_markers_route_near_the_truth(text, kind):
    body = BODIES[kind](TEXTS[text])
    off = {}
    for name, r in readings(body, kind).items():
        assert r.safe >= r.truth, (name, r.safe, r.truth)
        if not 0.8 * r.truth <= r.routing <= 1.10 * r.truth:
            off[name] = round(r.routing / r.truth, 3)
    assert not off, off
