"""The request fields OpenAI's own API defines, for ``--strict-fields`` (pure).

Contract: :func:`unknown_fields` lists a body's top-level keys that OpenAI's API does not
define for that endpoint, in the body's order; :func:`unrecognized_arguments` is the 400
OpenAI answers for them, in its wording and error shape (``type: "invalid_request_error"``,
``param`` and ``code`` ``null``). A strict server is what the plugin meets behind an
OpenAI-compatible gateway or OpenAI itself: vLLM-only extras such as ``cache_salt``,
``priority``, ``top_k`` or ``chat_template_kwargs`` are unknown there.

The lists follow OpenAI's API reference for ``POST /v1/chat/completions``, the legacy
``POST /v1/completions`` and ``POST /v1/responses`` (late 2026), including deprecated fields that are still accepted
(``functions``, ``function_call``, ``max_tokens``, ``user``).
"""

from __future__ import annotations

from collections.abc import Mapping

from .error_bodies import OpenAIApiError

__all__ = [
    "CHAT_COMPLETION_FIELDS",
    "COMPLETION_FIELDS",
    "RESPONSES_FIELDS",
    "unknown_fields",
    "unknown_responses_fields",
    "unrecognized_arguments",
]

CHAT_COMPLETION_FIELDS = frozenset({
    "messages", "model", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
    "max_completion_tokens", "max_tokens", "metadata", "modalities", "n", "parallel_tool_calls", "prediction",
    "presence_penalty", "prompt_cache_key", "prompt_cache_retention", "reasoning_effort", "response_format",
    "safety_identifier", "seed", "service_tier", "stop", "store", "stream", "stream_options", "temperature",
    "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
})

COMPLETION_FIELDS = frozenset({
    "model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "n",
    "presence_penalty", "seed", "stop", "stream", "stream_options", "suffix", "temperature", "top_p", "user",
})


RESPONSES_FIELDS = frozenset({
    "model", "input", "background", "context_management", "conversation", "include", "instructions",
    "max_output_tokens", "max_tool_calls", "metadata", "parallel_tool_calls", "previous_response_id", "prompt",
    "prompt_cache_key", "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier", "store",
    "stream", "stream_options", "temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p",
    "truncation", "user",
})


def unknown_responses_fields(body: Mapping[str, object]) -> list[str]:
    """Top-level keys of ``body`` OpenAI does not define for ``POST /v1/responses``."""
    return [key for key in body if key not in RESPONSES_FIELDS]


def unknown_fields(body: Mapping[str, object], chat: bool) -> list[str]:
    """Top-level keys of ``body`` OpenAI does not define for chat (``chat``) or text completions."""
    known = CHAT_COMPLETION_FIELDS if chat else COMPLETION_FIELDS
    return [key for key in body if key not in known]


def unrecognized_arguments(names: list[str]) -> OpenAIApiError:
    """OpenAI's 400 for unknown arguments: "Unrecognized request argument supplied: cache_salt"
    (one) or "Unrecognized request arguments supplied: a, b" (several)."""
    noun = "argument" if len(names) == 1 else "arguments"
    return OpenAIApiError(400, f"Unrecognized request {noun} supplied: {', '.join(names)}", "invalid_request_error")
