"""Chaos: broken backends and a broken Redis change nothing a client sees, and cost at most the budget.

The two-proxy harness of ``differential_support`` (LiteLLM alone, LiteLLM with the plugin, the
same emulated backends, no recorders: faults are injected into the emulators themselves, see
``litellm_kvwarm.lab.emulator.faults``). Every case sends the same requests to both proxies, one
after the other, and asserts

* the same client-visible outcome: HTTP status and the error body's ``error.type`` (and, for
  generation faults, the same number of backend attempts on each emulator);
* added latency: the p99 (nearest rank; over 20 pairs, the largest) of the plugin proxy's
  latency minus LiteLLM alone's for the same request is at most the plugin's per-request
  budget ``KVWARM_REQUEST_BUDGET_MS`` (default 300 ms) plus a fixed tolerance of
  ``TOLERANCE_MS`` = 150 ms for scheduling noise on this 2-core machine. Each side's
  garbage-collection pauses during its request are taken out first (both proxies record them,
  ``gc_probe``): with no fault at all, a full collection of LiteLLM's heap stops either proxy
  for ~0.43 s about every 30 s under this load (measured), which would otherwise land on a
  random pair and fail or pass a case by chance. Both numbers are printed.

Cases: ``/v1/models`` and ``/tokenize`` that hang, drip one byte per 0.1 s (under any per-read
timeout), answer junk, 401 or 500, on the source deployment and on the escalation target; a Redis paused with SIGSTOP for
30 s (connections open, no replies) then resumed (warms and Redis-backed cooldowns come back);
a closed Redis port; the slow backend stopped (SIGSTOP, then killed) while warms would fire;
429 / 500 / hangs (LiteLLM's timeout) on ``fast``, transient and persistent, with and without
operator ``fallbacks``.

A ``/v1/models`` fault only matters before a window is known (a discovered window is cached), so
each such case has its own faulted emulator, faulted from its start, in its own model group. Both
proxies run with LiteLLM's own ``/v1/models`` refresh off (``disable_model_info_refresh``), so every
window is the plugin's own read, the path these faults test.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from litellm_kvwarm.lab.processes import BackendSpec, clear_faults, set_faults, start_emulator
from redis_support import RedisServer

from differential_gen import CHAT, Case
from differential_support import DifferentialStack, Outcome, added_latency_ms, p99, send, send_pair
from e2e_support import long_text

pytestmark = pytest.mark.e2e

BUDGET_MS = float(os.environ.get("KVWARM_REQUEST_BUDGET_MS", "300"))
TOLERANCE_MS = 150.0
"""Fixed allowance over the budget for scheduling noise on the shared 2-core machine (ms)."""
PAIRS = 20
FAST_WINDOW, SLOW_WINDOW = 16_384, 131_072
CHARS_PER_TOKEN = 4.7  # long_text() in cl100k tokens
ROUTER_TIMEOUT_S = 2
"""LiteLLM's per-attempt timeout in both proxies (``router_settings.timeout``), so hangs end fast."""
MODES = ("hang", "drip", "junk", "status:401", "status:500")
DRIP_INTERVAL_S = 0.1
"""A dripped answer's byte interval (s): shorter than any per-read timeout, so only a wall-clock
deadline ends the wait."""
REDIS_PAUSE_S = 30.0


def _mode_id(mode: str) -> str:
    return mode.replace("status:", "s")


def _models_groups(emulators: dict[str, object]) -> tuple[dict, list]:
    """Groups for the /v1/models cases: ``mf_<mode>`` (faulted source) → ``slow``;
    ``ms_<mode>`` (healthy fast) → ``mt_<mode>`` (faulted target)."""
    groups, fallbacks = {}, []
    for mode in MODES:
        m = _mode_id(mode)
        groups[f"mf_{m}"] = [BackendSpec.of(emulators[f"models-fast-{m}"], "fast-8b")]
        fallbacks.append({f"mf_{m}": ["slow"]})
        groups[f"ms_{m}"] = [BackendSpec.of(emulators["fast"], "fast-8b")]
        groups[f"mt_{m}"] = [BackendSpec.of(emulators[f"models-slow-{m}"], "slow-27b")]
        fallbacks.append({f"ms_{m}": [f"mt_{m}"]})
    return groups, fallbacks


