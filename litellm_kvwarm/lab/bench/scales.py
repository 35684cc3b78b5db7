"""The two scales the benchmark runs at: emulated production numbers, or the real-vLLM tier.

* ``emulator``: the production shape of the issue. fast 16,384 / slow 131,072 tokens; slow
  prefills 750 tok/s (a 30,000-token cold prompt takes 40 s), fast 3,000 tok/s, decode 50 tok/s
  (the demo's engines), every emulated wait multiplied by ``time_scale`` so a run fits in
  minutes. Time scaling compresses the backends' time but not the proxy's own 10-50 ms, so
  TTFTs are reported both as measured at the client and in emulated seconds (the slow backend's
  own TTFT ÷ time scale).
* ``vllm``: two real vLLM CPU servers serving a tiny Llama (fast 4,096 / slow 16,384), started
  by the real-vLLM tier's helpers (``tests/vllm``); see :mod:`litellm_kvwarm.lab.bench.vllm_scale`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import demo

__all__ = ["EMULATOR", "SCALES", "VLLM", "Scale"]

COLD_REFERENCE_TOKENS = 30_000


@dataclass(frozen=True)
class Scale:
    name: str
    fast_window: int
    slow_window: int
    fast_prefill_tps: float | None  # None: a real engine, its own speed
    slow_prefill_tps: float | None
    decode_tps: float | None
    time_scale: float  # 1.0 for real engines

    @property
    def cold_reference_s(self) -> float | None:
        """Emulated seconds a 30,000-token cold prompt takes on slow (the calibration point)."""
        return None if not self.slow_prefill_tps else COLD_REFERENCE_TOKENS / self.slow_prefill_tps

    def emulated_s(self, real_s: float | None) -> float | None:
        """Real (time-scaled) backend seconds -> emulated seconds; real engines are unscaled."""
        if real_s is None:
            return None
        return real_s / self.time_scale if self.time_scale > 0 else None

    def with_time_scale(self, time_scale: float) -> "Scale":
        return Scale(self.name, self.fast_window, self.slow_window, self.fast_prefill_tps,
                     self.slow_prefill_tps, self.decode_tps, time_scale)


EMULATOR = Scale(
    name="emulator",
    fast_window=demo.FAST_WINDOW,
    slow_window=demo.SLOW_WINDOW,
    fast_prefill_tps=demo.FAST_PREFILL_TPS,
    slow_prefill_tps=demo.SLOW_PREFILL_TPS,
    decode_tps=demo.DECODE_TPS,
    time_scale=demo.DEFAULT_TIME_SCALE,
)
VLLM = Scale(name="vllm", fast_window=4_096, slow_window=16_384, fast_prefill_tps=None,
             slow_prefill_tps=None, decode_tps=None, time_scale=1.0)
SCALES = {EMULATOR.name: EMULATOR, VLLM.name: VLLM}
