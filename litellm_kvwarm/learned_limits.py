"""Limits a server revealed in its own rejection, below what its ``/v1/models`` card advertised.

A server's effective limit can be lower than the ``max_model_len`` it advertises: SGLang admits
at most ``max_req_input_len`` prompt tokens (the KV pool, minus a margin), TGI refuses
``prompt + max_new_tokens > MAX_TOTAL_TOKENS``, llama.cpp gives each of its ``--parallel`` slots
``--ctx-size ÷ --parallel`` tokens, LM Studio serves the context length the model was *loaded*
with, a regional provider caps input. The rejection says so; :func:`limit_from_error` reads it,
:class:`LearnedLimits` keeps it for the deployment so the next request of that size is routed and
clamped by it, with no failed attempt.

Two kinds (:class:`LimitKind`), all in tokens:

* ``TOTAL``: prompt + output must fit (a window: an EXACT printed window of any wording, e.g. TGI's
  ``max_total_tokens``, llama.cpp's slot ``n_ctx``, LM Studio's loaded ``n_ctx``);
* ``INPUT``: the prompt alone must fit, output is not counted (a printed limit meaning
  ``INPUT_LIMIT``, ``KV_CAPACITY`` (SGLang admission) or ``BATCH_LIMIT`` (TensorRT-LLM
  ``max_num_tokens`` without chunked context)).

A prompt-alone refusal that prints no number (llama.cpp's streamed frame as LiteLLM passes it on)
teaches an ``INPUT`` bound: the refused prompt's exact size (``/tokenize`` on that deployment) − 1.

Never learned: output caps (``OUTPUT_LIMIT``: a cap on max_tokens says nothing about the window),
output/input budgets of one request (``OUTPUT_BUDGET``, ``INPUT_BUDGET``: they depend on that
request's own sizes), lower bounds, approximations, and a value not below what the deployment is
already known to hold (then the rejection is explained by the known window).

Scope: per **tenant** and deployment. A rejection's text can carry what a client sent (a server
that echoes its input in an error), so what one tenant's request taught never changes another
tenant's routing; each tenant pays at most one failed attempt per deployment per TTL. Entries expire
with the window TTL (``KVWARM_WINDOW_TTL_S``) so a restarted server with a larger limit is used
again; the store is bounded (least recently used out first).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum

from .backend_call import Deployment
from .context_error_model import Certainty, ContextError, ErrorKind, LimitMeaning

__all__ = ["DEFAULT_CAPACITY", "LearnedLimits", "Limits", "LimitKind", "Observed", "limit_from_error", "needs_prompt_count"]

#: (tenant, deployment) pairs kept at most.
DEFAULT_CAPACITY = 4096
#: Printed limits that bound the prompt alone.
INPUT_MEANINGS = frozenset({LimitMeaning.INPUT_LIMIT, LimitMeaning.KV_CAPACITY, LimitMeaning.BATCH_LIMIT})
#: Rejections whose numbers are about the output cap, never the window.
_OUTPUT_KINDS = frozenset({ErrorKind.OUTPUT_OVER_LIMIT, ErrorKind.OUTPUT_BELOW_ONE})


class LimitKind(str, Enum):
    """What a learned limit bounds (the ``limit`` label of the metrics)."""

    TOTAL = "total"  # prompt + output
    INPUT = "input"  # the prompt alone


@dataclass(frozen=True)
class Observed:
    """A limit read from one rejection: ``tokens`` of ``kind``; ``family``: the wording's row;
    ``bound``: only known to be at most ``tokens`` (a numberless refusal: the refused size − 1)."""

    kind: LimitKind
    tokens: int
    family: str
    bound: bool = False

    def explains(self, prompt_tokens: int | None, output_tokens: int | None) -> bool:
        """Whether a refusal under this limit is possible for a request of at most ``prompt_tokens``
        (the safe over-estimate) with ``output_tokens`` asked (``None``: none sent). A limit the
        request could not have reached (an input limit of 4,000 on a 550-token prompt: an error
        text that is not about this request) is not learned. ``None`` prompt: cannot tell (True)."""
        if prompt_tokens is None:
            return True
        if self.kind is LimitKind.INPUT:
            return prompt_tokens >= self.tokens
        return prompt_tokens + (output_tokens or 0) >= self.tokens


@dataclass(frozen=True)
class Limits:
    """The learned limits of one (tenant, deployment), tokens; ``None``: none learned (or expired)."""

    total: int | None = None
    input: int | None = None


NONE = Limits()


#: Wordings that say the prompt *alone* is over the limit even when they print no number (their
#: row's kind): llama.cpp's "the request exceeds the available context size" (the numbers travel
#: in ``n_prompt_tokens``/``n_ctx`` body fields, which LiteLLM drops from a streamed error frame),
#: Bedrock's "Input is too long for requested model".
PROMPT_ALONE_FAMILIES = frozenset({"llamacpp", "bedrock"})


def needs_prompt_count(error: ContextError | None) -> bool:
    """Whether ``error`` proves a limit only together with the refused prompt's exact size: a
    prompt-alone refusal without numbers (:data:`PROMPT_ALONE_FAMILIES`)."""
    return error is not None and error.family in PROMPT_ALONE_FAMILIES and not error.has_numbers


def limit_from_error(error: ContextError | None, refused_prompt_tokens: int | None = None) -> Observed | None:
    """The limit ``error`` proves, or ``None`` (see the module docstring for what is never learned).
    ``refused_prompt_tokens``: the exact size of the refused prompt (tokens), used only for a
    numberless prompt-alone refusal (:func:`needs_prompt_count`): the input limit is then below it."""
    if error is None or error.kind in _OUTPUT_KINDS:
        return None
    if needs_prompt_count(error):
        if refused_prompt_tokens is None or refused_prompt_tokens < 2:
            return None
        return Observed(LimitKind.INPUT, refused_prompt_tokens - 1, error.family, bound=True)
    window = error.admitted_window
    if window is not None and window.certainty is Certainty.EXACT and window.value > 0:
        return Observed(LimitKind.TOTAL, window.value, error.family)
    limit = error.printed_limit
    if limit is not None and limit.meaning in INPUT_MEANINGS and limit.certainty is Certainty.EXACT and limit.value > 0:
        return Observed(LimitKind.INPUT, limit.value, error.family)
    return None


class LearnedLimits:
    """Per (tenant, deployment) limits, each with its own age (see the module docstring).

    Args:
        ttl_s: seconds a learned limit is used (the window TTL).
        clock: monotonic seconds (injected for tests).
        capacity: (tenant, deployment) pairs kept; the least recently used goes first.
        on_learn: called with ``(deployment, kind, tokens, family)`` when a limit is stored.
    """

    def __init__(self, *, ttl_s: float, clock: Callable[[], float] = time.monotonic, capacity: int = DEFAULT_CAPACITY,
                 on_learn: Callable[[Deployment, LimitKind, int, str], None] | None = None):
        self._ttl_s = ttl_s
        self._clock = clock
        self._capacity = max(1, capacity)
        self._on_learn = on_learn
        # keyed by (tenant, api_base, served model): the key LiteLLM sends with is not part of the limit
        self._entries: OrderedDict[tuple[str, str, str], dict[LimitKind, tuple[int, float]]] = OrderedDict()

    def observe(self, tenant: str, deployment: Deployment, observed: Observed, known: int | None) -> bool:
        """Store ``observed`` for ``tenant``'s use of ``deployment`` when it is below ``known`` (the
        window the deployment is known to hold without it, tokens; ``None``: none known). Returns
        whether a new value was stored. A later observation replaces an earlier one of the same kind
        (the server's latest word), except that a bound only ever lowers a fresh value; the same value
        again only restarts its TTL (not counted, not logged)."""
        if not tenant or (known is not None and observed.tokens >= known):
            return False
        key = (tenant, deployment.api_base, deployment.served_model)
        slot = self._entries.pop(key, {})
        now = self._clock()
        fresh = self._fresh(slot, observed.kind, now)
        if fresh is not None and (fresh == observed.tokens or (observed.bound and fresh < observed.tokens)):
            slot[observed.kind] = (fresh, now)
            self._entries[key] = slot
            return False
        slot[observed.kind] = (observed.tokens, now)
        self._entries[key] = slot
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        if self._on_learn is not None:
            self._on_learn(deployment, observed.kind, observed.tokens, observed.family)
        return True

    def adds(self, tenant: str, deployment: Deployment, observed: Observed, known: int | None) -> bool:
        """Whether :meth:`observe` would store a new value (no change made): the checks that cost nothing, run before
        the ones that read the request (a vLLM refusal that prints the advertised window, the same limit again)."""
        if not tenant or (known is not None and observed.tokens >= known):
            return False
        fresh = self._fresh(self._entries.get((tenant, deployment.api_base, deployment.served_model), {}), observed.kind, self._clock())
        return fresh is None or not (fresh == observed.tokens or (observed.bound and fresh < observed.tokens))

    def _fresh(self, slot: Mapping[LimitKind, tuple[int, float]], kind: LimitKind, now: float) -> int | None:
        held = slot.get(kind)
        return held[0] if held is not None and now - held[1] < self._ttl_s else None

    def get(self, tenant: str | None, deployment: Deployment | None) -> Limits:
        """The fresh limits of ``tenant``'s use of ``deployment`` (no I/O); :data:`NONE` when none."""
        if not tenant or deployment is None:
            return NONE
        slot = self._entries.get((tenant, deployment.api_base, deployment.served_model))
        if not slot:
            return NONE
        now = self._clock()
        fresh = {kind: tokens for kind, (tokens, at) in slot.items() if now - at < self._ttl_s}
        if len(fresh) < len(slot):
            for kind in [k for k in slot if k not in fresh]:
                del slot[kind]
        return Limits(total=fresh.get(LimitKind.TOTAL), input=fresh.get(LimitKind.INPUT)) if fresh else NONE

    def __len__(self) -> int:
        return len(self._entries)