@pytest.fixture(scope="module")
def chaos(tmp_path_factory):
    work = tmp_path_factory.mktemp("chaos")
    redis = RedisServer(work).start()
    extra: dict[str, object] = {}
    stack = None
    try:
        specs = {}
        for mode in MODES:
            m = _mode_id(mode)
            faults = {"models": mode, "drip_interval_s": DRIP_INTERVAL_S}
            specs[f"models-fast-{m}"] = ("fast-8b", FAST_WINDOW, faults)
            specs[f"models-slow-{m}"] = ("slow-27b", SLOW_WINDOW, faults)
        specs["down-slow"] = ("slow-27b", SLOW_WINDOW, None)
        specs["fast"] = ("fast-8b", FAST_WINDOW, None)  # a second healthy fast: ms_*, fd, fastfb
        with ThreadPoolExecutor(4) as pool:
            futures = {
                name: pool.submit(start_emulator, served, window, workdir=work, time_scale=0, faults=faults)
                for name, (served, window, faults) in specs.items()
            }
            errors = []
            for name, future in futures.items():
                try:
                    extra[name] = future.result()
                except Exception as exc:  # noqa: BLE001 - every started one is stopped below, then raised
                    errors.append(exc)
            if errors:
                raise errors[0]
        groups, fallbacks = _models_groups(extra)
        groups["fd"] = [BackendSpec.of(extra["fast"], "fast-8b")]
        groups["sd"] = [BackendSpec.of(extra["down-slow"], "slow-27b")]
        fallbacks.append({"fd": ["sd"]})
        # the same backend as fd/ms_*, with the operator's own fallbacks (429s, 500s, timeouts) to slow
        groups["fastfb"] = [BackendSpec.of(extra["fast"], "fast-8b")]
        stack = DifferentialStack(
            work, record=False,
            # warms whole: each case is a new conversation past the warm threshold, so every request fires a warm
            # and a reply-warm; in pieces, each piece's whole body goes through the proxy and the emulators on these
            # two shared cores (measured: +200 ms p50 on every pair, whatever the fault), which is not what these
            # tests time (the request budget under faults). Pieces have their own tests (test_warm_in_pieces.py).
            plugin_env={"KVWARM_REDIS_URL": redis.url, "KVWARM_REQUEST_BUDGET_MS": int(BUDGET_MS), "KVWARM_WARM_PIECE_TOKENS": 0},
            router_settings={"timeout": ROUTER_TIMEOUT_S, "fallbacks": [{"fastfb": ["slow"]}]},
            extra_groups=groups, extra_fallbacks=fallbacks, gc_probe=True,
            # the /v1/models faults are faults of the plugin's own window read: LiteLLM's read is off
            model_info_refresh=False,
        ).start()
        # one-time costs (imports, tokenizer tables, connection pools) are paid here, not in a case
        with httpx.Client(trust_env=False) as client:
            for case in mixed_cases("fast", "warmup", 8):
                send_pair(client, stack, case)
        yield {"stack": stack, "redis": redis, **extra}
    finally:
        if stack is not None:
            stack.stop()
        for process in extra.values():
            process.stop()
        redis.stop()


# ------------------------------------------------------------------ helpers

_COUNTER = iter(range(10**9))


def chat_case(group: str, tokens: int, max_tokens: int | None = 64, *, tag: str = "", session: str | None = None,
              stream: bool = False) -> Case:
    """A chat request of about ``tokens`` prompt tokens to ``group`` (a fresh session each time)."""
    n = next(_COUNTER)
    body: dict = {"model": group, "messages": [
        {"role": "system", "content": f"You are assistant {tag}-{n}."},
        {"role": "user", "content": long_text(max(1, int(tokens * CHARS_PER_TOKEN)))},
    ]}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if stream:
        body["stream"] = True
    return Case(0, n, CHAT, body, {"x-litellm-session-id": session or f"chaos-{tag}-{n}"})


def mixed_cases(group: str, tag: str, count: int = PAIRS) -> list[Case]:
    """Small, warm-zone (≈62-65%) and clamp-zone (≈88% + 4,096 out) requests in turn, then two
    over the window (≈125%) last: a rejection teaches the plugin the window, after which a broken
    discovery no longer matters, so the requests that fit come first."""
    shapes = [(400, 64), (int(0.65 * FAST_WINDOW), 64), (int(0.88 * FAST_WINDOW), 4_096), (int(0.62 * FAST_WINDOW), 64)]
    cases = [chat_case(group, *shapes[i % len(shapes)], tag=tag) for i in range(count - 2)]
    return cases + [chat_case(group, int(1.25 * FAST_WINDOW), 256, tag=tag) for _ in range(2)]


def run_pairs(stack: DifferentialStack, cases: list[Case], *, timeout_s: float = 60.0) -> list[tuple[Outcome, Outcome]]:
    """Each case to LiteLLM alone, then to the plugin's proxy, one pair after the other."""
    with httpx.Client(trust_env=False) as client:
        return [send_pair(client, stack, case, timeout_s=timeout_s) for case in cases]


