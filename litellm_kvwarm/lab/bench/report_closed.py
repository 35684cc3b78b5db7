"""Report sections of issue 16 (pure: dict in, lines out): the closed-loop arm's escalated turns, and
the interference of warms with live traffic on the slow group. A section whose results are absent
is left out (``[]``); every number comes from the results document (``closed_loop``, ``ttft``,
``interference``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...config_defaults import DEFAULT_WARM_MAX_PIECES, DEFAULT_WARM_PIECE_SHARE, DEFAULT_WARM_PIECE_TOKENS
from .report_cells import is_real, num, table

__all__ = ["closed_loop_section", "interference_section"]


def _pct(part: float | None, whole: float | None) -> str:
    return num(part / whole if part is not None and whole else None, ".0%")


def closed_loop_section(results: Mapping[str, Any]) -> list[str]:
    closed = results.get("closed_loop")
    if not closed or "f" not in closed:
        return []
    clock = "server" if is_real(results) else "emulated"
    arms = (results.get("ttft") or {}).get("arms") or {}
    f, floor = arms.get("f") or {}, arms.get("ef") or {}
    lines = [
        "## 1b. Closed loop: warm-ahead + reply-warm (arm f)", "",
        "Arms (a)-(e) replay the recorded history (open loop): the assistant messages a request sends back are the "
        "dataset's, whatever the backend produced, and the plugin's reply-warm is off in (c) and (d) "
        "(`KVWARM_REPLY_WARM=0`). Arm (f) is replayed **closed-loop**, as real clients work: each request sends back "
        "the reply the backend streamed (content, and tool calls with the ids it gave them), then the next recorded "
        "user message or tool results. The text stays real: every request names the recorded reply the emulator is to "
        "produce (`extra_body.kvwarm_bench_reply`) with `max_tokens` raised to fit it. The plugin runs with its "
        "defaults, reply-warm on: after each response it warms `slow` with the conversation plus that reply, so the "
        "escalated turn should find everything but its new message cached. Its floor (ef) is (f)'s own escalated "
        "request sent twice straight to `slow`.", "",
    ]
    fr = closed.get("floor_ratio_sharegpt") or {}
    frc = closed.get("floor_ratio_sharegpt_client") or {}
    lines += [f"(f) ÷ floor over the {fr.get('sessions', 0)} ShareGPT sessions: **{num(fr.get('of_medians'), '.2f')}×** "
              f"({clock}, ratio of medians; paired median {num(fr.get('paired_median'), '.2f')}×), client "
              f"{num(frc.get('of_medians'), '.2f')}×. Over all sessions (BFCL included): (f) median "
              f"{num(f.get('median_emulated_s'), '.2f')} s {clock}, floor {num(floor.get('median_emulated_s'), '.2f')} s.", ""]
    header = ["session", "source", "api", "request", "prompt", "cached", "cached %", "still prefilled",
              "warms before", "warm prefill", "never read", f"(f) {clock} s", f"(ef) {clock} s"]
    by_conv = {key: {s["conversation"]: s for s in (arms.get(key) or {}).get("samples", [])} for key in ("f", "ef")}
    rows = []
    for t in closed["f"]["turns"]:
        fs, es = by_conv["f"].get(t["conversation"]) or {}, by_conv["ef"].get(t["conversation"]) or {}
        rows.append([t["conversation"], t["source"], t.get("api", "chat"), str(t["request"]), f"{t['prompt_tokens']:,}",
                     f"{t['cached_tokens']:,}", num(t["cached_fraction"], ".0%"), f"{t['prefilled_tokens']:,}",
                     str(t["warms"]), f"{t['warm_prefill_tokens']:,}", f"{t['unpaid_tokens']:,}",
                     num(fs.get("emulated_ttft_s"), ".2f"), num(es.get("emulated_ttft_s"), ".2f")])
    lines += ["Per escalated turn of (f): the slow backend's prompt and cached tokens, what was still prefilled "
              "while the user waited, the warms logged on `slow` up to that request, the tokens they made `slow` "
              "compute (prompt − cached of each), and of those the ones the escalated turn did not read from the "
              "cache (*never read*):", "", *table(header, rows), ""]
    lines += ["Warm prefill never read by the escalated turn, all escalated turns (target ≤ 10% for (f)):", ""]
    totals_rows = []
    for key, name in (("d", "(d) open loop, warm-ahead"), ("f", "(f) closed loop, warm-ahead + reply-warm")):
        t = (closed.get(key) or {}).get("totals")
        if not t:
            continue
        totals_rows.append([name, str(t["turns"]), f"{t['prompt_tokens']:,}", f"{t['cached_tokens']:,}",
                            _pct(t["cached_tokens"], t["prompt_tokens"]), f"{t['prefilled_tokens']:,}",
                            f"{t['warm_prefill_tokens']:,}", f"{t['unpaid_tokens']:,}", num(t["unpaid_share"], ".1%")])
    lines += table(["arm", "escalated turns", "prompt", "cached", "cached %", "still prefilled", "warm prefill",
                    "never read", "never read ÷ warm prefill"], totals_rows)
    diverged = closed["f"]["totals"].get("replies_diverged", 0)
    lines += ["", f"Replies that differed from the recorded ones before the escalated turns of (f): {diverged} "
              "(a reply cut by the window or a wire format that rewrites a tool call's arguments)." if diverged else
              "", ""]
    return lines


def _order_text(o: Mapping[str, Any]) -> str:
    """How the slow emulator orders prefills in each arm (older results: the emulator's chunk rule for all)."""
    orders = o.get("arm_prefill_order") or {}
    chunk = (f"between chunks the waiting request with the lowest `priority` takes the GPU, so a live request "
             f"waits at most one warm chunk ({o['chunk_tokens']:,} ÷ {num(o.get('slow_prefill_tps'), ',.0f')} tok/s)")
    if not orders:
        return (f"{chunk[0].upper()}{chunk[1:]}. vLLM V1 does not do this (running requests are scheduled before "
                "waiting ones), so these figures are a lower bound for vLLM.")
    chunk_arms = [a for a, order in orders.items() if order == "between-chunks"]
    return ("With `--prefill-order running-first`, vLLM V1's rule (`Scheduler.schedule()` in "
            "`vllm/v1/core/sched/scheduler.py` schedules RUNNING requests before WAITING ones and preempts only when "
            "KV blocks run out), a warm whose prefill has started keeps the GPU to its end and `priority` only orders "
            "the waiting queue" + (f"; in {', '.join(f'`{a}`' for a in chunk_arms)} the emulator's other order: {chunk}"
                                   if chunk_arms else "") + ".")


def _arm_label(name: str, env: Mapping[str, str]) -> str:
    """A row's label from the arm's plugin env (older results: the name's own words)."""
    if env.get("KVWARM_WARM_AHEAD") == "0" or name == "no-warm":
        return "no warms (`KVWARM_WARM_AHEAD=0`)"
    priority = env.get("KVWARM_WARM_PRIORITY", "10")
    how = "FCFS" if priority == "0" else "at low priority"
    pieces, share = env.get("KVWARM_WARM_PIECE_TOKENS"), env.get("KVWARM_WARM_PIECE_SHARE")
    most = env.get("KVWARM_WARM_MAX_PIECES")
    if pieces == "0":
        shape = ", whole"
    elif share == "0" or "KVWARM_WARM_PIECE_SHARE" not in env and pieces is not None:  # fixed-size pieces
        shape = f", in {pieces or DEFAULT_WARM_PIECE_TOKENS}-token pieces"
    else:
        shape = f", in pieces of {float(share or DEFAULT_WARM_PIECE_SHARE):.0%} of the median live prompt (the defaults)"
    flags = (f"`KVWARM_WARM_PRIORITY={priority}`" + (f" `KVWARM_WARM_PIECE_TOKENS={pieces}`" if pieces is not None else "")
             + (f" `KVWARM_WARM_PIECE_SHARE={share}`" if share is not None else "")
             + (f" `KVWARM_WARM_MAX_PIECES={most}`" if most is not None else ""))
    if pieces != "0":  # the bound on their number makes a long warm's pieces larger than asked
        shape += ", as many as it takes" if most == "0" else f", at most {most or DEFAULT_WARM_MAX_PIECES} a warm"
    order = ", emulator `--prefill-order between-chunks`" if name.endswith("between-chunks") else ""
    return f"warms {how}{shape}{order} ({flags})"


def _held(arm: Mapping[str, Any]) -> str:
    held = arm.get("warm_request_prefill_tokens") or {}
    if not held.get("n"):
        return "–"
    return " / ".join(num(held.get(k), ",.0f") for k in ("p50", "p90", "max"))


def interference_section(results: Mapping[str, Any]) -> list[str]:
    inter = results.get("interference")
    if not inter:
        return []
    o = inter["options"]
    arms = inter["arms"]
    lines = [
        "## 5. Warms and live traffic on the slow group", "",
        f"Live requests on `slow` while warm-ahead fires at it. Fresh processes per arm, the same traffic: "
        f"{o['live_requests']} live requests, one every {o['live_interval_s']:g} emulated s, each its own session, "
        f"`model: slow` sent directly, streamed, `max_tokens` {o['live_max_tokens']}, a ShareGPT prefix of "
        f"{num(o['live_prompt_estimate']['min'], ',.0f')}-{num(o['live_prompt_estimate']['max'], ',.0f')} tokens "
        f"(a different conversation each); meanwhile a warm session every {o['warm_interval_s']:g} s on `fast` "
        f"({num(o['warm_session_prompt_estimate']['min'], ',.0f')}-{num(o['warm_session_prompt_estimate']['max'], ',.0f')} "
        "tokens, past the warm threshold), whose warm (`max_tokens=1`: the whole prompt at once, or in pieces "
        "where the arm says) lands on `slow`. The slow "
        f"emulator runs `{' '.join(o['slow_flags'])}`: one prefill at a time in {o['chunk_tokens']:,}-token chunks. "
        + _order_text(o) + " Reply-warm is off in every arm. *Server* = the "
        "emulator's own TTFT (arrival to first token, queueing included) in emulated seconds; *client* = real seconds "
        f"through the proxy (time scale {o['time_scale']}).", "",
    ]
    labels = {name: _arm_label(name, a.get("env") or {}) for name, a in arms.items()}
    rows = []
    for name, a in arms.items():
        s, c, q = a["server_ttft_s"], a["client_ttft_s"], a["queue_wait_s"]
        rows.append([labels.get(name, name), str(a["live"]), str(a["live_errors"]), num(s["p50"], ".2f"),
                     num(s["p90"], ".2f"), num(s["p99"], ".2f"), num(q["p99"], ".2f"), num(c["p50"], ".3f"),
                     num(c["p99"], ".3f"), f"{a['warms']} ({a['warms_failed']} failed)",
                     f"{a['warm_prefill_tokens']:,}", _held(a), ", ".join(str(p) for p in a["warm_priorities"]) or "–"])
    lines += table(["arm", "live", "errors", "server p50 s", "server p90 s", "server p99 s", "queue wait p99 s",
                    "client p50 s", "client p99 s", "warm requests on slow", "warm prefill tokens",
                    "prefill per warm request p50 / p90 / max", "warm priority"], rows)
    live_prompts = ((arms.get("no-warm") or {}).get("live_prompt_tokens") or {}).get("p50")
    if live_prompts:
        lines += ["", f"The live prompts' median on slow (its own count): {live_prompts:,.0f} tokens, so the defaults' "
                  f"pieces are {DEFAULT_WARM_PIECE_SHARE:.0%} of it, ~{DEFAULT_WARM_PIECE_SHARE * live_prompts:,.0f} "
                  "estimated tokens (*prefill per warm request*: what each warm request held the server for)."]
    ratios = inter.get("p99_ratio") or {}
    low, fcfs = ratios.get("low-priority") or {}, ratios.get("fcfs") or {}
    whole, chunks = ratios.get("low-priority-whole") or {}, ratios.get("low-priority-between-chunks") or {}
    fixed = ratios.get("low-priority-fixed") or {}
    low_env = (arms.get("low-priority") or {}).get("env")
    low_name = _arm_label("low-priority", low_env).split(" (`")[0].removeprefix("warms ") if low_env else "low priority"
    lines += ["", f"Live TTFT p99 ÷ the no-warm arm's: {low_name} **{num(low.get('server_ttft_s'), '.2f')}×** "
              f"(client {num(low.get('client_ttft_s'), '.2f')}×), FCFS {num(fcfs.get('server_ttft_s'), '.2f')}× "
              f"(client {num(fcfs.get('client_ttft_s'), '.2f')}×)"
              + (f"; in fixed 512-token pieces, at most 16 a warm (the defaults before pieces followed the live prompts) "
                 f"{num(fixed.get('server_ttft_s'), '.2f')}× (client {num(fixed.get('client_ttft_s'), '.2f')}×)" if fixed else "")
              + (f"; low priority, whole warms {num(whole.get('server_ttft_s'), '.2f')}× "
                 f"(client {num(whole.get('client_ttft_s'), '.2f')}×)" if whole else "")
              + (f"; low priority if a running prefill yielded at chunk boundaries "
                 f"{num(chunks.get('server_ttft_s'), '.2f')}× (client {num(chunks.get('client_ttft_s'), '.2f')}×)"
                 if chunks else "") + ". Alone: "
              "`python -m litellm_kvwarm.lab.bench --interference-only --out DIR`; `--no-interference` leaves it out.", ""]
    return lines
