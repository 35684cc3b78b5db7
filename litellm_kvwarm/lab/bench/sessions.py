"""Which real conversations the benchmark replays (ShareGPT V3 and BFCL v4; nobody here wrote them).

Three kinds of session, chosen deterministically from the installed datasets:

* **escalating ShareGPT**: the longest conversations (:func:`longest_sharegpt`); they grow turn
  by turn past the fast window, so warm-ahead has earlier turns to warm from;
* **escalating BFCL**: long-context multi-turn tool conversations (real tool schemas, tool
  outputs executed against BFCL's own simulated APIs) whose routing estimate outgrows the fast
  window; largest first;
* **non-escalating**: ShareGPT conversations (file order) and BFCL ones (largest first) that
  pass the warm threshold (60% of the fast window) at least twice but end inside the window.
  They are what warm-ahead costs: warms for turns that never escalate.

Given ``slow_window`` (the real-vLLM scale, slow 16,384), an escalating session is kept only if
the requests the replay sends to ``slow`` (the first one estimated past the fast window and the
``turns_after_escalation`` after it) fit it: safe estimate × :data:`SLOW_FIT_MARGIN` + output floor
≤ ``slow_window`` (the margin covers a tokenizer the estimate was not fitted on, e.g. the tiny
model's 8,192-token BPE, on which the safe estimate ran 0.96-1.4× its count). Candidates are then
drawn from a longer list of the longest conversations, so the plan's count is still met.

**The API of each session.** Agents send their tool loops as Anthropic Messages (``/v1/messages``)
or Responses (``/v1/responses``): :attr:`SessionPlan.agent_apis` names the APIs to cover, given in
order to the escalating BFCL sessions, then (when fewer BFCL sessions were chosen) to the last
escalating ShareGPT ones; every other session stays chat (:func:`assign_apis`).

The estimate used for selection is the public :func:`litellm_kvwarm.tokens.estimate_request`,
the same one the replay records.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...config import DEFAULT_WARM_THRESHOLD
from ..datasets import Conversation, bfcl_conversations, iter_sharegpt, longest_sharegpt
from ..demo import DEFAULT_MAX_TOKENS, request_body
from ...tokens import calibrated_estimator, estimate_request

#: what the plugin uses by default for served names it cannot place in a family (fast-8b, slow-27b)
PLUGIN_ESTIMATOR = calibrated_estimator("any")

__all__ = ["SessionPlan", "assign_apis", "estimates", "fits_slow", "select_sessions"]

MIN_TURNS = 4
#: Safe estimate × this must fit the slow window (see module docstring).
SLOW_FIT_MARGIN = 1.25
#: ShareGPT candidates considered per escalating session wanted (only matters when some do not fit slow).
SHAREGPT_POOL_FACTOR = 3
# A non-escalating session ends between these fractions of the fast window.
NON_ESCALATING_END = (0.70, 0.95)
MIN_REQUESTS_OVER_THRESHOLD = 2
BFCL_CATEGORY = "multi_turn_long_context"


@dataclass(frozen=True)
class SessionPlan:
    sharegpt: int = 6  # longest escalating ShareGPT conversations
    bfcl: int = 2  # escalating BFCL conversations, at most (the dataset may hold fewer)
    non_escalating: int = 2  # ShareGPT sessions that cross the warm threshold but never escalate
    non_escalating_bfcl: int = 1
    agent_apis: tuple[str, ...] = ("messages", "responses")  # see "The API of each session"


def assign_apis(bfcl: list[Conversation], sharegpt: list[Conversation],
                apis: tuple[str, ...]) -> dict[str, str]:
    """Conversation id -> API for the escalating sessions: ``apis`` in order to ``bfcl``, the rest to
    ``sharegpt`` from its end (pure; ids not in the result stay chat)."""
    targets = list(bfcl) + list(reversed(sharegpt))
    return {c.id: api for c, api in zip(targets, apis)}


def estimates(conversation: Conversation) -> list[int]:
    """Routing estimate of every request of the conversation, in order."""
    return [estimate_request(request_body(conversation, p, DEFAULT_MAX_TOKENS), call_kind="chat", estimator=PLUGIN_ESTIMATOR).routing
            for p in conversation.requests()]


def _escalates(ests: list[int], fast_window: int, floor: int) -> bool:
    return any(e + floor > fast_window for e in ests)


def _warms_but_stays(ests: list[int], fast_window: int, floor: int) -> bool:
    if not ests or _escalates(ests, fast_window, floor):
        return False
    low, high = NON_ESCALATING_END
    over = sum(1 for e in ests if e >= DEFAULT_WARM_THRESHOLD * fast_window)
    return low * fast_window <= ests[-1] < high * fast_window and over >= MIN_REQUESTS_OVER_THRESHOLD


def fits_slow(conversation: Conversation, ests: list[int], fast_window: int, slow_window: int | None,
              floor: int = 256, turns_after: int = 1) -> bool:
    """Whether the requests a replay sends to ``slow`` fit ``slow_window`` (``None``: always)."""
    if slow_window is None:
        return True
    first = next((i for i, e in enumerate(ests) if e + floor > fast_window), None)
    if first is None:
        return True
    points = list(conversation.requests())[first: first + turns_after + 1]
    return all(SLOW_FIT_MARGIN * estimate_request(request_body(conversation, p, DEFAULT_MAX_TOKENS), call_kind="chat",
                                                  estimator=PLUGIN_ESTIMATOR).safe + floor <= slow_window
               for p in points)


def select_sessions(plan: SessionPlan, fast_window: int, output_floor: int = 256, *,
                    slow_window: int | None = None, turns_after: int = 1) -> list[Conversation]:
    """Escalating ShareGPT, escalating BFCL, then non-escalating sessions (see module docstring);
    with ``slow_window``, escalating sessions whose slow requests would not fit it are skipped."""
    chosen: list[Conversation] = []

    def escalates_and_fits(c: Conversation, e: list[int]) -> bool:
        return _escalates(e, fast_window, output_floor) and fits_slow(c, e, fast_window, slow_window, output_floor,
                                                                      turns_after)

    if plan.sharegpt:
        pool = longest_sharegpt(plan.sharegpt * SHAREGPT_POOL_FACTOR, min_turns=MIN_TURNS)
        chosen += [c for c in pool[: plan.sharegpt] if escalates_and_fits(c, estimates(c))]
        for c in pool[plan.sharegpt:]:
            if len(chosen) >= plan.sharegpt or slow_window is None:
                break
            if escalates_and_fits(c, estimates(c)):
                chosen.append(c)
    sharegpt_count = escalating_end = len(chosen)
    if plan.bfcl or plan.non_escalating_bfcl:
        bfcl = sorted(bfcl_conversations(BFCL_CATEGORY), key=lambda c: (-c.chars, c.id))
        with_estimates = [(c, estimates(c)) for c in bfcl]
        chosen += [c for c, e in with_estimates if escalates_and_fits(c, e)][: plan.bfcl]
        escalating_end = len(chosen)
        stays_bfcl = [c for c, e in with_estimates if _warms_but_stays(e, fast_window, output_floor)]
    else:
        stays_bfcl = []
    if plan.non_escalating:
        found: list[Conversation] = []
        for conversation in iter_sharegpt():
            if len(conversation.turns) >= MIN_TURNS and _warms_but_stays(estimates(conversation), fast_window,
                                                                         output_floor):
                found.append(conversation)
                if len(found) >= plan.non_escalating:
                    break
        chosen += found
    apis = assign_apis(chosen[sharegpt_count:escalating_end], chosen[:sharegpt_count], plan.agent_apis)
    chosen += stays_bfcl[: plan.non_escalating_bfcl]
    return [replace(c, api=apis.get(c.id, c.api)) for c in chosen]