@pytest.fixture(autouse=True)
def _no_leftover_faults(chaos):
    for emulator in (chaos["stack"].fast, chaos["stack"].slow, chaos["fast"]):
        clear_faults(emulator)


def describe(pairs) -> str:
    rows = []
    for i, (plain, plugin) in enumerate(pairs):
        rows.append(f"  #{i}: LiteLLM alone {plain.status} {plain.error_type} {plain.latency_s * 1000:.0f} ms | "
                    f"plugin {plugin.status} {plugin.error_type} {plugin.latency_s * 1000:.0f} ms")
    return "\n".join(rows)


def assert_same_and_within_budget(stack: DifferentialStack, pairs, label: str) -> None:
    """Same (status, error type) in every pair, and p99 added latency within budget + tolerance."""
    outcomes = [((p.status, p.error_type), (q.status, q.error_type)) for p, q in pairs]
    differing = [i for i, (a, b) in enumerate(outcomes) if a != b]
    added = added_latency_ms(pairs, stack)
    raw = added_latency_ms(pairs)
    worst = p99(added)
    print(f"\n[chaos] {label}: {len(pairs)} pairs, statuses {sorted({o[1][0] for o in outcomes}, key=str)}, "
          f"added latency p50 {sorted(added)[len(added) // 2]:.0f} ms, p99 {worst:.0f} ms "
          f"(limit {BUDGET_MS + TOLERANCE_MS:.0f} ms; p99 {p99(raw):.0f} ms before taking out GC pauses); "
          f"per pair {[round(a) for a in added]}")
    assert not differing, f"{label}: outcomes differ in pairs {differing}:\n{describe(pairs)}"
    assert worst <= BUDGET_MS + TOLERANCE_MS, (
        f"{label}: the plugin added p99 {worst:.0f} ms (budget {BUDGET_MS:.0f} ms + tolerance {TOLERANCE_MS:.0f} ms); "
        f"added per pair: {[round(a) for a in added]}\n{describe(pairs)}")


def backend_rows(emulator) -> list[dict]:
    return httpx.get(emulator.base_url + "/emulator/requests", timeout=10).json()["requests"]


def clear_rows(*emulators) -> None:
    for emulator in emulators:
        httpx.delete(emulator.base_url + "/emulator/requests", timeout=10).raise_for_status()


def warms_on(emulator) -> list[dict]:
    return [r for r in backend_rows(emulator) if r.get("max_tokens") == 1 and r.get("status") == 200]


def redis_dbsize(redis: RedisServer, timeout: float = 2.0) -> int:
    with socket.create_connection(("127.0.0.1", redis.port), timeout=timeout) as conn:
        conn.sendall(b"DBSIZE\r\n")
        reply = conn.recv(64)
    assert reply.startswith(b":"), reply
    return int(reply[1:].strip())


# ------------------------------------------------------------------ /v1/models and /tokenize

@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
def test_models_fault_on_the_source(chaos, mode):
    """The group's only deployment answers ``/v1/models`` with ``mode`` since it started."""
    m = _mode_id(mode)
    pairs = run_pairs(chaos["stack"], mixed_cases(f"mf_{m}", f"mf-{m}"))
    assert_same_and_within_budget(chaos["stack"], pairs, f"/v1/models {mode} on the source")


@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
def test_models_fault_on_the_escalation_target(chaos, mode):
    """The escalation target's only deployment answers ``/v1/models`` with ``mode`` since it started."""
    m = _mode_id(mode)
    pairs = run_pairs(chaos["stack"], mixed_cases(f"ms_{m}", f"ms-{m}"))
    assert_same_and_within_budget(chaos["stack"], pairs, f"/v1/models {mode} on the escalation target")


def _tokenize_cases(group: str, tag: str) -> list[Case]:
    """Requests where the plugin wants an exact count: the routing and safe estimates straddle the
    window, or the clamp would cut on the estimate."""
    shapes = [(int(0.97 * FAST_WINDOW), 64), (int(0.90 * FAST_WINDOW), 2_048), (int(0.80 * FAST_WINDOW), 4_096),
              (int(1.05 * FAST_WINDOW), 64)]
    return [chat_case(group, *shapes[i % len(shapes)], tag=tag) for i in range(PAIRS)]


