"""A client that leaves a stream gets no reply-warm of the partial reply. LiteLLM's proxy (1.108.7,
``finalize_streaming_generator_cleanup``) bills a stream the client left by dispatching a **success** event
for the partial response assembled from the chunks sent so far, its metadata flagged ``client_disconnected``
(``_record_streaming_client_disconnect_if_needed``). The decode tap's ``abandon`` only covers chat streams it
taps (Messages and Responses streams, or decode warms off, have none), and the nested iterator hook may be
closed only on garbage collection, after that event."""

from __future__ import annotations

import pytest
from litellm import ModelResponse

from test_hook_adapters import CHAIN, FakeRouter, Key, body, handler


def _partial(text: str) -> ModelResponse:
    return ModelResponse(choices=[{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": None}],
                         usage={"prompt_tokens": 1500, "completion_tokens": 40, "total_tokens": 1540})


@pytest.mark.parametrize("decode_warm_tokens", [0, 256])
async def test_the_disconnect_time_success_event_of_a_stream_warms_nothing(monkeypatch, decode_warm_tokens):
    """Before: the disconnect-time success event popped the kept body and queued a reply-warm of the 160
    characters the client had received before leaving (trigger ``reply``). Now: the kept body is dropped,
    nothing is warmed; a stream that ends normally still gets its reply-warm."""
    h, _ = handler(FakeRouter({"fast": 4096, "slow": 32768}, chains=CHAIN), monkeypatch, warm_ahead=True,
                   decode_warm_tokens=decode_warm_tokens)
    triggers = []
    consider = h.warm_gate.consider

    async def spy(candidate, data, *args, **kwargs):
        triggers.append(getattr(kwargs.get("trigger"), "value", "ahead"))
        return await consider(candidate, data, *args, **kwargs)

    h.warm_gate.consider = spy
    left = await h.async_pre_call_hook(Key(), None, body(6000, stream=True, litellm_call_id="call-left"), "acompletion")
    stayed = await h.async_pre_call_hook(Key(), None, body(6000, stream=True, litellm_call_id="call-stayed"), "acompletion")
    assert len(h.effects.pending) == 2 and len(triggers) == 2
    flagged = {**left["metadata"], "client_disconnected": True,
               "error_information": {"error_code": "499", "error_class": "ClientDisconnected"}}
    await h.async_log_success_event({"litellm_call_id": "call-left", "litellm_params": {"metadata": flagged}},
                                    _partial("The answer starts with " * 7), None, None)
    assert len(triggers) == 2 and len(h.effects.pending) == 1  # dropped, nothing warmed
    await h.async_log_success_event({"litellm_call_id": "call-stayed", "litellm_params": {"metadata": stayed["metadata"]}},
                                    _partial("The whole answer. " * 9), None, None)
    assert triggers[2:] == ["reply"] and len(h.effects.pending) == 0
