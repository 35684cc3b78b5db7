"""The error a client reads when the generic fallbacks the plugin armed on its own were all declined (pure).

LiteLLM's router, when a request's fallbacks fail, re-raises the request's first error with a sentence appended
(``format_fallback_outcome_message``: ``router_utils/common_utils.py`` in LiteLLM 1.108.7,
``litellm_core_utils/routing_common_utils.py`` in 1.109.3)::

    \\n\\nLiteLLM: model group 'fast' failed with the error above. No fallback was attempted.
    \\n\\nLiteLLM: model group 'fast' failed with the error above. Fallback to slow also failed: <the last hop's error>

and the proxy answers HTTP 429 whenever the message holds "No deployments available" (``ProxyException``, same files'
``proxy/_types.py``). The plugin arms generic ``fallbacks`` for a request near its window
(:data:`~litellm_kvwarm.planner.HIDDEN_LIMIT_FRACTION`) so that a context error LiteLLM does not recognise is still
escalated; after any other error every hop is declined (:class:`~litellm_kvwarm.reactive.HopAction` ``ABORT``). Those
declined hops are the plugin's doing, not the client's: left as LiteLLM writes them, a 401 or 404 that put the group's
only deployment in cooldown came back as 429 (the retry slot met the Router's "No deployments available"), and any
other error gained "Fallback to slow also failed: litellm-kvwarm: fallback not used". :func:`as_without_own_fallbacks`
gives the message LiteLLM alone writes for that request (it has no generic fallbacks: "No fallback was attempted.").

A request escalated ahead of time (``fast`` → ``slow``) carries a fallback to its source. When slow refuses it with an
error not about length (vLLM's "Unsupported input item type", "Stream options can only be defined when stream=True",
an unsupported ``background``) and fast, tried next, refuses it too, not on length, LiteLLM writes slow's error and
"Fallback to fast also failed: <fast's>". LiteLLM alone tries only fast: :func:`as_source_answered` gives its message,
fast's error and "No fallback was attempted.", where the two errors are of one class (so one HTTP status).

LiteLLM's failover across ``order`` levels of a group raises its last hop's error as it is (``run_async_fallback``,
outside the Router's re-raise of the request's first error), so where the plugin declined that hop the client read the
decline, a 400, where LiteLLM alone answered the last replica's 503 (a breaker's proxies): :func:`declined_answer`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from .context_errors import parse_context_error
from .reactive import SKIP_MESSAGE_PREFIX, status_of

#: LiteLLM's sentence after a failed request's own error (both versions above); ``group``: the request's model group.
OUTCOME_LEAD = re.compile(r"\n\nLiteLLM: model group '(?P<group>[^'\n]{0,512})' failed with the error above\.")
#: What LiteLLM appends when the request had no fallback to try.
NONE_ATTEMPTED = " No fallback was attempted."
#: The rest of the sentence when fallbacks were tried: what they were, and the last one's error (LiteLLM bounds it at
#: 2,000 characters, then "... [truncated N characters]"; ``ROUTER_FALLBACK_ERROR_DETAIL_MAX_CHARS``).
FALLBACK_FAILED = re.compile(r"Fallback to (?P<targets>[^\n]+?) also failed: (?P<detail>.*)", re.DOTALL)
#: The exception class LiteLLM names at the start of an error's text ("litellm.BadRequestError: ...").
_ERROR_CLASS = re.compile(r"\A(litellm\.[A-Za-z]+Error):")
#: What a LiteLLM exception's ``str`` adds to its ``message`` after the Router's retries.
_RETRIED = re.compile(r" LiteLLM Retried: \d+ times?(, LiteLLM Max Retries: \d+)?\Z")


def as_without_own_fallbacks(message: str, group: str) -> str | None:
    """``message`` (a final error's text, as LiteLLM's router left it) as LiteLLM alone would have written it for a
    request of model group ``group`` that had no generic fallbacks; ``None`` when nothing is to change: no outcome
    sentence for ``group``, it already says no fallback was attempted, or the error above it is a context-length error
    (the plugin's hops then escalated for real, and what they met is the client's to read). Never raises on a ``str``."""
    for lead in OUTCOME_LEAD.finditer(message):
        if lead.group("group") != group:
            continue
        head, tail = message[: lead.end()], message[lead.end():]
        if tail == NONE_ATTEMPTED or parse_context_error(message[: lead.start()]) is not None:
            return None
        return head + NONE_ATTEMPTED
    return None


def as_source_answered(message: str, target: str, source: str) -> str | None:
    """``message`` (the final error of a request escalated ahead of time from ``source`` to ``target``) as LiteLLM
    alone, which sends it to ``source`` only, would have written it: ``source``'s own error and "No fallback was
    attempted."; ``None`` unless LiteLLM's sentence says ``target`` failed, its fallback to ``source`` alone failed
    too, neither error is about length, both are of one exception class, and ``source``'s text was not truncated."""
    for lead in OUTCOME_LEAD.finditer(message):
        if lead.group("group") != target:
            continue
        also = FALLBACK_FAILED.match(message, lead.end() + 1) if message.startswith(" ", lead.end()) else None
        if also is None or also.group("targets").strip() != source:
            return None
        detail = _RETRIED.sub("", also.group("detail"))
        head = message[: lead.start()]
        source_class, target_class = _ERROR_CLASS.match(detail), _ERROR_CLASS.match(head)
        if source_class is None or target_class is None or source_class.group(1) != target_class.group(1):
            return None
        if detail.endswith(" characters]") or parse_context_error(detail) is not None or parse_context_error(head) is not None:
            return None
        return f"{detail}\n\nLiteLLM: model group '{source}' failed with the error above.{NONE_ATTEMPTED}"
    return None