@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
def test_tokenize_fault_on_the_source(chaos, mode):
    set_faults(chaos["stack"].fast, {"tokenize": mode, "drip_interval_s": DRIP_INTERVAL_S})
    try:
        pairs = run_pairs(chaos["stack"], _tokenize_cases("fast", f"tf-{_mode_id(mode)}"))
    finally:
        clear_faults(chaos["stack"].fast)
    assert_same_and_within_budget(chaos["stack"], pairs, f"/tokenize {mode} on the source")


@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
def test_tokenize_fault_on_the_escalation_target(chaos, mode):
    """Escalated requests near the target's own window (the clamp there wants an exact count)."""
    set_faults(chaos["stack"].slow, {"tokenize": mode, "drip_interval_s": DRIP_INTERVAL_S})
    shapes = [(int(0.97 * SLOW_WINDOW), 8_192), (int(1.3 * FAST_WINDOW), 64), (int(0.65 * FAST_WINDOW), 64),
              (int(1.05 * FAST_WINDOW), 64)]
    cases = [chat_case("fast", *shapes[i % len(shapes)], tag=f"ts-{_mode_id(mode)}") for i in range(PAIRS)]
    try:
        pairs = run_pairs(chaos["stack"], cases)
    finally:
        clear_faults(chaos["stack"].slow)
    assert_same_and_within_budget(chaos["stack"], pairs, f"/tokenize {mode} on the escalation target")


# ------------------------------------------------------------------ generation faults on fast

def _attempts(source, target, max_tokens: int) -> tuple[int, int]:
    """Generation requests asking for ``max_tokens`` (a value only one request uses) on the source
    and on the target emulator."""
    def count(emulator) -> int:
        return sum(r["endpoint"] == "/v1/chat/completions" and r.get("max_tokens") == max_tokens
                   for r in backend_rows(emulator))
    return count(source), count(target)


@pytest.mark.parametrize(
    "fault",
    [{"status": 429}, {"status": 429, "count": 1}, {"status": 500}, {"status": 500, "count": 1},
     {"hang": True}, {"hang": True, "count": 1}],
    ids=["429", "429-once", "500", "500-once", "timeout", "timeout-once"],
)
def test_generation_fault_on_fast_behaves_as_without_the_plugin(chaos, fault):
    """Same status, error type and number of attempts on each backend, with and without the plugin,
    for a group without operator fallbacks (``fast``) and one with ``fallbacks: [{"fastfb":
    ["slow"]}]``, side by side (separate source emulators; each group's requests ask for their own
    ``max_tokens``, which tells them apart on ``slow``)."""
    stack = chaos["stack"]
    sources = {"fast": stack.fast, "fastfb": chaos["fast"]}
    budgets = {"fast": 61, "fastfb": 62}  # tells the two groups' requests apart on slow
    seen: dict[tuple[str, str], tuple] = {}

    def one(client: httpx.Client, proxy, group: str, side: str) -> None:
        case = chat_case(group, 300, budgets[group], tag=f"gen-{side}")
        outcome = send(client, proxy, case, None, timeout_s=90)
        seen[(group, side)] = (outcome.status, outcome.error_type, outcome.latency_s)

    with httpx.Client(trust_env=False) as client:
        for side, proxy in (("plain", stack.without), ("plugin", stack.with_plugin)):
            clear_rows(stack.slow, *sources.values())
            for source in sources.values():
                set_faults(source, {"completions": fault})
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(lambda group: one(client, proxy, group, side), sources))
            for source in sources.values():
                clear_faults(source)  # releases any hang still held
            time.sleep(0.3)
            for group, source in sources.items():
                status, kind, latency = seen[(group, side)]
                seen[(group, side)] = (status, kind, _attempts(source, stack.slow, budgets[group]), latency)
    failures = []
    for group in sources:
        plain, plugin = seen[(group, "plain")], seen[(group, "plugin")]
        print(f"\n[chaos] completions {fault} on {group}: LiteLLM alone {plain[:3]} in {plain[3]:.1f}s; plugin "
              f"{plugin[:3]} in {plugin[3]:.1f}s  (status, error type, (attempts on the source, on slow))")
        if plugin[:3] != plain[:3]:
            failures.append(f"{group}: with the plugin {plugin[:3]}, LiteLLM alone {plain[:3]}")
    assert not failures, "; ".join(failures)


# ------------------------------------------------------------------ the escalation target down

