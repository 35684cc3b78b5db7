"""What a warm sends: its request body and its LiteLLM metadata, built from the live request.
Pure functions over plain mappings; no I/O.

* :func:`warm_request` builds the warm body from the live request of a request kind:
  ``"chat"`` copies the messages and everything else that shapes the rendered prompt (tools,
  tool_choice, response_format, chat-template arguments), ``"completion"`` (text completions)
  copies ``prompt`` and ``suffix``; so the escalated request's prompt starts with the warm's
  prompt token for token. Every output field is 1 (``max_tokens``, and
  ``max_completion_tokens`` when the request had it), not streamed, no fallbacks or retries, and
  ``cooldown_time=0`` (LiteLLM's per-call cooldown, seconds): a warm the deployment refuses (a 404 from a
  server without that API, a 429, a 401) never makes LiteLLM's Router take the deployment out of
  rotation for live requests, as it does for a failed live request; :func:`keep_out_of_cooldown` extends that to a
  deployment whose operator set ``model_info.cooldown_time`` (which LiteLLM reads before the call's own).
* :func:`warm_metadata` is the warm's LiteLLM ``metadata``: the warm marker, the keyed hash of
  the session (never the raw id), the plugin's affinity and cache-salt keys, and the caller's
  identity as the proxy set it (:data:`SPEND_IDENTITY_KEYS`), so LiteLLM's spend tracking
  charges the warm to the caller's key, team, user, org and end user.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .meta import AFFINITY_KEY, SALT_KEY, WARM_MARKER

#: Metadata key of the session's keyed hash on a warm (never the raw client session id).
SESSION_KEY = "kvwarm_session"

#: Request keys that change the prompt vLLM's chat endpoint renders.
PROMPT_SHAPING_KEYS = (
    "messages",
    "tools",
    "tool_choice",
    "functions",
    "function_call",
    "response_format",
    "chat_template",
    "chat_template_kwargs",
    "add_generation_prompt",
    "continue_final_message",
    "add_special_tokens",
    "documents",
    "mm_processor_kwargs",
    "cache_salt",
    "extra_body",
)
#: Request keys that change the prompt vLLM's text completion endpoint tokenizes. ``echo`` is
#: left out: it changes what comes back, not what is prefilled.
TEXT_PROMPT_KEYS = ("prompt", "suffix", "add_special_tokens", "cache_salt", "extra_body")
#: Request keys of an Anthropic Messages body that change the prompt (LiteLLM's bridge renders
#: ``thinking`` into the chat request's reasoning settings, which chat templates read).
MESSAGES_PROMPT_KEYS = ("messages", "system", "tools", "tool_choice", "thinking", "extra_body")
#: Request keys of a Responses body that change the prompt vLLM's ``/v1/responses`` renders.
#: ``previous_response_id`` is never copied: the state it names lives on the server that answered it.
RESPONSES_PROMPT_KEYS = ("input", "instructions", "tools", "tool_choice", "reasoning", "include", "extra_body")
#: Prompt keys per request kind (the kinds the hook handles: ``view.ADAPTERS``).
PROMPT_KEYS = {
    "chat": PROMPT_SHAPING_KEYS, "completion": TEXT_PROMPT_KEYS,
    "messages": MESSAGES_PROMPT_KEYS, "responses": RESPONSES_PROMPT_KEYS,
}
#: The output field a warm of each kind sets to 1 (the API's own budget field).
WARM_OUTPUT_FIELD = {"chat": "max_tokens", "completion": "max_tokens", "messages": "max_tokens", "responses": "max_output_tokens"}
#: Where a warm of each kind carries its LiteLLM metadata (``view.CallAdapter.metadata_field``).
WARM_METADATA_FIELD = {"chat": "metadata", "completion": "metadata", "messages": "litellm_metadata", "responses": "litellm_metadata"}
#: Output budgets a server may read; a warm sets each one present to 1.
OUTPUT_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
#: Output floors that would contradict a budget of 1 (vLLM rejects min_tokens > max_tokens).
OUTPUT_FLOOR_FIELDS = ("min_tokens",)
#: vLLM fields that make a request read nothing from the prefix cache (``prompt_logprobs`` sets
#: ``skip_reading_prefix_cache``): a warm that carried them would prefill its whole prefix at each piece.
CACHE_SKIPPING_FIELDS = ("prompt_logprobs", "skip_reading_prefix_cache")
#: vLLM fields that name the live request itself, not its prompt: ``request_id`` (the engine's id; a warm that
#: carried it would share it with the request it warms for) and ``kv_transfer_params`` (a disaggregated
#: prefill/decode deployment's handle on that request's KV blocks, vLLM >= 0.9): a warm carries neither.
REQUEST_IDENTITY_FIELDS = ("request_id", "kv_transfer_params")

#: Keys the LiteLLM proxy (1.108.7, ``LiteLLMProxyRequestSetup.add_user_api_key_auth_to_request_metadata``)
#: writes into a request's metadata from the caller's key before the pre-call hook, and that
#: its spend tracking (``_ProxyDBLogger._PROXY_track_cost_callback``: key, user, team, org,
#: project, end user, agent, tags) and the standard logging payload (``StandardLoggingMetadata``:
#: key hash, alias, team alias, org alias) read back from a finished call's metadata. Budget
#: snapshots (``user_api_key_spend`` ...), the e-mail address, the auth object and a budget
#: reservation (which belongs to the live request) are not copied.
SPEND_IDENTITY_KEYS = (
    "user_api_key",
    "user_api_key_hash",
    "user_api_key_alias",
    "user_api_key_user_id",
    "user_api_key_team_id",
    "user_api_key_team_alias",
    "user_api_key_org_id",
    "user_api_key_org_alias",
    "user_api_key_project_id",
    "user_api_key_project_alias",
    "user_api_key_end_user_id",
    "user_api_end_user_max_budget",
    "agent_id",
    "billing_agent_id",
    "tags",
)
#: Plugin keys of the live request a warm must carry: the session's deployment pin and the
#: tenant's cache salt (applied per attempt), so the warm fills the cache the request will hit.
PLUGIN_KEYS = (AFFINITY_KEY, SALT_KEY)
#: Where LiteLLM carries a request's metadata (chat and completions use ``metadata``).
METADATA_FIELDS = ("metadata", "litellm_metadata")


def _one_token(extra: Mapping[str, Any]) -> dict[str, Any]:
    dropped = (*OUTPUT_FLOOR_FIELDS, *CACHE_SKIPPING_FIELDS, *REQUEST_IDENTITY_FIELDS)
    out = {k: v for k, v in extra.items() if k not in dropped}
    for key in OUTPUT_FIELDS:
        if key in out:
            out[key] = 1
    return out


def warm_request(
    data: Mapping[str, Any], *, target: str, metadata: Mapping[str, Any], kind: str = "chat"
) -> dict[str, Any]:
    """The warm body for model group ``target``, in the same API shape as the live request (so it
    renders to the same prompt): the prompt keys of ``kind`` (:data:`PROMPT_KEYS`) copied from
    ``data`` as they are, the API's output field 1 (:data:`WARM_OUTPUT_FIELD`; and
    ``max_completion_tokens=1`` when ``data`` has it; the same inside ``extra_body``, where
    ``min_tokens``, :data:`CACHE_SKIPPING_FIELDS` and :data:`REQUEST_IDENTITY_FIELDS` are dropped), ``stream=False``, no retries or fallbacks, ``cooldown_time=0`` (a failed
    warm never cools the deployment down for live requests), and ``metadata`` under
    the API's metadata field (:data:`WARM_METADATA_FIELD`).

    Raises:
        ValueError: ``kind`` is not one of :data:`PROMPT_KEYS`.
    """
    keys = PROMPT_KEYS.get(kind)
    if keys is None:
        raise ValueError(f"warm_request: unknown request kind {kind!r}; known: {sorted(PROMPT_KEYS)}")
    body: dict[str, Any] = {key: data[key] for key in keys if data.get(key) is not None}
    if isinstance(body.get("extra_body"), Mapping):
        body["extra_body"] = _one_token(body["extra_body"])
    body.update(model=target, stream=False, num_retries=0, fallbacks=[], context_window_fallbacks=[], cooldown_time=0)
    body[WARM_OUTPUT_FIELD[kind]] = 1
    body[WARM_METADATA_FIELD[kind]] = dict(metadata)
    if kind == "chat" and data.get("max_completion_tokens") is not None:
        body["max_completion_tokens"] = 1
    return body


def warm_metadata(data: Mapping[str, Any], *, session_hash: str, kind: str = "chat") -> dict[str, Any]:
    """Metadata of a warm built from the live request ``data`` of API ``kind``: ``{kvwarm_warm: True,
    kvwarm_session: session_hash}`` and the :data:`PLUGIN_KEYS` and :data:`SPEND_IDENTITY_KEYS` that are set
    (not ``None``) in the metadata field LiteLLM owns for that API (:data:`WARM_METADATA_FIELD`: ``metadata`` for
    chat, ``litellm_metadata`` for Messages and Responses, where the proxy leaves the client's own ``metadata`` as
    sent). Only that field: a client's ``metadata.user_api_key`` on ``/v1/messages`` names whatever key it likes, and
    LiteLLM's spend tracking of the live request reads the other field. Nothing else of the client's metadata: no
    raw session id, no budget reservation."""
    out: dict[str, Any] = {WARM_MARKER: True, SESSION_KEY: session_hash}
    meta = data.get(WARM_METADATA_FIELD.get(kind, "metadata"))
    if isinstance(meta, Mapping):
        for key in (*PLUGIN_KEYS, *SPEND_IDENTITY_KEYS):
            if meta.get(key) is not None:
                out[key] = meta[key]
    return out


def keep_out_of_cooldown(kwargs: dict[str, Any], metadata_field: str = "metadata") -> None:
    """In a warm attempt's ``kwargs`` (its metadata carries the warm marker): the deployment's ``model_info`` with
    ``cooldown_time`` 0 (seconds), a copy (the deployment's own dict is shared). LiteLLM 1.108.7's
    ``Router.deployment_callback_on_failure`` takes the cooldown from the deployment's ``model_info`` before the
    call's ``litellm_params`` (``cooldown_handlers._first_present``), so the warm body's ``cooldown_time=0`` alone
    let a failed warm take such a deployment out of rotation for live requests (a breaker's proxies: every tenant's
    requests answered 429 for the deployment's 60 s). The attempt's ``model_info`` is what that callback reads.
    Anything else unchanged."""
    meta, info = kwargs.get(metadata_field), kwargs.get("model_info")
    if isinstance(meta, Mapping) and meta.get(WARM_MARKER) and isinstance(info, Mapping) and info.get("cooldown_time") not in (None, 0):
        kwargs["model_info"] = {**info, "cooldown_time": 0}