def restore(exc: BaseException, plan: object, origin: object = None, group: object = None) -> bool:
    """Rewrite ``exc.message`` in place (LiteLLM's exceptions carry their text there, and the proxy answers from it)
    with :func:`as_source_answered` when ``origin`` (the request's escalation origin record, ``{"source": ...}``) says it
    was escalated ahead of time from its source to ``group`` (the group it was last sent to); else with
    :func:`as_without_own_fallbacks` when ``plan`` (the request's :class:`~litellm_kvwarm.backstop_plan.BackstopPlan`)
    says the plugin armed the generic fallbacks itself and declines every hop of them after a non-length error (not
    ``walks_chain``, whose steps are tried as LiteLLM alone's walk would). Whether the text changed; never raises."""
    try:
        if not isinstance(message := getattr(exc, "message", None), str):
            return False
        source = origin.get("source") if isinstance(origin, Mapping) else None
        if isinstance(source, str) and isinstance(group, str) and source != group:  # escalated ahead of time
            rewritten = as_source_answered(message, group, source)
        elif not getattr(plan, "own_generic_fallbacks", False) or getattr(plan, "walks_chain", True):
            return False  # a walk of the chain (a proactive escalation) tries its steps for real: LiteLLM's account stands
        else:
            rewritten = as_without_own_fallbacks(message, getattr(plan, "source"))
        if rewritten is None:
            return False
        exc.message = rewritten  # type: ignore[attr-defined]
        return True
    except Exception:  # an exception class whose message cannot be set: LiteLLM's text stands
        return False


#: The text of the plugin's own decline of a hop (:class:`~litellm_kvwarm.attempt.DeclineHop`).
DECLINED = f"{SKIP_MESSAGE_PREFIX} fallback not used"
#: Statuses of LiteLLM's server-error classes that :func:`~litellm_kvwarm.reactive.status_of` leaves out.
_SERVER_ERRORS = {"InternalServerError": 500, "APIError": 500}


def declined_answer(exc: BaseException, previous_models: object) -> tuple[int, str] | None:
    """``(status, text)`` of the last real attempt's error (LiteLLM's ``previous_models`` record, the plugin's own skips
    left out) when the error a request ends with is the plugin's decline of a hop (its own text, not the outcome
    sentence LiteLLM appends to the request's first error: :func:`restore` rewrites that one); ``None`` otherwise, or
    when that record's class names no status. Never raises."""
    try:
        message = str(getattr(exc, "message", None) or exc)
        lead = OUTCOME_LEAD.search(message)  # the error itself, not LiteLLM's account of the hops after it (restore's)
        if DECLINED not in (message[: lead.start()] if lead else message) or not isinstance(previous_models, Sequence):
            return None
        for record in reversed(list(previous_models)):
            text, kind = (record.get("exception_string"), record.get("exception_type")) if isinstance(record, Mapping) else (None, None)
            if isinstance(text, str) and SKIP_MESSAGE_PREFIX not in text:
                status = status_of(kind) or _SERVER_ERRORS.get(kind) if isinstance(kind, str) else None
                return (status, text) if status is not None else None
        return None
    except Exception:  # an exception whose text cannot be read: LiteLLM's answer stands
        return None
