"""Escalation chains: where a request that outgrows its group may go, in the operator's order (pure).

Operators configure LiteLLM's ``router_settings.context_window_fallbacks`` with one or more
steps per group (``[{"fast": ["mid", "large"]}]``: small → medium → large, or local → cloud).
The plugin never cuts that chain to its first step:

* proactively, a request is sent to the **first** group of the chain whose window fits it
  (:func:`first_fitting`), and the rest of the chain after that group stays armed for the
  reactive backstop;
* on each reactive hop a group the request cannot fit is skipped (see
  :func:`litellm_kvwarm.reactive.decide_hop`);
* warm-ahead warms the group the next escalation would actually reach (:func:`next_step`).

``KVWARM_ESCALATION_TARGETS`` (``fast=slow``) overrides the chain of a group with one step.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

__all__ = ["escalation_chain", "escalation_targets", "fallbacks_with_source", "first_fitting", "generic_chain", "kept_entries", "next_step",
           "rest_after", "step_params"]


def escalation_chain(
    group: str, *, overrides: Mapping[str, str], context_window_fallbacks: Sequence[object] | None
) -> tuple[str, ...]:
    """The groups ``group`` escalates to, in order: the plugin's override (one step), else every
    entry LiteLLM's ``context_window_fallbacks`` lists for it (string or ``{"model": ...}``
    entries; the group itself and repeats are left out). Empty when it has none. O(entries before
    the group's)."""
    if group in overrides:
        target = overrides[group]
        return (target,) if target and target != group else ()
    for item in context_window_fallbacks or ():
        if isinstance(item, Mapping) and group in item:
            return _chain_of(group, item[group])
    return ()


def generic_chain(group: str, fallbacks: object, original: str | None = None) -> tuple[str, ...]:
    """The groups the generic ``fallbacks`` send a failed request of ``group`` to, as LiteLLM 1.108.7 reads them
    (``get_fallback_model_group_for_lookup_groups``): the first entry that names ``group``, else (on a hop, whose lookup
    groups end with the group the request was for: ``fallback_lookup_groups``) one that names ``original``, else the
    ``"*"`` entry (``router_settings.default_fallbacks`` is stored as one); ``group`` itself and repeats left out."""
    if not isinstance(fallbacks, Sequence) or isinstance(fallbacks, str):
        return ()
    maps = [item for item in fallbacks if isinstance(item, Mapping)]
    for name in (group, original) if original is not None else (group,):
        for item in maps:
            if name in item:
                return _chain_of(group, item[name])
    return next((_chain_of(group, item["*"]) for item in maps if "*" in item), ())


def kept_entries(fallbacks: object, replaced: str) -> tuple[dict[str, Any], ...]:
    """The router's generic ``fallbacks`` entries for every group but ``replaced`` (``"*"`` included), for a request
    whose own ``fallbacks`` the plugin writes for ``replaced``: LiteLLM reads a request's ``fallbacks`` instead of the
    router's, so without them a later hop of the walk (another group failing) would lose the operator's own steps.
    Empty when the router's are not a list of mappings."""
    if not isinstance(fallbacks, Sequence) or isinstance(fallbacks, str):
        return ()
    kept = ({k: v for k, v in item.items() if k != replaced} for item in fallbacks if isinstance(item, Mapping))
    return tuple(item for item in kept if item)


def escalation_targets(groups: Collection[str], *, overrides: Mapping[str, str],
                       context_window_fallbacks: Sequence[object] | None) -> set[str]:
    """Every group that some group of ``groups`` escalates to (the union of their
    :func:`escalation_chain`), in one pass over ``context_window_fallbacks``: O(entries), where a
    chain per group would be O(groups × entries) (6 ms for 200 groups with one entry each, on the
    path of every routed request)."""
    targets: set[str] = set()
    for group, target in overrides.items():
        if group in groups and target and target != group:
            targets.add(target)
    done: set[str] = set()  # a group's chain is the first entry that names it
    for item in context_window_fallbacks or ():
        if not isinstance(item, Mapping):
            continue
        for group, steps in item.items():
            if group in groups and group not in overrides and group not in done:
                done.add(group)
                targets.update(_chain_of(group, steps))
    return targets


def _chain_of(group: str, targets: object) -> tuple[str, ...]:
    """The steps of one ``context_window_fallbacks`` entry's list for ``group`` (see :func:`escalation_chain`). A string
    (``{"fast": "slow"}``) has none: LiteLLM 1.108.7 iterates it character by character (``run_async_fallback``), so
    LiteLLM alone never reaches ``slow`` through it (a breaker's proxies: the plugin read it as a step and served a
    key's requests on a paid group where LiteLLM alone answered fast's 400)."""
    out: list[str] = []
    for target in targets if isinstance(targets, Sequence) and not isinstance(targets, str) else ():
        if isinstance(target, Mapping):
            target = target.get("model")
        if isinstance(target, str) and target and target != group and target not in out:
            out.append(target)
    return tuple(out)


def step_params(group: str, context_window_fallbacks: object) -> dict[str, dict[str, Any]]:
    """Per-step overrides of ``group``'s chain: for each ``{"model": G, "max_tokens": 512, ...}``
    entry, ``{G: {"max_tokens": 512, ...}}`` (LiteLLM merges such an entry into the request when
    it falls back to G, so the plugin must apply it too when it routes there itself). Steps
    given as plain names have none; a malformed list has none."""
    if not isinstance(context_window_fallbacks, Sequence) or isinstance(context_window_fallbacks, str):
        return {}
    for item in context_window_fallbacks:
        if not isinstance(item, Mapping) or group not in item:
            continue
        targets = item[group]
        out: dict[str, dict[str, Any]] = {}
        for target in targets if isinstance(targets, Sequence) and not isinstance(targets, str) else ():
            if isinstance(target, Mapping) and isinstance(target.get("model"), str):
                params = {k: v for k, v in target.items() if k != "model" and isinstance(k, str)}
                if params and target["model"] not in out:
                    out[target["model"]] = params
        return out
    return {}


def first_fitting(windows: Sequence[tuple[str, int | None]], need_tokens: int) -> tuple[str | None, int | None]:
    """The first ``(group, window)`` of ``windows`` (chain order) whose window holds
    ``need_tokens`` (prompt + output floor), or whose window is unknown (the backstop covers a
    wrong guess). ``(None, largest known window)`` when none can hold it; ``(None, None)`` for
    an empty chain."""
    largest: int | None = None
    for group, window in windows:
        if window is None or window >= need_tokens:
            return group, window
        largest = window if largest is None else max(largest, window)
    return None, largest


def rest_after(chain: Sequence[str], group: str) -> tuple[str, ...]:
    """The steps of ``chain`` after ``group`` (the whole chain when ``group`` is not in it)."""
    chain = tuple(chain)
    return chain[chain.index(group) + 1 :] if group in chain else chain


def next_step(windows: Sequence[tuple[str, int | None]], current_window: int, output_floor_tokens: int) -> tuple[str | None, int | None]:
    """Where the next escalation of a session now served in a ``current_window``-token group will
    go: the first group of the remaining chain whose known window is larger than
    ``current_window + output_floor_tokens`` (a request that just overflows the current window
    fits there). ``(group, None)`` when the first candidate's window is unknown (the caller
    warms nothing blind), ``(None, None)`` when there is none."""
    for group, window in windows:
        if window is None:
            return group, None
        if window > current_window + output_floor_tokens:
            return group, window
    return None, None


def fallbacks_with_source(armed: object, target: str, steps: Sequence[Any]) -> list[dict[str, list[Any]]]:
    """LiteLLM's generic ``fallbacks`` of a request escalated to ``target``: the ones already
    ``armed`` for ``target`` (the backstop's own) when there are, else ``steps[:-1]`` (the
    operator's for ``target``), and the source group ``steps[-1]`` last, so a target that fails
    leaves the request to the group LiteLLM alone would have served it from."""
    own = next((item[target] for item in armed if isinstance(item, Mapping) and target in item), None) if isinstance(armed, list) else None
    chain = [*own, steps[-1]] if isinstance(own, list) else list(steps)
    return [{target: chain}]
