"""The five arms of the escalated-turn benchmark, as data (pure: no processes, no I/O).

Each replayed arm is one proxy configuration over the same two backends (groups ``fast`` and
``slow``, ``context_window_fallbacks: [{"fast": ["slow"]}]`` everywhere, ``num_retries: 0``):

* ``a`` LiteLLM alone, ``context_window_fallbacks``: the fast backend rejects the prompt (HTTP 400),
  LiteLLM re-dispatches to slow, which prefills everything.
* ``b`` LiteLLM alone, ``router_settings.enable_pre_call_checks: true`` and ``model_info.max_input_tokens``
  on each deployment: LiteLLM counts the input with ``litellm.token_counter`` and skips fast before
  any call when it does not fit (then the same fallback to slow); it ignores the requested output.
* ``c`` the plugin, proactive routing, warm-ahead off (``KVWARM_WARM_AHEAD=0``).
* ``d`` the plugin with warm-ahead on.
* ``e`` the floor: not replayed. The escalated request of arm ``d`` sent twice straight to
  ``slow`` through arm ``d``'s proxy; the second one finds its whole prefix cached.
* ``f`` the plugin with warm-ahead and reply-warm (after each response the plugin warms ``slow``
  with the conversation + that reply; its default), replayed **closed-loop**: the client sends back
  the replies the backend produced (:mod:`litellm_kvwarm.lab.demo.reply`).
* ``ef`` the floor of ``f``: ``f``'s escalated request (as its client sent it) twice straight to
  ``slow`` through ``f``'s proxy.

Arms ``a``-``d`` replay the recorded history (open loop: the assistant messages sent back are the
dataset's, not what the backend produced); ``c`` and ``d`` set ``KVWARM_REPLY_WARM=0`` so they keep
measuring warm-ahead alone (a reply-warm of the emulator's filler would warm nothing the next
request sends). Plugin arms use the demo's scaled warm cooldown (300 s × time scale) and tenant warm
rate (120 ÷ time scale a minute) so both keep their proportion to emulated time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .. import demo
from ..processes import BackendSpec, proxy_config

__all__ = ["ARMS", "ARM_KEYS", "FLOOR", "FLOOR_HOSTS", "FLOORS", "BenchArm", "arm_config", "replayed_arms"]

FAST_GROUP, SLOW_GROUP = demo.FAST_GROUP, demo.SLOW_GROUP


@dataclass(frozen=True)
class BenchArm:
    key: str  # "a".."f" and "ef", as in the issues
    name: str
    label: str  # one line for tables and charts
    plugin: bool = False
    warm_ahead: bool = False
    pre_call_checks: bool = False
    replayed: bool = True  # False: measured inside another arm's run (a floor)
    reply_warm: bool = False  # the plugin's reply-warm (its default); False sets KVWARM_REPLY_WARM=0
    closed_loop: bool = False  # send back the replies the backend produced (demo.reply)
    extra_env: tuple[tuple[str, str], ...] = ()  # more KVWARM_* settings of a plugin arm (the threshold sweep's)

    def demo_arm(self) -> demo.Arm:
        """The demo's arm type, for :func:`litellm_kvwarm.lab.demo.replay_conversation` and ``env``."""
        return demo.Arm(self.name, plugin=self.plugin, warm_ahead=self.warm_ahead,
                        reply_warm=None if self.reply_warm else False)

    def env(self, time_scale: float) -> dict[str, str]:
        """``KVWARM_*`` settings for the proxy's ``environment_variables`` (empty without the plugin)."""
        return {**self.demo_arm().env(time_scale), **dict(self.extra_env)} if self.plugin else {}

    def router_settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"num_retries": 0}
        if self.pre_call_checks:
            settings["enable_pre_call_checks"] = True
        return settings


ARMS: dict[str, BenchArm] = {
    arm.key: arm
    for arm in (
        BenchArm("a", "litellm-fallbacks", "LiteLLM alone: context_window_fallbacks (400, then slow)"),
        BenchArm("b", "litellm-precall", "LiteLLM alone: enable_pre_call_checks + model_info windows",
                 pre_call_checks=True),
        BenchArm("c", "plugin-no-warm", "plugin: proactive routing, warm-ahead off", plugin=True),
        BenchArm("d", "plugin-warm", "plugin: proactive routing + warm-ahead (open loop)", plugin=True,
                 warm_ahead=True),
        BenchArm("e", "floor", "floor: the same escalated request, whole prefix cached", replayed=False),
        BenchArm("f", "plugin-reply-warm", "plugin + warm-ahead + reply-warm, closed loop", plugin=True,
                 warm_ahead=True, reply_warm=True, closed_loop=True),
        BenchArm("ef", "floor-closed", "floor of (f): (f)'s escalated request, whole prefix cached",
                 replayed=False),
    )
}
ARM_KEYS = tuple(ARMS)
FLOOR = ARMS["e"]
FLOOR_HOST = "d"  # the arm whose proxy and slow backend measure the floor
#: floor key -> the arm whose run measures it (on that arm's proxy, slow backend and escalated requests)
FLOOR_HOSTS = {"e": "d", "ef": "f"}
FLOORS = {host: ARMS[floor] for floor, host in FLOOR_HOSTS.items()}  # host key -> its floor arm


def replayed_arms(keys: Sequence[str]) -> list[BenchArm]:
    """The arms to replay for the requested keys (a floor rides on its host arm, so it adds it)."""
    unknown = [k for k in keys if k not in ARMS]
    if unknown:
        raise ValueError(f"unknown arm(s) {unknown}; known: {list(ARMS)}")
    wanted = set(keys) | {FLOOR_HOSTS[k] for k in keys if k in FLOOR_HOSTS}
    return [arm for key, arm in ARMS.items() if key in wanted and arm.replayed]


def arm_config(arm: BenchArm, fast: BackendSpec, slow: BackendSpec, *, fast_window: int, slow_window: int,
               time_scale: float, extra_router_settings: Mapping[str, Any] | None = None,
               extra_env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The proxy config of ``arm`` over one fast and one slow deployment (pure); ``extra_env`` is
    added to a plugin arm's ``KVWARM_*`` settings (the real-vLLM scale's discovery budget)."""
    if arm.pre_call_checks:
        fast = BackendSpec(fast.served_model_name, fast.api_base, fast.api_key, {"max_input_tokens": fast_window})
        slow = BackendSpec(slow.served_model_name, slow.api_base, slow.api_key, {"max_input_tokens": slow_window})
    return proxy_config(
        {FAST_GROUP: [fast], SLOW_GROUP: [slow]},
        callbacks=arm.plugin,
        env_vars={**arm.env(time_scale), **(extra_env or {})} if arm.plugin else None,
        router_settings={**arm.router_settings(), **(extra_router_settings or {})},
    )
