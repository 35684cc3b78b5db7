"""The priority fallback's learned state is per deployment and shared by every tenant's warms, so a refusal
is learned only when the warm's own request cannot have put its text in the error: a client's text quoted
back by the server (vLLM's 400 for an invalid field quotes its input as a Python repr, where a JSON-escaped
search of the body does not see it: ``"`` stays ``"``, a newline stays a newline)."""

from __future__ import annotations

import asyncio

import pytest

from litellm_kvwarm.warm_priority import WarmPriority, is_priority_refusal


def _echo(field: str, value: object) -> str:
    """vLLM 0.32's 400 for an invalid field, as LiteLLM raises it: the field's input quoted as a Python repr."""
    return ("litellm.BadRequestError: Hosted_vllmException - 1 validation error:\n  {'type': 'dict_type', 'loc': "
            "('body', %r), 'msg': 'Input should be a valid dictionary', 'input': %r}" % (field, value))


@pytest.mark.parametrize("value", [
    'unknown field "priority"',  # serde's wording, with the double quotes JSON escapes
    '{"type":"extra_forbidden","loc":["body","priority"],"msg":"Extra inputs are not permitted"}',  # pydantic's JSON detail
])
def test_a_client_text_the_json_search_escapes_teaches_nothing(value):
    """Before: ``_quoted`` searched ``json.dumps(body)``, where the client's ``"`` reads ``\\"``: the refusal
    pattern did not match there, but matched the server's repr of the same text, so one tenant's invalid
    ``chat_template_kwargs`` taught the deployment "refuses priority" (``refuses('dep-1')`` True) and every
    tenant's warms to it went at live priority for the TTL. Now every string the warm sends is searched as
    it is: nothing is learned, the warm's own error is raised."""
    support = WarmPriority(10, ttl_s=60)
    error = _echo("chat_template_kwargs", value)
    assert is_priority_refusal(error)  # the error alone reads as a refusal

    async def send(kind, body):
        body.setdefault("metadata", {})["model_info"] = {"id": "dep-1"}  # as LiteLLM's Router writes it
        raise RuntimeError(error)

    body = support.body({"model": "slow", "messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": value})
    with pytest.raises(RuntimeError, match="validation error"):
        asyncio.run(support.send(send, "chat", body))
    assert not support.refuses("dep-1")


def test_a_client_text_with_a_newline_quoted_raw_teaches_nothing():
    """pydantic's ValidationError text ("priority\\n  Extra inputs are not permitted") in a user message, quoted
    raw by a server's error. Before: the JSON search saw ``\\n`` (two characters), the pattern needs a line
    break: learned. Now: not learned."""
    support = WarmPriority(10, ttl_s=60)
    text = "Why does my server say:\npriority\n  Extra inputs are not permitted"

    async def send(kind, body):
        body.setdefault("metadata", {})["model_info"] = {"id": "dep-1"}
        raise RuntimeError(f"Error in applying chat template from request: {text}")

    body = support.body({"model": "slow", "messages": [{"role": "user", "content": text}]})
    with pytest.raises(RuntimeError, match="chat template"):
        asyncio.run(support.send(send, "chat", body))
    assert not support.refuses("dep-1")


def test_a_real_refusal_is_still_learned_beside_ordinary_client_text():
    """The search does not over-reach: a body with quotes, newlines and the word priority in its text still
    learns a genuine refusal (and resends without the field)."""
    support = WarmPriority(10, ttl_s=60)
    sent: list[bool] = []

    async def send(kind, body):
        body.setdefault("metadata", {})["model_info"] = {"id": "dep-1"}
        sent.append("priority" in (body.get("extra_body") or {}))
        if sent[-1]:
            raise RuntimeError("Got priority 10 but Priority scheduling is not enabled.")
        return "ok"

    body = support.body({"model": "slow", "messages": [
        {"role": "user", "content": 'Set "priority" high.\nThe field priority is\nunknown to me.'}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"properties": {"priority": {"type": "integer"}}}}}]})
    assert asyncio.run(support.send(send, "chat", body)) == "ok"
    assert sent == [True, False] and support.refuses("dep-1")


def test_a_deeply_nested_client_field_counts_as_quoting_and_never_raises():
    """A body the search cannot finish (nested past the recursion limit) counts as quoting (as before): the
    warm's error is raised, nothing learned; the search never raises anything else."""
    support = WarmPriority(10, ttl_s=60)
    deep: object = "Got priority 10 but Priority scheduling is not enabled."
    for _ in range(5000):
        deep = [deep]

    async def send(kind, body):
        body.setdefault("metadata", {})["model_info"] = {"id": "dep-1"}
        raise RuntimeError("Got priority 10 but Priority scheduling is not enabled.")

    body = support.body({"model": "slow", "messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"x": deep}})
    with pytest.raises(RuntimeError, match="Got priority"):
        asyncio.run(support.send(send, "chat", body))
    assert not support.refuses("dep-1")


def test_with_warm_priority_off_a_warm_never_carries_the_client_s_own_priority():
    """``KVWARM_WARM_PRIORITY=0`` ("the field is never sent"): a warm copies the live request's ``extra_body``, and a
    client's own ``priority: -1000`` (ahead of every live request on a ``--scheduling-policy priority`` server)
    went out on its warms. Before: ``extra_body == {"cache_salt": "s", "priority": -1000}``, and a server refusing it
    taught the deployment "refuses priority" from that tenant's field. Now the warm carries none; nothing learned."""
    from litellm_kvwarm.config import Settings
    from litellm_kvwarm.warm_body import warm_metadata, warm_request
    from litellm_kvwarm.warm_priority import with_priority

    live = {"model": "fast", "messages": [{"role": "user", "content": "hi"}], "extra_body": {"priority": -1000, "cache_salt": "s"}}
    body = with_priority(warm_request(live, target="slow", metadata=warm_metadata(live, session_hash="t:s")), 0)
    assert body["extra_body"] == {"cache_salt": "s"}
    assert with_priority({"model": "slow", "extra_body": {"priority": 3}}, 0) == {"model": "slow"}
    assert with_priority({"model": "slow", "extra_body": {"priority": 3}}, 10)["extra_body"] == {"priority": 10}
    assert Settings(warm_priority=0).warm_priority == 0
    support = WarmPriority(0, ttl_s=60)

    async def send(kind, sent):
        sent.setdefault("metadata", {})["model_info"] = {"id": "dep-1"}
        if "priority" in (sent.get("extra_body") or {}):
            raise RuntimeError("Got priority -1000 but Priority scheduling is not enabled.")
        return "ok"

    assert asyncio.run(support.send(send, "chat", support.body(live))) == "ok"
    assert not support.refuses("dep-1")