def test_slow_backend_down_while_warms_would_fire(chaos):
    """The target of ``fd`` stops (SIGSTOP: connections accepted, nothing answered), then dies:
    warm-zone requests stay 200 from fast at no added cost; an overflowing request gets what
    LiteLLM alone gives."""
    stack, down = chaos["stack"], chaos["down-slow"]
    # the target is known and warmed before it goes down
    warmup = run_pairs(stack, [chat_case("fd", int(0.65 * FAST_WINDOW), tag="down-warmup")])
    assert warmup[0][1].status == 200
    deadline = time.monotonic() + 5
    while not warms_on(down) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert warms_on(down), "no warm reached the target before it went down (nothing would be tested)"
    os.kill(down.proc.pid, signal.SIGSTOP)
    try:
        pairs = run_pairs(stack, [chat_case("fd", int(0.62 * FAST_WINDOW) + 40 * i, tag="down-stopped")
                                  for i in range(PAIRS)])
    finally:
        os.kill(down.proc.pid, signal.SIGCONT)
    assert all(q.api_base and q.api_base.startswith(chaos["fast"].base_url) for _, q in pairs if q.status == 200)
    assert_same_and_within_budget(stack, pairs, "escalation target stopped (SIGSTOP), warm-zone requests")
    down.stop()
    pairs = run_pairs(stack, [chat_case("fd", int(0.62 * FAST_WINDOW) + 40 * i, tag="down-dead") for i in range(10)])
    assert_same_and_within_budget(stack, pairs, "escalation target dead, warm-zone requests")
    overflow = run_pairs(stack, [chat_case("fd", int(1.3 * FAST_WINDOW), tag="down-overflow") for _ in range(3)])
    outcomes = [((p.status, p.error_type), (q.status, q.error_type)) for p, q in overflow]
    print(f"\n[chaos] escalation target dead, overflowing requests: {outcomes}")
    assert all(a == b for a, b in outcomes), f"overflow with the target dead:\n{describe(overflow)}"


# ------------------------------------------------------------------ Redis

def test_redis_paused_loses_no_request_and_recovers(chaos):
    """SIGSTOP on redis-server for 30 s (the TCP port still accepts, nothing answers): every request
    during the pause is answered as LiteLLM alone answers it, within the budget; after SIGCONT the
    plugin uses Redis again (new cooldown keys) and warms keep firing."""
    stack, redis = chaos["stack"], chaos["redis"]
    warm_zone = int(0.65 * FAST_WINDOW)
    before = redis_dbsize(redis)
    run_pairs(stack, [chat_case("fast", warm_zone, tag="redis-before")])
    deadline = time.monotonic() + 5
    while redis_dbsize(redis) <= before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert redis_dbsize(redis) > before, "the plugin wrote no cooldown key to Redis (Redis not in use?)"

    os.kill(redis.proc.pid, signal.SIGSTOP)
    pairs = []
    paused_at = time.monotonic()
    try:
        while time.monotonic() - paused_at < REDIS_PAUSE_S:
            pairs += run_pairs(stack, [chat_case("fast", warm_zone, tag="redis-paused")])
            time.sleep(0.5)
    finally:
        os.kill(redis.proc.pid, signal.SIGCONT)
    assert len(pairs) >= 15, f"only {len(pairs)} requests in {REDIS_PAUSE_S:.0f} s"
    assert all(q.status == 200 for _, q in pairs), f"requests lost while Redis was paused:\n{describe(pairs)}"
    assert_same_and_within_budget(stack, pairs, f"Redis paused {REDIS_PAUSE_S:.0f} s")

    # recovery: new sessions write cooldown keys to Redis again, and warms fire
    clear_rows(stack.slow)
    resumed_keys = redis_dbsize(redis)
    recovered_after = None
    resumed_at = time.monotonic()
    while time.monotonic() - resumed_at < 45:
        pair = run_pairs(stack, [chat_case("fast", warm_zone, tag="redis-resumed")])[0]
        assert pair[1].status == 200
        if redis_dbsize(redis) > resumed_keys:
            recovered_after = time.monotonic() - resumed_at
            break
        time.sleep(1.0)
    print(f"\n[chaos] Redis resumed: cooldown keys written again after {recovered_after} s; "
          f"warms since SIGCONT: {len(warms_on(stack.slow))}")
    assert recovered_after is not None, "the plugin never used Redis again within 45 s of SIGCONT"
    assert warms_on(stack.slow), "no warm fired after Redis came back"


def test_redis_port_closed(chaos):
    """redis-server stopped: the port refuses connections. Runs last: it stops this module's Redis."""
    chaos["redis"].stop()
    sizes = [int(0.65 * FAST_WINDOW) if i % 2 else 400 for i in range(PAIRS)]
    pairs = run_pairs(chaos["stack"], [chat_case("fast", size, tag="redis-closed") for size in sizes])
    assert all(q.status == 200 for _, q in pairs), describe(pairs)
    assert_same_and_within_budget(chaos["stack"], pairs, "Redis port closed")
