"""Warms of a bridged group are sized by the route decision's view (:meth:`~litellm_kvwarm.facts_groups.GroupFacts.bridged`):
a Messages block LiteLLM 1.108.7's chat bridge drops (a ``search_result``: :mod:`litellm_kvwarm.token_bridge`) adds
nothing to a head warm's size nor to a warm piece, as it adds nothing to the route's routing estimate."""

from __future__ import annotations

from litellm_kvwarm import identity
from litellm_kvwarm.config import Settings
from litellm_kvwarm.tokens import estimate_request
from litellm_kvwarm.warm import WarmOutcome
from litellm_kvwarm.warm_gate import WarmCandidate, WarmGate
from litellm_kvwarm.warm_head import head_request
from litellm_kvwarm.warm_pieces import PieceSender

from test_token_bridge import PAGE
from test_warm_gate import Captured

SEARCH = {"type": "search_result", "source": "https://docs.test/p", "title": "Parser", "content": [{"type": "text", "text": PAGE}]}


def _agent(turns: int = 6) -> dict:
    """A Messages session whose first user turn carries a ~6,000-token search result (dropped by the bridge)."""
    msgs: list[dict] = [{"role": "user", "content": [SEARCH, {"type": "text", "text": "Summarise the search result."}]}]
    for i in range(turns):
        msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"path": f"f{i}.py"}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x = 1\n" * 120}]})
    return {"model": "fast", "max_tokens": 256, "system": "You are a coding agent.", "messages": msgs}


def _gate(bridged: bool) -> tuple[WarmGate, Captured]:
    runner = Captured()
    return WarmGate(Settings(), runner=lambda: runner, count=lambda *a: None, secret=b"h" * 32,
                    bridged=lambda target, kind: bridged), runner


async def test_a_bridged_groups_head_warm_is_sized_without_the_dropped_blocks():
    """Head = the system prompt and the search-result turn: 6,027 routing tokens as sent, 39 as bridged. Before,
    the gate sized it as sent and queued a ``head`` warm the route (bridged, ~1,100 tokens in all) never needed."""
    body = _agent()
    head = head_request("messages", body)
    sent, bridged = (estimate_request(head, call_kind="messages", bridged=b).routing for b in (False, True))
    assert sent > 6_000 and bridged < 60
    route = estimate_request(body, call_kind="messages", bridged=True).routing
    c = WarmCandidate("slow", True, 131_072, route, 16_384, identity.Session(tenant="t", session_id="s", source="litellm"))
    native, runner = _gate(False)
    assert await native.consider(c, body, kind="messages") is WarmOutcome.QUEUED and runner.jobs[-1].trigger == "head"
    g, runner = _gate(True)
    assert await g.consider(c, body, kind="messages") is WarmOutcome.SKIPPED_BELOW_THRESHOLD and not runner.jobs


def test_a_bridged_groups_warm_pieces_do_not_count_the_dropped_blocks():
    """Pieces of 512 tokens: the search result read as ~6,800 ratio-routing tokens, so the warm was cut three times
    inside that block (pieces of 2,197, 3,171, 4,874 tokens that a bridged backend receives as the same ~40-token
    prompt: three requests that warm nothing) and six pieces in all; bridged: two pieces (412 and 806 tokens)."""
    async def send(kind, body):
        return None

    body = {**_agent(), "model": "slow"}
    as_sent = PieceSender(512, send, max_pieces=0).plan("messages", body)
    bridged = PieceSender(512, send, max_pieces=0, bridged=lambda target, kind: kind == "messages").plan("messages", body)
    assert [(p.items, p.tokens) for p in as_sent] == [(0, 2197), (0, 3171), (0, 4874), (1, 6821), (5, 7215), (9, 7609)]
    assert [(p.items, p.tokens) for p in bridged] == [(5, 412), (9, 806)]
