"""The demo's fixed setup and its options: the two emulated backends, the arms, the replay knobs.

Numbers: windows and sizes in tokens, rates in tokens/s, times in seconds.  The backends stand for
an 8B model (``fast``) and a 27B one (``slow``, a 30k-token cold prompt takes 40 s); every emulated
wait is multiplied by the time scale, and so is the plugin's warm cooldown (real seconds), so it
keeps its proportion to the emulated time.  Nothing here starts a process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...config import DEFAULT_WARM_COOLDOWN_S, DEFAULT_WARM_TENANT_RATE, DEFAULT_WARM_THRESHOLD, env_name
from ...tokens import calibrated_estimator

__all__ = [
    "ARMS", "DECODE_TPS", "DEFAULT_ARMS", "DEFAULT_MAX_TOKENS", "DEFAULT_SHAREGPT_CONVERSATIONS",
    "DEFAULT_BFCL_APIS", "DEFAULT_SHAREGPT_APIS", "DEFAULT_START_FRACTION", "DEFAULT_THINK_TIME_S", "DEFAULT_TIME_SCALE", "DEFAULT_TURNS_AFTER_ESCALATION",
    "FAST_GROUP", "FAST_MODEL", "FAST_PREFILL_TPS", "FAST_WINDOW", "LOG_SETTLE_S", "MAX_REQUESTS_PER_CONVERSATION",
    "MIN_WARM_COOLDOWN_S", "PLUGIN_ESTIMATOR", "REQUEST_TIMEOUT_S", "SESSION_HEADER", "SLOW_GROUP", "SLOW_MODEL",
    "SLOW_EMULATOR_ARGS", "SLOW_PREFILL_TPS", "SLOW_WINDOW", "TARGET_TTFT_RATIO", "UNSCALED_WARM_COOLDOWN_S", "WARM_OFF", "WARM_ON",
    "WARM_THRESHOLD", "Arm", "DemoError", "DemoOptions", "scaled_cooldown_s", "scaled_tenant_rate",
]

#: what the plugin uses by default for served names it cannot place in a family (fast-8b, slow-27b)
PLUGIN_ESTIMATOR = calibrated_estimator("any")

FAST_GROUP = "fast"
SLOW_GROUP = "slow"
FAST_MODEL = "fast-8b"
SLOW_MODEL = "slow-27b"
FAST_WINDOW = 16_384
SLOW_WINDOW = 131_072
# Tokens/s of the emulated engines: slow ~ a 27B model (30k tokens cold ~ 40 s), fast ~ an 8B one.
FAST_PREFILL_TPS = 3000.0
SLOW_PREFILL_TPS = 750.0
DECODE_TPS = 50.0
DEFAULT_TIME_SCALE = 0.05
# 256 output tokens: LiteLLM re-streams every chunk (~0.6 ms each here), and the replayed
# history uses the recorded replies, not the generated filler, so longer outputs buy nothing.
DEFAULT_MAX_TOKENS = 256
DEFAULT_SHAREGPT_CONVERSATIONS = 2
DEFAULT_TURNS_AFTER_ESCALATION = 1
# The replay starts below the warm threshold (60%), so the crossing, the warm and the
# re-warms all happen during the replay; the turns before it are sent as history.
DEFAULT_START_FRACTION = 0.5
DEFAULT_THINK_TIME_S = 0.0
MAX_REQUESTS_PER_CONVERSATION = 80
# The BFCL conversations replayed (largest first), one per entry, each in that API: an agent's
# tool loop as Anthropic Messages (/v1/messages) and as Responses (/v1/responses); ShareGPT stays chat.
DEFAULT_BFCL_APIS = ("messages", "responses")
#: API of each ShareGPT conversation, longest first (the rest: chat). The second goes through
#: ``/v1/messages``: a conversation that grows turn by turn, so warm-ahead shows on that API too
#: (the BFCL loops jump from under the warm threshold straight past the window).
DEFAULT_SHAREGPT_APIS = ("chat", "messages")
# The plugin's cooldown is in real seconds; the demo scales it like the emulated time.
UNSCALED_WARM_COOLDOWN_S = DEFAULT_WARM_COOLDOWN_S
MIN_WARM_COOLDOWN_S = 0.001  # the setting must be > 0 (time scale 0 would give 0)
WARM_THRESHOLD = DEFAULT_WARM_THRESHOLD  # the plugin's default; the demo does not change it
TARGET_TTFT_RATIO = 5.0  # acceptance criterion: escalated turn TTFT warm-off / warm-on
SESSION_HEADER = "x-litellm-session-id"
#: The slow emulator schedules prefills by vLLM's request ``priority``, as a deployment that takes the
#: plugin's default low-priority warms would (under vLLM's default FCFS policy the first warm is refused
#: with a 400 and resent without the field).
SLOW_EMULATOR_ARGS = ("--scheduling-policy", "priority")
REQUEST_TIMEOUT_S = 300.0
LOG_SETTLE_S = 2.0


class DemoError(RuntimeError):
    """The demo could not run (a process failed to start, a request failed at the client)."""


def scaled_cooldown_s(time_scale: float) -> float:
    """``KVWARM_WARM_COOLDOWN_S`` for the demo: the default 300 s times the time scale (>= 1 ms)."""
    return max(UNSCALED_WARM_COOLDOWN_S * time_scale, MIN_WARM_COOLDOWN_S)


def scaled_tenant_rate(time_scale: float) -> float:
    """``KVWARM_WARM_TENANT_RATE`` for the demo: the default warms per minute ÷ the time scale (a minute of
    emulated time passes in ``60 × time_scale`` real seconds); the default itself at time scale 0 or 1."""
    return DEFAULT_WARM_TENANT_RATE / time_scale if 0 < time_scale < 1 else DEFAULT_WARM_TENANT_RATE


@dataclass(frozen=True)
class Arm:
    """One configuration to replay under: the plugin on/off, warm-ahead on/off."""

    name: str
    plugin: bool = True
    warm_ahead: bool = True
    #: the plugin's reply-warm (``KVWARM_REPLY_WARM``): ``None`` leaves its default, ``False`` sets it to 0
    reply_warm: bool | None = None

    def env(self, time_scale: float) -> dict[str, str]:
        """The ``KVWARM_*`` settings this arm passes to the proxy (``environment_variables``)."""
        if not self.plugin:
            return {}
        env = {env_name("warm_cooldown_s"): f"{scaled_cooldown_s(time_scale):g}",
               env_name("warm_tenant_rate"): f"{scaled_tenant_rate(time_scale):g}"}
        if not self.warm_ahead:
            env[env_name("warm_ahead")] = "0"
        if self.reply_warm is False:
            env[env_name("reply_warm")] = "0"
        return env


WARM_ON = "warm-on"
WARM_OFF = "warm-off"
ARMS = {
    WARM_ON: Arm(WARM_ON),
    WARM_OFF: Arm(WARM_OFF, warm_ahead=False),
    "litellm-only": Arm("litellm-only", plugin=False, warm_ahead=False),
}
DEFAULT_ARMS = (WARM_ON, WARM_OFF)


@dataclass(frozen=True)
class DemoOptions:
    """How ``kvwarm demo`` replays (the command line's flags; defaults above)."""

    time_scale: float = DEFAULT_TIME_SCALE
    sharegpt_conversations: int = DEFAULT_SHAREGPT_CONVERSATIONS
    bfcl: bool = True
    bfcl_apis: tuple[str, ...] = DEFAULT_BFCL_APIS  # one BFCL conversation per API, largest first
    sharegpt_apis: tuple[str, ...] = DEFAULT_SHAREGPT_APIS  # API per ShareGPT conversation, longest first (rest: chat)
    max_tokens: int = DEFAULT_MAX_TOKENS
    turns_after_escalation: int = DEFAULT_TURNS_AFTER_ESCALATION
    start_fraction: float = DEFAULT_START_FRACTION
    think_time_s: float = DEFAULT_THINK_TIME_S  # emulated seconds between a reply and the next request
    all_rows: bool = False
    max_requests_per_conversation: int = MAX_REQUESTS_PER_CONVERSATION
    workdir: Path | None = None
    fast_window: int = FAST_WINDOW  # tokens; where the replay marks the warm-threshold crossing (the bench's vLLM scale: 4,096)
    # closed loop: send back the replies the backend streamed (each request names the recorded reply the
    # emulator is to produce, :mod:`.reply`); open loop (default): send the recorded history
    closed_loop: bool = False
