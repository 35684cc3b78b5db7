"""Escalated-turn TTFT across arms (pure): samples, per-arm medians/p90, ratios and targets.

The escalated turn of a conversation in an arm is the first replayed request served by ``slow``
(:func:`litellm_kvwarm.lab.demo.escalated_turn`). Its TTFT is reported twice:

* ``ttft_s``: measured at the client (time-scaled backend time + the proxy's own, unscaled time);
* ``emulated_ttft_s``: the slow backend's own TTFT ÷ time scale, i.e. what the calibrated engine
  would take. It leaves out the proxy, and for arm ``a`` the failed attempt on fast (the fast
  emulator rejects before prefill, so that costs proxy time, not engine time). It does include
  the emulator's own real work on the request (tokenizing the prompt: tens of ms for 20k tokens),
  magnified by 1 ÷ time scale; that is what a fully cached request (the floor) shows;
* ``prefill_model_s``: uncached prompt tokens ÷ the slow engine's prefill rate: the calibrated
  prefill alone, no fixed cost at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..demo import SLOW_GROUP, TurnRow, escalated_turn
from .stats import percentile, ratio

__all__ = ["ArmTtft", "TurnSample", "floor_samples", "ratios", "summarize_arm", "turn_samples"]

RATIOS = (("d", "e"), ("c", "d"), ("a", "d"), ("b", "d"), ("f", "ef"), ("c", "f"), ("d", "f"))


@dataclass(frozen=True)
class TurnSample:
    conversation: str
    source: str
    request: int
    prompt_tokens: int | None
    cached_tokens: int | None
    ttft_s: float | None
    emulated_ttft_s: float | None
    prefill_model_s: float | None
    failed_attempts: int  # backend attempts with HTTP >= 400 for this request
    warms_landed: int
    previous_prompt_tokens: int | None  # the request before it (what a warm could have known)

    @property
    def unwarmable_tokens(self) -> int | None:
        """Tokens new in this request (last reply + new message): no warm could hold them."""
        if self.prompt_tokens is None or self.previous_prompt_tokens is None:
            return None
        return max(self.prompt_tokens - self.previous_prompt_tokens, 0)

    def as_dict(self) -> dict[str, Any]:
        return dict(asdict(self), unwarmable_tokens=self.unwarmable_tokens)


def _prefill(prompt: int | None, cached: int | None, prefill_tps: float | None) -> float | None:
    if prompt is None or not prefill_tps:
        return None
    return max(prompt - (cached or 0), 0) / prefill_tps


def turn_samples(rows: Sequence[TurnRow], time_scale: float, prefill_tps: float | None = None) -> list[TurnSample]:
    """One sample per conversation that reached ``slow`` (rows in replay order)."""
    by_conv: dict[str, list[TurnRow]] = {}
    for row in rows:
        by_conv.setdefault(row.conversation, []).append(row)
    samples = []
    for conversation, conv_rows in by_conv.items():
        turn = escalated_turn(conv_rows)
        if turn is None:
            continue
        index = next(i for i, r in enumerate(conv_rows) if r.group == SLOW_GROUP)
        row = conv_rows[index]
        previous = conv_rows[index - 1].prompt_tokens if index > 0 else None
        samples.append(TurnSample(
            conversation=conversation, source=row.source, request=turn.request, prompt_tokens=turn.prompt_tokens,
            cached_tokens=turn.cached_tokens, ttft_s=turn.ttft_s,
            emulated_ttft_s=_emulated(turn.server_ttft_s, time_scale),
            prefill_model_s=_prefill(turn.prompt_tokens, turn.cached_tokens, prefill_tps), failed_attempts=row.failed_attempts,
            warms_landed=turn.warms_landed, previous_prompt_tokens=previous,
        ))
    return samples


def floor_samples(floors: Iterable[Any], sources: Mapping[str, str], time_scale: float,
                  prefill_tps: float | None = None) -> list[TurnSample]:
    """Samples of the floor arm from :class:`~litellm_kvwarm.lab.bench.replay.FloorSample` objects."""
    return [
        TurnSample(conversation=f.conversation, source=sources.get(f.conversation, ""), request=f.request,
                   prompt_tokens=f.prompt_tokens, cached_tokens=f.cached_tokens, ttft_s=f.ttft_s,
                   emulated_ttft_s=_emulated(f.server_ttft_s, time_scale),
                   prefill_model_s=_prefill(f.prompt_tokens, f.cached_tokens, prefill_tps),
                   failed_attempts=0 if f.status == 200 else 1,
                   warms_landed=0, previous_prompt_tokens=None)
        for f in floors
    ]


def _emulated(server_s: float | None, time_scale: float) -> float | None:
    if server_s is None:
        return None
    return server_s / time_scale if time_scale > 0 else None


@dataclass(frozen=True)
class ArmTtft:
    key: str
    name: str
    label: str
    escalated: int  # conversations whose escalated turn was measured
    median_s: float | None
    p90_s: float | None
    median_emulated_s: float | None
    p90_emulated_s: float | None
    median_prefill_model_s: float | None
    failed_attempts_escalated: int  # on the escalated turns
    failed_attempts_total: int  # on every replayed request of the arm (warms included)
    client_errors: int
    samples: tuple[TurnSample, ...]

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "samples"}
        out["samples"] = [s.as_dict() for s in self.samples]
        return out


def summarize_arm(key: str, name: str, label: str, samples: Sequence[TurnSample], *, failed_total: int = 0,
                  client_errors: int = 0) -> ArmTtft:
    ttft = [s.ttft_s for s in samples]
    emulated = [s.emulated_ttft_s for s in samples]
    return ArmTtft(
        key=key, name=name, label=label, escalated=len(samples),
        median_s=percentile(ttft, 50), p90_s=percentile(ttft, 90),
        median_emulated_s=percentile(emulated, 50), p90_emulated_s=percentile(emulated, 90),
        median_prefill_model_s=percentile([s.prefill_model_s for s in samples], 50),
        failed_attempts_escalated=sum(s.failed_attempts for s in samples),
        failed_attempts_total=failed_total, client_errors=client_errors, samples=tuple(samples),
    )


def _paired(num: ArmTtft, den: ArmTtft, attr: str) -> list[float]:
    other = {s.conversation: s for s in den.samples}
    out = []
    for sample in num.samples:
        match = other.get(sample.conversation)
        value = ratio(getattr(sample, attr), getattr(match, attr) if match else None)
        if value is not None:
            out.append(value)
    return out


def ratios(arms: Mapping[str, ArmTtft]) -> list[dict[str, Any]]:
    """(d)/(e), (c)/(d), (a)/(d), (b)/(d), (f)/(ef), (c)/(f), (d)/(f) (those whose arms ran): ratio of
    medians, and the median of per-conversation ratios."""
    out = []
    for num_key, den_key in RATIOS:
        num, den = arms.get(num_key), arms.get(den_key)
        if num is None or den is None:
            continue
        paired_client, paired_emulated = _paired(num, den, "ttft_s"), _paired(num, den, "emulated_ttft_s")
        out.append({
            "ratio": f"({num_key})/({den_key})",
            "client_of_medians": ratio(num.median_s, den.median_s),
            "emulated_of_medians": ratio(num.median_emulated_s, den.median_emulated_s),
            "client_paired_median": percentile(paired_client, 50),
            "emulated_paired_median": percentile(paired_emulated, 50),
            "prefill_model_of_medians": ratio(num.median_prefill_model_s, den.median_prefill_model_s),
            "client_paired": paired_client,
            "emulated_paired": paired_emulated,
        })
    return out
