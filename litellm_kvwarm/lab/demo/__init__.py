"""``kvwarm demo``: real conversations through a real LiteLLM proxy and two emulated vLLM backends,
replayed twice, warm-ahead on and off, to measure what warm-ahead buys the turn that escalates.

What runs (all local, no GPU, Redis or network), once per *arm*:

* a *fast* emulator (``fast-8b``, ``max_model_len`` 16,384, prefill 3,000 tok/s) and a *slow*
  one (``slow-27b``, 131,072, prefill 750 tok/s: a 30k-token cold prompt takes 40 s), decode
  50 tok/s, every emulated wait multiplied by ``--time-scale``;
* ``litellm --config`` with groups ``fast`` / ``slow``, ``context_window_fallbacks``
  ``fast -> slow`` and ``litellm_kvwarm.proxy_handler_instance``. Arm ``warm-on`` runs the
  plugin with its defaults, arm ``warm-off`` the same with ``KVWARM_WARM_AHEAD=0``; both get
  ``KVWARM_WARM_COOLDOWN_S = 300 × time scale`` so the cooldown keeps its proportion to the
  emulated time (``KVWARM_WARM_REWARM_STEP`` stays at its default).  Each arm starts fresh
  processes: nothing is cached on either backend when its replay begins.

Each conversation (the longest ShareGPT ones, then the largest BFCL long-context
tool-calling ones) is replayed request by request with ``model: "fast"``: the recorded
history (recorded assistant replies, not the emulator's filler) plus the next user message
or tool result, streamed (chat: with ``stream_options.include_usage``) so TTFT is measured at
the client.  ShareGPT goes to ``/v1/chat/completions``; by default the largest BFCL conversation
goes to ``/v1/messages`` as Anthropic Messages and the next to ``/v1/responses`` as Responses
(``DemoOptions.bfcl_apis``; :mod:`.send`), the way agent clients send their tool loops.  The replay starts at the last request whose estimate is below ``--start-fraction``
of the fast window (everything before it is sent as history in that first request, so it is
prefilled on fast once) and stops ``--turns-after-escalation`` requests after the first one
served by ``slow``: the *escalated turn*.  Requests follow each other back to back unless
``--think-time`` sets an emulated pause (scaled like every other emulated time).  The
emulators' request logs tell, per request, which backend(s) got it, with what
``max_tokens`` (clamping), how many prompt tokens were cached, whether an attempt failed,
and which warms (slow requests with ``max_tokens=1``) landed meanwhile.

Modules: :mod:`.settings` (the backends, arms and options), :mod:`.stack` (the processes of one
arm and their request logs), :mod:`.send` (one request's body in its API, its stream read),
:mod:`.replay` (sending the requests in order, matching the logs;
:func:`run_arm` returns an :class:`ArmResult`), :mod:`.rows` (what a replay records, the totals),
:mod:`.compare` (pure: pairs the escalated turns of ``warm-on`` and ``warm-off``), :mod:`.report`
(printed rows, summaries, the comparison, the JSON document) and :mod:`.run` (:func:`run_demo`:
the arms, the printout, the chart written by every run, by default to
``.kvwarm-run/demo/demo-warm-ahead.png``, and the ``--json`` rows).
"""

from __future__ import annotations

from .compare import EscalatedTurn, EscalationComparison, compare, comparison_totals, escalated_turn, explain
from .replay import load_conversations, replay_conversation, replay_start, run_arm
from .send import estimate_wire, request_body, stream_chat, stream_request, wire_body
from .report import (
    HEADER,
    RowPrinter,
    format_comparison,
    format_header,
    format_row,
    format_summary,
    is_interesting,
    payload,
)
from .rows import ArmResult, BackendTotals, Summary, TurnRow, backend_totals, is_warm, summarize
from .run import DEFAULT_CHART_PATH, main_demo, run_demo, write_chart
from .settings import (
    ARMS,
    DECODE_TPS,
    DEFAULT_ARMS,
    DEFAULT_BFCL_APIS,
    DEFAULT_SHAREGPT_APIS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_SHAREGPT_CONVERSATIONS,
    DEFAULT_START_FRACTION,
    DEFAULT_THINK_TIME_S,
    DEFAULT_TIME_SCALE,
    DEFAULT_TURNS_AFTER_ESCALATION,
    FAST_GROUP,
    FAST_MODEL,
    FAST_PREFILL_TPS,
    FAST_WINDOW,
    LOG_SETTLE_S,
    MAX_REQUESTS_PER_CONVERSATION,
    MIN_WARM_COOLDOWN_S,
    PLUGIN_ESTIMATOR,
    REQUEST_TIMEOUT_S,
    SESSION_HEADER,
    SLOW_GROUP,
    SLOW_MODEL,
    SLOW_PREFILL_TPS,
    SLOW_WINDOW,
    TARGET_TTFT_RATIO,
    UNSCALED_WARM_COOLDOWN_S,
    WARM_OFF,
    WARM_ON,
    WARM_THRESHOLD,
    Arm,
    DemoError,
    DemoOptions,
    scaled_cooldown_s,
    scaled_tenant_rate,
)
from .stack import Stack, chat_entries, new_entries, start_stack

# Everything the benchmarks (litellm_kvwarm.lab.bench), the CLI and the tests import from here.
__all__ = [
    "ARMS",
    "Arm",
    "ArmResult",
    "BackendTotals",
    "DECODE_TPS",
    "DEFAULT_ARMS",
    "DEFAULT_BFCL_APIS",
    "DEFAULT_SHAREGPT_APIS",
    "DEFAULT_CHART_PATH",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_SHAREGPT_CONVERSATIONS",
    "DEFAULT_START_FRACTION",
    "DEFAULT_THINK_TIME_S",
    "DEFAULT_TIME_SCALE",
    "DEFAULT_TURNS_AFTER_ESCALATION",
    "DemoError",
    "DemoOptions",
    "EscalatedTurn",
    "EscalationComparison",
    "FAST_GROUP",
    "FAST_MODEL",
    "FAST_PREFILL_TPS",
    "FAST_WINDOW",
    "HEADER",
    "LOG_SETTLE_S",
    "MAX_REQUESTS_PER_CONVERSATION",
    "MIN_WARM_COOLDOWN_S",
    "PLUGIN_ESTIMATOR",
    "REQUEST_TIMEOUT_S",
    "RowPrinter",
    "SESSION_HEADER",
    "SLOW_GROUP",
    "SLOW_MODEL",
    "SLOW_PREFILL_TPS",
    "SLOW_WINDOW",
    "Stack",
    "Summary",
    "TARGET_TTFT_RATIO",
    "TurnRow",
    "UNSCALED_WARM_COOLDOWN_S",
    "WARM_OFF",
    "WARM_ON",
    "WARM_THRESHOLD",
    "backend_totals",
    "chat_entries",
    "compare",
    "comparison_totals",
    "escalated_turn",
    "estimate_wire",
    "explain",
    "format_comparison",
    "format_header",
    "format_row",
    "format_summary",
    "is_interesting",
    "is_warm",
    "load_conversations",
    "main_demo",
    "new_entries",
    "payload",
    "replay_conversation",
    "replay_start",
    "request_body",
    "run_arm",
    "run_demo",
    "scaled_cooldown_s",
    "scaled_tenant_rate",
    "start_stack",
    "stream_chat",
    "stream_request",
    "summarize",
    "wire_body",
    "write_chart",
]
