"""The reactive backstop (pure): what to do on a fallback hop after a backend rejected a request.

Certainty below, optimism on top: the routing estimate leans low on purpose, so a backend will
sometimes reject a request for length. The plugin arms LiteLLM's own fallback machinery per
request (see :func:`fallback_chain`): one retry slot on the same group, then the escalation
target — and on each hop :func:`decide_hop` reads the server's own numbers from the rejection
(parsed by :mod:`litellm_kvwarm.context_errors`) and decides:

* **retry** the same group once with ``max_tokens`` lowered to ``window − prompt − margin``,
  when the numbers show the prompt fits with at least the output floor to spare;
* otherwise **skip** the retry slot (no backend attempt) so LiteLLM moves on to the target;
* on each escalation hop, **skip** a group whose known window cannot hold the prompt (the next
  step of the chain follows), else **escalate** with the *original* output budget (LiteLLM's dict
  fallback overrides stick to later hops; the clamp then fits it to that group's window);
* a hop caused by an error that is not a context-length error is **aborted** when the plugin
  armed the generic fallbacks itself (the client then gets the original error), and **passed**
  untouched when the operator configured them.

At most one retry, then one attempt per escalation group the request fits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any

from .backstop_plan import BackstopPlan  # noqa: F401  (re-exported: the hook and tests import it from here)
from .context_errors import Certainty, ContextError, ErrorKind, LimitMeaning

#: Prefix of the messages of exceptions the plugin raises to skip a hop; such entries in
#: ``previous_models`` are not the backend's words and are ignored when reading the error.
SKIP_MESSAGE_PREFIX = "litellm-kvwarm:"


def fallback_chain(
    source: str, chain: Sequence[str], requested: int | None, params: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Any]:
    """LiteLLM fallback entries for ``source``: the retry slot (a dict entry, which LiteLLM
    treats as a distinct hop of the same group; its ``max_tokens`` is a placeholder the hop
    decision replaces) when an output budget was requested, then every group of ``chain`` in
    order (the operator's steps are never removed: a group the request does not fit is skipped
    on its hop, before any backend attempt). A step with overrides in ``params`` (from the
    operator's or client's dict entry) keeps them: ``{"model": step, **params[step]}``."""
    if not chain:
        return []
    entries: list[Any] = []
    if requested is not None:
        entries.append({"model": source, "max_tokens": requested})
    for step in chain:
        extra = (params or {}).get(step)
        entries.append({"model": step, **extra} if extra else step)
    return entries


def allowed_by_client(client_fallbacks: object, source: str, chain: Sequence[str]) -> tuple[str, ...]:
    """The client's own ``context_window_fallbacks`` may narrow the operator's ``chain`` (``[]``,
    or a list for ``source`` without some of its groups), never widen it: the groups of ``chain``
    the client's list still allows, in the operator's order. Absent (``None``): all of them."""
    if client_fallbacks is None:
        return tuple(chain)
    if not isinstance(client_fallbacks, Sequence) or isinstance(client_fallbacks, str):
        return ()
    for entry in client_fallbacks:
        if isinstance(entry, Mapping) and source in entry:
            targets = entry[source]
            targets = [targets] if isinstance(targets, str) else targets
            if not isinstance(targets, Sequence):
                return ()
            names = {t.get("model") if isinstance(t, Mapping) else t for t in targets}
            return tuple(g for g in chain if g in names)
    return ()


#: HTTP statuses that are never a length refusal, whatever their text says (auth, missing model,
#: timeout, rate limit, gateway and overload errors: "503 Server overloaded: too many tokens in flight");
#: an in-stream refusal LiteLLM maps to 500 is kept.
NOT_A_LENGTH_REFUSAL = frozenset({401, 403, 404, 408, 429, 502, 503, 504})


def status_of(exception_type: object) -> int | None:
    """The HTTP status LiteLLM's exception class stands for, from its name (its records keep the
    name, not the object); ``None`` when the name says none."""
    names = {"AuthenticationError": 401, "PermissionDeniedError": 403, "NotFoundError": 404, "Timeout": 408,
             "RateLimitError": 429, "RouterRateLimitError": 429, "BadGatewayError": 502, "ServiceUnavailableError": 503,
             "APIConnectionError": 503}
    return names.get(exception_type) if isinstance(exception_type, str) else None


def backend_error_text(previous_models: object) -> str | None:
    """The most recent backend error in LiteLLM's ``metadata.previous_models`` (skipping the
    plugin's own skip exceptions); ``None`` also when that error's class is a status that is never a
    length refusal (:data:`NOT_A_LENGTH_REFUSAL`: a hop after it is not the plugin's to take)."""
    if not isinstance(previous_models, Sequence):
        return None
    for entry in reversed(list(previous_models)):
        if isinstance(entry, Mapping):
            text = entry.get("exception_string")
            if isinstance(text, str) and SKIP_MESSAGE_PREFIX not in text:
                return None if status_of(entry.get("exception_type")) in NOT_A_LENGTH_REFUSAL else text
    return None


def retried_attempt(metadata: object) -> bool:
    """Whether this attempt is LiteLLM's own retry of its hop (``num_retries``) rather than the hop's first attempt:
    ``Router.async_function_with_retries`` sets ``metadata["attempted_retries"]`` to 0 at the start of each hop (the
    request's first attempt and every fallback hop, on the hop's own copy of the metadata) and to the retry's
    number (1, 2, ...) before each retry (LiteLLM 1.108.7-1.109.3, ``router.py``)."""
    value = metadata.get("attempted_retries") if isinstance(metadata, Mapping) else None
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def last_attempt(previous_models: object) -> Mapping[str, Any] | None:
    """LiteLLM's record of the attempt that failed last (the last entry of ``previous_models``:
    ``deployment_id``, ``exception_string``, ``exception_type``), unless it is the plugin's own skip."""
    if not isinstance(previous_models, Sequence) or not previous_models:
        return None
    entry = previous_models[-1]
    if not isinstance(entry, Mapping) or SKIP_MESSAGE_PREFIX in str(entry.get("exception_string")):
        return None
    return MappingProxyType(dict(entry))


class HopAction(str, Enum):
    RETRY_CLAMPED = "reactive_retry"  # same group, lower max_tokens
    SKIP = "skip"  # raise before any backend attempt: LiteLLM moves to the next hop
    ESCALATE = "reactive_escalation"  # target group, original output budget
    ABORT = "abort"  # not a context error, plugin-armed fallbacks: end with the original error
    PASS = "pass"  # not the plugin's hop: leave it alone


@dataclass(frozen=True)
class HopDecision:
    action: HopAction
    max_tokens: int | None = None
    window: int | None = None  # the window the server reported (exact), to learn
    reason: str = ""


def decide_hop(
    *,
    plan: BackstopPlan,
    hop_group: str,
    error: ContextError | None,
    prompt_count: int | None,
    known_window: int | None,
    output_floor_tokens: int,
    margin_tokens: int = 0,
    hop_window: int | None = None,
    prompt_lower_bound: int | None = None,
    failover: bool = False,
    prompt_estimated: bool = False,
) -> HopDecision:
    """Decide one fallback hop.

    Args:
        plan: what the pre-call hook armed.
        hop_group: the model group of this hop.
        error: the parsed backend rejection (``None``: not a context-length error).
        prompt_count: the plugin's own count of the prompt (exact from ``/tokenize``, else the
            safe over-estimate), tokens; used for the retry on ``plan.source``.
        known_window: the window the plugin knew for ``plan.source``, tokens.
        hop_window: on an escalation hop, the known window of ``hop_group`` (tokens), if any; the
            hop is skipped when the server's own printed prompt size (a count, or "at least N")
            plus the floor cannot fit it. The plugin's estimates never skip a step: they read
            code and JSON high, and a step tried in vain costs one attempt, a step skipped in vain
            costs the answer.
        prompt_lower_bound: another count the prompt is known to be at least (tokens), if any.
        failover: the hop reached another deployment of ``hop_group`` than the one whose failure it follows
            (LiteLLM's ``order``-level or weighted failover inside the group, or its retry routed elsewhere).
        prompt_estimated: ``prompt_count`` is the safe over-estimate, not a count. A retry on ``plan.source`` then
            lowers the budget only on the server's own numbers (an exact prompt count it printed, the room or the output
            cap it printed); otherwise it is skipped and the next step serves the whole budget, as LiteLLM alone's
            fallback would (the estimate reads prose ~1.3× and code up to ~1.6× the truth: a 4,000-token answer that
            fit was cut to ~300, a breaker found).

    "max_tokens must be at least 1, got N" is a context overflow only when the server computed
    N itself (the client sent no output budget, so N = window − prompt); with a client budget it
    is the client's own error and is not acted on.
    """
    if error is not None and error.kind is ErrorKind.OUTPUT_BELOW_ONE and plan.requested is not None:
        error = None  # the client's own max_tokens <= 0 (never armed, but a later hop may still see it)
    if error is None:
        if plan.walks_chain and hop_group in plan.chain:  # LiteLLM alone's context_window_fallbacks walk goes on
            return HopDecision(HopAction.PASS)
        if plan.walks_chain and hop_group == plan.source:  # the retry slot: a retry with less cannot help a 5xx/429
            return HopDecision(HopAction.SKIP, reason="not a context-length error: no retry, on to the next step")
        if plan.own_generic_fallbacks and hop_group == plan.source and (failover or not plan.generic_retry):
            # no same-group entry of the plugin's, or another replica than the one that failed: LiteLLM's own failover
            # inside the group (``order`` levels, ``enable_weighted_failover``; never after a context error), which
            # LiteLLM alone takes too (a plain retry elsewhere when it is the plugin's slot: the same request)
            return HopDecision(HopAction.PASS)
        if plan.own_generic_fallbacks and (hop_group == plan.source or hop_group in plan.chain):
            return HopDecision(HopAction.ABORT, reason="not a context-length error")
        return HopDecision(HopAction.PASS)
    admitted = error.admitted_window  # the printed window, less one where the server refuses a total that reaches it
    window = admitted.value if admitted and admitted.certainty is Certainty.EXACT else None
    if plan.step_windows and hop_group == plan.source and error.kind not in (ErrorKind.PROMPT_OVER_WINDOW, ErrorKind.OUTPUT_OVER_LIMIT):
        prompt = _prompt_at_least(error, prompt_count)
        step = plan.step_holding(prompt) if prompt is not None else None
        if step is not None:  # LiteLLM alone's context_window_fallbacks would serve the whole budget there
            return HopDecision(HopAction.SKIP, window=window, reason=(
                f"{step!r} holds prompt ≈{prompt}tok + the {plan.step_output.get(step, plan.requested)} output tokens "
                "asked: escalating with the whole budget, not retrying with less"))
    if hop_group == plan.source:
        return _retry_or_skip(error, window or known_window, window, prompt_count, plan, output_floor_tokens, margin_tokens,
                              prompt_estimated)
    if hop_group in plan.chain:
        printed = error.prompt_tokens.value if error.prompt_tokens is not None else None
        floor_prompt = max(v for v in (printed, prompt_lower_bound, 0) if v is not None)
        if hop_window is not None and floor_prompt + output_floor_tokens > hop_window:
            return HopDecision(
                HopAction.SKIP,
                reason=f"prompt ≥{floor_prompt}tok + floor {output_floor_tokens} exceeds window {hop_window} of {hop_group!r}",
            )
        return HopDecision(
            HopAction.ESCALATE,
            max_tokens=plan.step_output.get(hop_group, plan.requested),
            window=window,
            reason=f"{error.kind.value} on {plan.source!r} → escalating to {hop_group!r}",
        )
    return HopDecision(HopAction.PASS)


def _prompt_at_least(error: ContextError, prompt_count: int | None) -> int | None:
    """The prompt's size (tokens) for a retry's room and a step's fit: the server's exact count, else the larger
    of what it printed as a lower bound and the plugin's own count (exact, or the safe over-estimate); ``None``: neither."""
    printed = error.prompt_tokens
    if printed is not None and printed.certainty is Certainty.EXACT:
        return printed.value
    candidates = [c for c in (printed.value if printed is not None else None, prompt_count) if c is not None]
    return max(candidates) if candidates else None


def _retry_or_skip(
    error: ContextError,
    window: int | None,
    printed_window: int | None,
    prompt_count: int | None,
    plan: BackstopPlan,
    floor: int,
    margin: int,
    estimated: bool = False,
) -> HopDecision:
    room_left = error.printed_limit
    if room_left is not None and room_left.meaning is LimitMeaning.OUTPUT_BUDGET and room_left.certainty is Certainty.EXACT:
        # the server printed the room itself (TGI "`max_new_tokens` must be <= N", candle-vllm "available tokens")
        return _retry_with_room(room_left.value - margin, plan, floor, printed_window, "the server's room")
    if error.kind is ErrorKind.OUTPUT_OVER_LIMIT and room_left is not None and room_left.certainty is Certainty.EXACT:
        # the model's output cap (OpenAI "supports at most N completion tokens", Anthropic "maximum allowed number of
        # output tokens"): the same model at the cap, within the window where the prompt's size is known
        known = window is not None and prompt_count is not None and not estimated
        cap = min(room_left.value, window - prompt_count) if known else room_left.value  # type: ignore[operator]
        return _retry_with_room(cap - margin, plan, floor, printed_window, f"the model's output cap {room_left.value}")
    if error.kind is ErrorKind.PROMPT_OVER_WINDOW:  # no output budget makes room for it
        size = f" ({error.prompt_tokens.value}tok)" if error.prompt_tokens is not None else ""
        return HopDecision(HopAction.SKIP, window=printed_window, reason=f"the prompt alone{size} is over the server's limit")
    if window is None or plan.requested is None:
        return HopDecision(HopAction.SKIP, window=printed_window, reason="no window or no output budget to lower")
    printed = error.prompt_tokens
    if estimated and (printed is None or printed.certainty is not Certainty.EXACT):
        # no count of the prompt, the server's or ours ("at least N" is vLLM 0.18-0.31 stopping at window - budget + 1):
        # a cut would rest on the estimate; the next step serves the whole budget, as without the plugin
        return HopDecision(HopAction.SKIP, window=printed_window, reason="no exact count of the prompt: no cut on an estimate")
    prompt = _prompt_at_least(error, prompt_count)  # "at least N" is a lower bound: never less than our own count
    if prompt is None:
        return HopDecision(HopAction.SKIP, window=printed_window, reason="prompt size unknown")
    room, basis = window - prompt, f"prompt ≈{prompt}tok in window {window}"
    cap = error.output_cap  # printed beside the window (OpenAI "supports at most N completion tokens"): a retry above it is refused again
    if cap is not None and cap.certainty is Certainty.EXACT and cap.value < room:
        room, basis = cap.value, f"{basis}, the model's output cap {cap.value}"
    return _retry_with_room(room - margin, plan, floor, printed_window, basis)


def _retry_with_room(room: int, plan: BackstopPlan, floor: int, printed_window: int | None, basis: str) -> HopDecision:
    """Retry with ``room`` output tokens (tokens, margin taken) when it is at least ``floor`` and
    below what was asked; otherwise skip the retry (the chain's next step follows)."""
    if plan.requested is None:
        return HopDecision(HopAction.SKIP, window=printed_window, reason="no output budget to lower")
    if room < floor:
        return HopDecision(HopAction.SKIP, window=printed_window, reason=f"{basis} leaves {room} < floor {floor}")
    new_max = min(room, plan.requested)
    if new_max >= plan.requested:
        return HopDecision(HopAction.SKIP, window=printed_window, reason="the numbers do not explain the rejection")
    return HopDecision(
        HopAction.RETRY_CLAMPED,
        max_tokens=new_max,
        window=printed_window,
        reason=f"{basis} leaves {room}: retrying {plan.source!r} with max_tokens {plan.requested} → {new_max}",
    )
