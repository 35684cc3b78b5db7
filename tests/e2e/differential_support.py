"""Two-proxy differential harness: the same requests through LiteLLM alone and LiteLLM with the plugin.

Processes (all real, from :mod:`litellm_kvwarm.lab.processes`): two emulated vLLM backends (``fast``
16,384 and ``slow`` 131,072 tokens by default, ``time_scale=0``), optionally one recording tap in
front of each, and two ``litellm --config`` proxies over the *same* backends with the same
``context_window_fallbacks: [{"fast": ["slow"]}]``: one with the plugin callback, one without.

**Recording.** The emulator's request log holds no body text, so a request cannot be matched to
the client request it came from. :data:`RECORDER_SCRIPT` runs :mod:`litellm_kvwarm.lab.bench.tap`
(a pass-through that keeps the emulator's log shape) with three more keys per entry:
``marker`` (the body's :data:`MARKER_FIELD`, which LiteLLM forwards to a ``hosted_vllm``
backend as an extra body field), ``max_tokens_field`` and ``max_completion_tokens``. The tap
reads whole non-streamed answers before passing them on, so it is used only where no backend
fault is injected (the differential run); the chaos tests talk to the emulators directly.

**Agent routes.** ``/v1/messages`` reaches a ``hosted_vllm`` backend as ``/v1/chat/completions``
(LiteLLM's bridge; the marker travels as an extra body field, as for chat); ``/v1/responses``
reaches the backend's own ``/v1/responses``, where LiteLLM forwards no unknown top-level field,
so the marker travels in the body's ``metadata`` (added when ``metadata`` is absent or a dict;
a case whose ``metadata`` is something else has no attributable backend rows). The recorder
also records ``/v1/responses``: ``max_tokens`` is ``max_output_tokens``, the counts come from
``usage.input_tokens`` / ``output_tokens`` / ``input_tokens_details.cached_tokens`` (of the body,
or of a stream's ``response.completed`` event), errors from ``error`` / ``response.failed``
events. LiteLLM sends no ``x-litellm-model-api-base`` header on a non-streamed ``/v1/messages``
answer; the deployment is then read from ``x-litellm-model-id`` (:attr:`DifferentialStack.model_bases`).
Error bodies: OpenAI's ``{"error": {...}}``, Anthropic's ``{"type": "error", "error": {...}}``
(both read by :func:`_error_fields`); stream errors: any event with an ``error`` member,
a Responses ``{"type": "error"}`` or ``response.failed`` event.

**Judging** (:func:`judge`, pure) compares one :class:`Outcome` per proxy plus what each
backend received, and returns a :class:`Verdict`: ``identical``, ``plugin_better`` (LiteLLM
alone answered a context overflow with a 400, the plugin served it from ``slow``) or
``plugin_worse`` (anything else that differs), each with a reason. Output budgets are compared
as *effective* budgets, ``min(max_tokens, window - prompt_tokens)`` on the backend that served
the request (tokens), so a clamp to what the window allows is not a loss and a cut below it is.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from litellm_kvwarm.lab.processes import (
    BackendSpec,
    ManagedProcess,
    child_env,
    free_port,
    proxy_config,
    start_emulator,
    start_proxy,
)
from litellm_kvwarm.lab.sse import iter_events

from differential_agents import AGENT_ENDPOINTS, MESSAGES, RESPONSES
from differential_gen import CHAT, FAST_WINDOW, SLOW_WINDOW, Case

__all__ = [
    "MARKER_FIELD",
    "OUTPUT_FLOOR_TOKENS",
    "RUN_ROUTER_SETTINGS",
    "Attempt",
    "Comparison",
    "DifferentialStack",
    "Outcome",
    "Verdict",
    "added_latency_ms",
    "judge",
    "p99",
    "run_cases",
    "send",
    "send_pair",
    "summarize",
]

# deep bodies (≈1,000 nested lists) must survive json.dumps here; the proxies parse them themselves
sys.setrecursionlimit(max(sys.getrecursionlimit(), 6_000))

MARKER_FIELD = "x_kvwarm_diff_marker"
"""Top-level body field carrying ``SEED:INDEX:P`` (plugin) or ``SEED:INDEX:L`` (LiteLLM alone)."""
OUTPUT_FLOOR_TOKENS = 256
"""The plugin escalates only when the prompt leaves fewer output tokens than this on the source."""
DEFAULT_TIMEOUT_S = 60.0
"""Client timeout per request (seconds); a request still unanswered then counts as a hang."""
RUN_ROUTER_SETTINGS = {"disable_cooldowns": True}
"""``router_settings`` of both proxies in a differential run. LiteLLM cools a deployment down on a
backend 404 (``_is_cooldown_required``: 401, 402, 404, 408, 429, 5xx), and a single Responses body
with an unknown ``previous_response_id`` gets one from vLLM (nothing is stored); the only ``fast``
deployment then answers every client 429 for a while, in each proxy at its own moments, which
would compare the proxies' timing instead of each body. The same setting in both keeps bodies
independent (measured: seed 20261130, 100 bodies, cases 31-99 all 429 without it)."""

RECORDER_SCRIPT = r'''
import json
import sys
import time
import uvicorn
from litellm_kvwarm.lab.bench import tap
from litellm_kvwarm.lab.emulator.request_log import RequestLog

MARKER = sys.argv[3]
RESPONSES = "/v1/responses"
if RESPONSES not in tap.RECORDED_PATHS:  # taps before Responses support
    tap.RECORDED_PATHS = tuple(tap.RECORDED_PATHS) + (RESPONSES,)
_entry = tap._Record.entry
_see_event = tap._Record.see_event


def see_event(self, payload):
    _see_event(self, payload)
    if self.endpoint != RESPONSES:
        return
    try:
        event = json.loads(payload)
    except ValueError:
        return
    if not isinstance(event, dict):
        return
    kind = event.get("type")
    response = event.get("response") if isinstance(event.get("response"), dict) else {}
    if response.get("usage") and not self.usage:
        self.take_usage(response["usage"])
    if self.error is None and kind == "error":
        self.error = str(event.get("message") or event)[:500]
    if self.error is None and kind in ("response.failed", "response.incomplete"):
        error = response.get("error") or response.get("incomplete_details") or kind
        self.error = str(error.get("message") if isinstance(error, dict) and error.get("message") else error)[:500]
    if self.ttft_s is None and kind == "response.output_text.delta":
        self.ttft_s = time.monotonic() - self.arrived


def marker_of(body):
    value = body.get(MARKER)
    if isinstance(value, str):
        return value
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get(MARKER), str):
        return metadata[MARKER]
    return None


def entry(self):
    row = _entry(self)
    body = self.body
    row["marker"] = marker_of(body)
    row["max_tokens_field"] = body.get("max_tokens")
    row["max_completion_tokens"] = body.get("max_completion_tokens")
    if self.endpoint == RESPONSES:  # a tap that reads usage in the chat shape has filled these already
        usage = self.usage or {}
        details = usage.get("input_tokens_details") or {}
        for key, value in (("prompt_tokens", usage.get("input_tokens")), ("completion_tokens", usage.get("output_tokens")),
                           ("cached_tokens", details.get("cached_tokens") if isinstance(details, dict) else None)):
            if row.get(key) is None:
                row[key] = value
        row["max_tokens"] = body.get("max_output_tokens")
    return row


tap._Record.entry = entry
tap._Record.see_event = see_event
uvicorn.run(tap.create_app(sys.argv[1], RequestLog(None)), host="127.0.0.1", port=int(sys.argv[2]),
            access_log=False, log_level="warning")
'''


GC_PROBE_SOURCE = '''"""Test-only sitecustomize (written by tests/e2e/differential_support.py): appends each
garbage-collection pause of this process that lasted 5 ms or more to $KVWARM_TEST_GC_LOG as
"START END GENERATION" (time.monotonic() seconds, one system-wide clock)."""
import gc
import os
import time

_PATH = os.environ.get("KVWARM_TEST_GC_LOG")
if _PATH:
    _began = [0.0]

    def _kvwarm_gc_probe(phase, info):
        if phase == "start":
            _began[0] = time.monotonic()
            return
        ended = time.monotonic()
        if ended - _began[0] >= 0.005:
            with open(_PATH, "a") as handle:
                handle.write("%.6f %.6f %d\\n" % (_began[0], ended, info["generation"]))

    gc.callbacks.append(_kvwarm_gc_probe)
'''


def start_recorder(upstream: ManagedProcess, name: str, workdir: Path) -> ManagedProcess:
    """A recording tap in front of ``upstream`` (see module docstring); returns it healthy."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    return ManagedProcess(
        f"recorder[{name}]", [sys.executable, "-c", RECORDER_SCRIPT, upstream.base_url, str(port), MARKER_FIELD],
        health_url=base_url + "/health", log_path=workdir / f"recorder-{name}-{port}.log", env=child_env(),
        cwd=workdir, health_timeout_s=30, base_url=base_url, port=port,
    ).start()


# ------------------------------------------------------------------ the stack

class DifferentialStack:
    """fast + slow emulators (optionally behind recorders) and two proxies, with and without the plugin.

    ``plugin_env``: ``KVWARM_*`` settings for the plugin's proxy (its config's
    ``environment_variables``); ``router_settings`` / ``litellm_settings``: merged into both
    configs; ``extra_groups``: more groups (name → deployments) in both model lists, with
    ``extra_fallbacks`` appended to ``context_window_fallbacks``; ``emulator_flags``: passed to
    both :func:`start_emulator` calls (``vllm_version``, ``faults``, …); ``gc_probe``: both
    proxies record their garbage-collection pauses (:data:`GC_PROBE_SOURCE`, read back by
    :meth:`gc_pause_s`): LiteLLM's heap makes a full collection stop a proxy for ~0.4 s about
    every 30 s under load, in both proxies alike, which is not the plugin's latency.
    ``model_info_refresh``: False turns LiteLLM's own ``/v1/models`` refresh off in both proxies
    (``disable_model_info_refresh``), so the plugin reads every window itself. Attributes: ``fast``,
    ``slow`` (emulators), ``fast_api``, ``slow_api`` (what the proxies call: a recorder or the
    emulator), ``with_plugin``, ``without``, ``windows`` ({api base → window tokens}),
    ``model_bases`` ({LiteLLM deployment id → api base ending in ``/v1``}).
    Use as a context manager; everything started is stopped on exit, also after a failed start.
    """

    def __init__(
        self,
        workdir: Path,
        *,
        record: bool = True,
        fast_window: int = FAST_WINDOW,
        slow_window: int = SLOW_WINDOW,
        plugin_env: Mapping[str, Any] | None = None,
        router_settings: Mapping[str, Any] | None = None,
        litellm_settings: Mapping[str, Any] | None = None,
        extra_groups: Mapping[str, Sequence[BackendSpec]] | None = None,
        extra_fallbacks: Sequence[Mapping[str, Sequence[str]]] = (),
        emulator_flags: Mapping[str, Any] | None = None,
        proxy_env: Mapping[str, str] | None = None,
        gc_probe: bool = False,
        model_info_refresh: bool = True,
    ) -> None:
        self.workdir = Path(workdir)
        self.record = record
        self.fast_window, self.slow_window = fast_window, slow_window
        self.plugin_env = dict(plugin_env or {})
        self.router_settings = dict(router_settings or {})
        self.litellm_settings = dict(litellm_settings or {})
        self.extra_groups = dict(extra_groups or {})
        self.extra_fallbacks = list(extra_fallbacks)
        self.emulator_flags = dict(emulator_flags or {})
        self.proxy_env = dict(proxy_env or {})
        self.gc_probe = gc_probe
        self.model_info_refresh = model_info_refresh
        self.gc_logs: dict[str, Path] = {}
        #: LiteLLM alone's proxy died during a run and was started again (:func:`run_cases`): its exit code
        #: and how many requests it lost, per restart
        self.baseline_crashes: list[dict[str, Any]] = []
        self._started: list[ManagedProcess] = []

    def _keep(self, process: ManagedProcess) -> ManagedProcess:
        self._started.append(process)
        return process

    def start(self) -> "DifferentialStack":
        try:
            flags = {"time_scale": 0, **self.emulator_flags}
            self.fast = self._keep(start_emulator("fast-8b", self.fast_window, workdir=self.workdir, **flags))
            self.slow = self._keep(start_emulator("slow-27b", self.slow_window, workdir=self.workdir, **flags))
            if self.record:
                self.fast_api = self._keep(start_recorder(self.fast, "fast", self.workdir))
                self.slow_api = self._keep(start_recorder(self.slow, "slow", self.workdir))
            else:
                self.fast_api, self.slow_api = self.fast, self.slow
            self.windows = {self.fast_api.base_url: self.fast_window, self.slow_api.base_url: self.slow_window}
            groups = {
                "fast": [BackendSpec(served_model_name="fast-8b", api_base=self.fast_api.base_url + "/v1")],
                "slow": [BackendSpec(served_model_name="slow-27b", api_base=self.slow_api.base_url + "/v1")],
                **self.extra_groups,
            }
            fallbacks = [{"fast": ["slow"]}, *self.extra_fallbacks]

            def config(callbacks: bool) -> dict[str, Any]:
                return proxy_config(
                    groups, callbacks=callbacks, fallbacks=fallbacks,
                    env_vars=self.plugin_env if callbacks else None,
                    router_settings=self.router_settings, litellm_settings=self.litellm_settings,
                    model_info_refresh=self.model_info_refresh,
                )

            envs = {"with_plugin": dict(self.proxy_env), "without": dict(self.proxy_env)}
            if self.gc_probe:
                probe_dir = self.workdir / "gc-probe"
                probe_dir.mkdir(parents=True, exist_ok=True)
                (probe_dir / "sitecustomize.py").write_text(GC_PROBE_SOURCE)
                for name, env in envs.items():
                    self.gc_logs[name] = self.workdir / f"gc-pauses-{name}.log"
                    env["PYTHONPATH"] = str(probe_dir)
                    env["KVWARM_TEST_GC_LOG"] = str(self.gc_logs[name])
            with ThreadPoolExecutor(2) as pool:
                with_future = pool.submit(start_proxy, config(True), workdir=self.workdir / "with-plugin",
                                          env=envs["with_plugin"])
                without_future = pool.submit(start_proxy, config(False), workdir=self.workdir / "without-plugin",
                                             env=envs["without"])
                errors = []
                for future, name in ((with_future, "with_plugin"), (without_future, "without")):
                    try:
                        setattr(self, name, self._keep(future.result()))
                    except Exception as exc:  # noqa: BLE001 - stop what started, then raise the first
                        errors.append(exc)
                if errors:
                    raise errors[0]
            self.model_bases = self._model_bases()
        except BaseException:
            self.stop()
            raise
        return self

    def _model_bases(self) -> dict[str, str]:
        """{LiteLLM deployment id → its ``api_base``} from the plugin proxy's ``/model/info``
        (both proxies hash the same model list to the same ids); empty when it cannot be read."""
        try:
            response = httpx.get(self.with_plugin.base_url + "/model/info", timeout=30,
                                 headers={"Authorization": f"Bearer {self.with_plugin.master_key}"})
            rows = response.json().get("data", []) if response.status_code == 200 else []
        except (httpx.HTTPError, ValueError):
            return {}
        return {str(row["model_info"]["id"]): str(row["litellm_params"].get("api_base"))
                for row in rows if isinstance(row, dict) and row.get("model_info", {}).get("id")}

    def stop(self) -> None:
        for process in reversed(self._started):
            process.stop()
        self._started.clear()

    def __enter__(self) -> "DifferentialStack":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def gc_pause_s(self, proxy: str, began: float, ended: float) -> float:
        """Seconds of ``proxy``'s (``"with_plugin"`` / ``"without"``) garbage-collection pauses that
        overlap ``[began, ended]`` (``time.monotonic()`` seconds); 0 without ``gc_probe``."""
        path = self.gc_logs.get(proxy)
        if path is None or not path.exists():
            return 0.0
        total = 0.0
        for line in path.read_text().splitlines():
            try:
                start, end, _ = line.split()
                total += max(0.0, min(float(end), ended) - max(float(start), began))
            except ValueError:
                continue
        return total

    def backend_rows(self) -> list[dict[str, Any]]:
        """Every recorded generation request on both backends, each with ``api_base`` added."""
        rows = []
        for api in (self.fast_api, self.slow_api):
            for row in httpx.get(api.base_url + "/emulator/requests", timeout=30).json()["requests"]:
                rows.append({**row, "api_base": api.base_url})
        return rows

    def clear_backends(self) -> None:
        for api in (self.fast_api, self.slow_api):
            httpx.delete(api.base_url + "/emulator/requests", timeout=30).raise_for_status()

    def prompt_tokens(self, case: Case, api_base: str) -> int | None:
        """The backend's own count of ``case``'s prompt (``/tokenize`` on the emulator behind
        ``api_base``), ``None`` when it cannot count it (always for agent cases: the backend
        counts LiteLLM's translation of the body, known only from a 200's ``usage``)."""
        emulator = self.fast if api_base == self.fast_api.base_url else self.slow
        body = case.body if isinstance(case.body, dict) else {}
        if case.endpoint in AGENT_ENDPOINTS:
            return None  # the backend sees LiteLLM's translation, not this body: only its usage counts
        if case.endpoint == CHAT:
            request = {"messages": body.get("messages"), "tools": body.get("tools")}
        else:
            prompt = body.get("prompt")
            if isinstance(prompt, list) and len(prompt) == 1:
                prompt = prompt[0]
            if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
                return len(prompt)
            request = {"prompt": prompt}
        try:
            response = httpx.post(emulator.base_url + "/tokenize", json=request, timeout=60)
        except httpx.HTTPError:
            return None
        return int(response.json()["count"]) if response.status_code == 200 else None


# ------------------------------------------------------------------ one request

@dataclass
class Outcome:
    """What one client saw: ``status`` (``None`` on timeout or connection error), ``error_type``
    (the error body's ``error.type``, or the type of an error event in a stream), ``error`` (its
    message, ≤ 300 chars), ``stream_error`` (a 200 stream that carried an error event),
    ``api_base`` (LiteLLM's ``x-litellm-model-api-base`` header: the deployment that answered),
    ``latency_s`` (request sent to last byte read), ``timed_out``, ``began`` (``time.monotonic()``
    when it was sent)."""

    status: int | None
    error_type: str | None = None
    error: str | None = None
    stream_error: bool = False
    api_base: str | None = None
    latency_s: float = 0.0
    timed_out: bool = False
    began: float = 0.0

    @property
    def ended(self) -> float:
        return self.began + self.latency_s

    @property
    def ok(self) -> bool:
        return self.status == 200 and not self.stream_error


def _error_fields(payload: Any) -> tuple[str | None, str | None]:
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            kind = error.get("type")
            message = error.get("message")
            return (None if kind is None else str(kind)), (None if message is None else str(message)[:300])
        if isinstance(error, str):
            return None, error[:300]
    return None, None if payload is None else str(payload)[:300]


def body_bytes(case: Case, marker: str | None) -> bytes:
    """What is sent for ``case``: its raw bytes, or its JSON body with ``MARKER_FIELD`` added (for
    ``/v1/responses`` also into ``metadata``: see module docstring)."""
    if case.raw is not None:
        return case.raw
    body = case.body
    if marker is not None and isinstance(body, dict):
        body = {**body, MARKER_FIELD: marker}
        if case.endpoint == RESPONSES and (body.get("metadata") is None or isinstance(body.get("metadata"), dict)):
            body["metadata"] = {**(body.get("metadata") or {}), MARKER_FIELD: marker}
    return json.dumps(body).encode("utf-8")


def stream_errors(events: Iterable[Any]) -> list[Any]:
    """The error events of a stream, in order: any event with an ``error`` member (OpenAI's
    ``{"error": ...}``, Anthropic's ``{"type": "error", "error": ...}``), a Responses
    ``{"type": "error", "message": ...}`` or ``response.failed`` (its ``response.error``)."""
    out = []
    for event in events:
        if not isinstance(event, dict):
            continue
        if "error" in event:
            out.append(event)
        elif event.get("type") == "error":
            out.append({"error": {"type": event.get("code") or "error", "message": event.get("message")}})
        elif event.get("type") == "response.failed":
            response = event.get("response") if isinstance(event.get("response"), dict) else {}
            out.append({"error": response.get("error") or {"type": "response.failed", "message": None}})
    return out


def send(
    client: httpx.Client, proxy: ManagedProcess, case: Case, marker: str | None, *, timeout_s: float = DEFAULT_TIMEOUT_S,
    model_bases: Mapping[str, str] | None = None,
) -> Outcome:
    """POST ``case`` to ``proxy`` (reading a stream to its end) and describe what came back.
    ``model_bases``: deployment id → api base, for answers without ``x-litellm-model-api-base``."""
    headers = {"Authorization": f"Bearer {proxy.master_key}", "Content-Type": "application/json", **case.headers}
    began = time.monotonic()
    try:
        with client.stream("POST", proxy.base_url + case.endpoint, content=body_bytes(case, marker), headers=headers,
                           timeout=httpx.Timeout(timeout_s)) as response:
            api_base = response.headers.get("x-litellm-model-api-base") or (model_bases or {}).get(
                response.headers.get("x-litellm-model-id", ""))
            is_sse = response.headers.get("content-type", "").startswith("text/event-stream")
            if not is_sse:
                content = response.read()
                outcome = Outcome(response.status_code, api_base=api_base)
                if response.status_code >= 400:
                    try:
                        payload = json.loads(content)
                    except ValueError:
                        payload = content.decode("utf-8", "replace")
                    outcome.error_type, outcome.error = _error_fields(payload)
            else:
                outcome = Outcome(response.status_code, api_base=api_base)
                errors = stream_errors(iter_events(response.iter_lines(), skip_invalid=True))
                if errors:  # the first error event the stream carried
                    outcome.stream_error = True
                    outcome.error_type, outcome.error = _error_fields(errors[0])
    except httpx.TimeoutException:
        return Outcome(None, error_type="client_timeout", latency_s=time.monotonic() - began, timed_out=True,
                       began=began)
    except httpx.HTTPError as exc:
        return Outcome(None, error_type=type(exc).__name__, error=str(exc)[:300], latency_s=time.monotonic() - began,
                       began=began)
    outcome.latency_s = time.monotonic() - began
    outcome.began = began
    return outcome


# ------------------------------------------------------------------ judging (pure)

@dataclass(frozen=True)
class Attempt:
    """One generation request a backend received for one client request (from a recorder row)."""

    api_base: str
    status: int
    budget: Any  # max_completion_tokens if set, else max_tokens (vLLM's precedence), as received
    prompt_tokens: int | None  # usage.prompt_tokens of a 200 (None for errors, streams without usage)
    completion_tokens: int | None
    error: str | None
    backend: str = ""  # "fast" / "slow"

    @classmethod
    def of(cls, row: Mapping[str, Any], backend: str = "") -> "Attempt":
        return cls(row["api_base"], int(row.get("status") or 0), row.get("max_tokens"), row.get("prompt_tokens"),
                   row.get("completion_tokens"), row.get("error"), backend)


@dataclass(frozen=True)
class Verdict:
    """``kind`` is ``identical``, ``plugin_better`` or ``plugin_worse``; ``reason`` says why."""

    kind: str
    reason: str


_OVERFLOW_PATTERNS = (
    re.compile(r"maximum context length", re.I),
    re.compile(r"cannot be greater than max_model_len", re.I),
    re.compile(r"context.{0,20}(length|window).{0,20}exceed", re.I),
)
_AT_LEAST_ONE = re.compile(r"max_tokens must be at least 1, got (-?\d+)")


def is_context_overflow(error: str | None, client_budget: Any) -> bool:
    """Whether an error text is a context overflow: the window's wording, or vLLM's "at least 1,
    got N" where the server computed N itself (the client sent no output budget)."""
    if not error:
        return False
    if any(p.search(error) for p in _OVERFLOW_PATTERNS):
        return True
    return bool(_AT_LEAST_ONE.search(error)) and client_budget is None


def client_budget(body: Any, endpoint: str = CHAT) -> Any:
    """The client's output budget as vLLM reads it: ``max_completion_tokens`` if set, else
    ``max_tokens``; ``max_tokens`` of a Messages body, ``max_output_tokens`` of a Responses body."""
    if not isinstance(body, dict):
        return None
    if endpoint == MESSAGES:
        return body.get("max_tokens")
    if endpoint == RESPONSES:
        return body.get("max_output_tokens")
    value = body.get("max_completion_tokens")
    return body.get("max_tokens") if value is None else value


def _fits_no_window(windows: Mapping[str, int], prompt_tokens: Callable[[str], int | None]) -> bool:
    """Whether the prompt alone is longer than every backend's window (each backend's own count)."""
    counts = {base: prompt_tokens(base) for base in windows}
    return bool(counts) and all(n is not None and n >= windows[base] for base, n in counts.items())


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def effective_budget(budget: Any, window: int, prompt_tokens: int) -> int:
    """Output tokens the backend can give: ``min(budget, window - prompt)`` (no budget → the room)."""
    room = window - prompt_tokens
    return min(budget, room) if _is_int(budget) else room


def serving_attempt(outcome: Outcome, attempts: Sequence[Attempt]) -> Attempt | None:
    """The backend request that produced a successful answer: the last 200 on the deployment
    LiteLLM named in ``x-litellm-model-api-base`` (any 200 when the header is missing). A warm
    (``max_tokens=1`` on another deployment) is never it, since it is not on that deployment
    or not the last there."""
    candidates = [a for a in attempts if a.status == 200]
    if outcome.api_base:
        named = [a for a in candidates if outcome.api_base.rstrip("/").startswith(a.api_base)]
        candidates = named or candidates
    return candidates[-1] if candidates else None


def judge(
    case_budget: Any,
    plain: Outcome,
    plugin: Outcome,
    plain_attempts: Sequence[Attempt],
    plugin_attempts: Sequence[Attempt],
    *,
    windows: Mapping[str, int],
    slow_api_base: str,
    fast_api_base: str,
    prompt_tokens: Callable[[str], int | None],
) -> Verdict:
    """Compare the two outcomes of one case (see module docstring).

    ``case_budget``: the client's output budget (:func:`client_budget`); ``windows``: api base →
    window (tokens); ``prompt_tokens(api_base)``: the true prompt length on that backend
    (tokens, ``None`` if unknown), asked only when budgets must be compared.
    """
    if plugin.timed_out and not plain.timed_out:
        return Verdict("plugin_worse", "plugin proxy hung (client timeout); LiteLLM alone answered "
                                       f"{plain.status}")
    if plain.status is None and plugin.status is None:
        return Verdict("identical", f"no answer from either ({plain.error_type} / {plugin.error_type})")
    if plain.status is None:
        return Verdict("plugin_better", f"LiteLLM alone gave no answer ({plain.error_type}); plugin {plugin.status}")
    if plugin.status is None:
        return Verdict("plugin_worse", f"plugin proxy connection failed ({plugin.error_type}); LiteLLM alone "
                                       f"answered {plain.status}")
    if (plugin.status or 0) >= 500 and (plain.status or 0) < 500:
        return Verdict("plugin_worse", f"5xx added: plugin {plugin.status} {plugin.error_type}: {plugin.error}; "
                                       f"LiteLLM alone {plain.status}")
    plugin_served = serving_attempt(plugin, plugin_attempts) if plugin.ok else None
    if plugin.status != plain.status or plugin.stream_error != plain.stream_error:
        overflow = (plain.status == 400 or plain.stream_error) and is_context_overflow(plain.error, case_budget)
        if overflow and plugin.ok and plugin_served is not None:
            # strictly better only with the client's own output budget (or that budget clamped to the room):
            # served by slow, or on fast with a budget over the window clamped to what fits
            asked = plain_attempts[0].budget if plain_attempts else case_budget
            prompt = plugin_served.prompt_tokens or prompt_tokens(plugin_served.api_base)
            room = None if prompt is None else windows[plugin_served.api_base] - prompt
            given = plugin_served.budget
            if asked is None:
                kept = given is None or (room is not None and _is_int(given) and given >= room)
            elif _is_int(asked):
                # LiteLLM alone gave no answer at all: an answer with a budget between the floor and the
                # client's own is strictly better, even when a retry without an exact count (the server
                # printed no prompt size, /tokenize out of budget) left it below the room
                kept = _is_int(given) and given <= asked and (given == asked or given >= min(asked, OUTPUT_FLOOR_TOKENS))
            else:
                kept = given == asked
            if not kept:
                return Verdict("plugin_worse", f"LiteLLM alone {plain.status} ({(plain.error or '')[:120]}); plugin 200 "
                                               f"from {plugin_served.backend} with output budget {given!r} instead of the "
                                               f"client's {asked!r} (room {room})")
            return Verdict("plugin_better", f"LiteLLM alone {plain.status} context overflow ({(plain.error or '')[:120]}); "
                                            f"plugin 200 from {plugin_served.backend}")
        if (plain.status or 0) >= 500 and plugin.status == 400 and is_context_overflow(plugin.error, case_budget):
            # LiteLLM alone failed on its own after the source's length refusal (a 5xx of its fallback path, no
            # answer), where the plugin answers that refusal: the request fits no backend's window, or neither
            # side's request ever reached slow (what the client gets from LiteLLM alone is no answer either)
            reached_slow = any(a.backend == "slow" for a in (*plain_attempts, *plugin_attempts))
            if _fits_no_window(windows, prompt_tokens) or not reached_slow:
                return Verdict("plugin_better", f"LiteLLM alone {plain.status} ({plain.error_type}: {(plain.error or '')[:120]}); "
                                                "plugin 400 context overflow (the prompt fits no window, or no side reached slow)")
        return Verdict("plugin_worse", f"status differs: LiteLLM alone {plain.status}"
                                       f"{' +stream error' if plain.stream_error else ''} "
                                       f"({plain.error_type}: {(plain.error or '')[:160]}); plugin {plugin.status}"
                                       f"{' +stream error' if plugin.stream_error else ''} "
                                       f"({plugin.error_type}: {(plugin.error or '')[:160]})")
    if not (plain.ok and plugin.ok):
        return Verdict("identical", f"both {plain.status}")
    plain_served = serving_attempt(plain, plain_attempts)
    if plain_served is None or plugin_served is None:
        return Verdict("plugin_worse" if plain_served is not None else "identical",
                       "no backend record of the plugin's successful request" if plain_served is not None
                       else "both 200, no backend record of either")
    # the client's budget must not be raised or dropped
    if _is_int(plain_served.budget) and (not _is_int(plugin_served.budget) or plugin_served.budget > plain_served.budget):
        return Verdict("plugin_worse", f"output budget raised or dropped: LiteLLM alone sent {plain_served.budget}, "
                                       f"plugin sent {plugin_served.budget!r}")
    if not _is_int(plain_served.budget) and plain_served.budget is not None and plugin_served.budget != plain_served.budget:
        return Verdict("plugin_worse", f"output budget changed: LiteLLM alone sent {plain_served.budget!r}, "
                                       f"plugin sent {plugin_served.budget!r}")
    plain_prompt = plain_served.prompt_tokens or prompt_tokens(plain_served.api_base)
    plugin_prompt = plugin_served.prompt_tokens or prompt_tokens(plugin_served.api_base)
    if plain_prompt is None or plugin_prompt is None:
        if plugin_served.budget == plain_served.budget:
            return Verdict("identical", "both 200, same budget (prompt length unknown)")
        return Verdict("plugin_worse", f"budget differs ({plain_served.budget} → {plugin_served.budget}) and the "
                                       "prompt length is unknown")
    plain_eff = effective_budget(plain_served.budget, windows[plain_served.api_base], plain_prompt)
    plugin_eff = effective_budget(plugin_served.budget, windows[plugin_served.api_base], plugin_prompt)
    if plugin_eff < plain_eff:
        return Verdict("plugin_worse", f"output cut: LiteLLM alone could give {plain_eff} tokens "
                                       f"(max_tokens {plain_served.budget}, prompt {plain_prompt}); plugin {plugin_eff} "
                                       f"(max_tokens {plugin_served.budget}, prompt {plugin_prompt}, window "
                                       f"{windows[plugin_served.api_base]})")
    fast_window = windows[fast_api_base]
    if (plain_served.api_base == fast_api_base and plugin_served.api_base == slow_api_base
            and plain_prompt + OUTPUT_FLOOR_TOKENS <= fast_window
            and (not _is_int(plain_served.budget) or plain_prompt + plain_served.budget <= fast_window)):
        return Verdict("plugin_worse", f"misrouted: prompt {plain_prompt} + max_tokens {plain_served.budget} fits "
                                       f"fast ({fast_window}) and LiteLLM alone served it there; plugin sent it to slow")
    if plain_served.api_base != plugin_served.api_base:
        return Verdict("identical", f"both 200; served by {'slow' if plugin_served.api_base == slow_api_base else 'fast'} "
                                    f"with the plugin (prompt {plugin_prompt}), budget kept")
    return Verdict("identical", "both 200")


# ------------------------------------------------------------------ a run

@dataclass
class Comparison:
    """One case through both proxies, judged."""

    case: Case
    plain: Outcome
    plugin: Outcome
    verdict: Verdict | None = None
    plain_attempts: list[Attempt] = field(default_factory=list)
    plugin_attempts: list[Attempt] = field(default_factory=list)
    plain_served_by: str | None = None  # "fast" / "slow" / None (no success)
    plugin_served_by: str | None = None
    plain_marker: str | None = None  # the marker LiteLLM alone's request carried (default: the case's "L")

    def to_json(self) -> dict[str, Any]:
        return {
            "case_id": self.case.case_id, "tags": list(self.case.tags), "endpoint": self.case.endpoint,
            "verdict": None if self.verdict is None else asdict(self.verdict),
            "plain": asdict(self.plain), "plugin": asdict(self.plugin),
            "plain_served_by": self.plain_served_by, "plugin_served_by": self.plugin_served_by,
            "plain_attempts": [asdict(a) for a in self.plain_attempts],
            "plugin_attempts": [asdict(a) for a in self.plugin_attempts],
        }


def _marker(case: Case, side: str) -> str:
    return f"{case.seed}:{case.index}:{side}"


def run_cases(
    stack: DifferentialStack,
    cases: Iterable[Case],
    *,
    concurrency: int = 8,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: Callable[[int, dict[str, int]], None] | None = None,
    batch: int = 200,
) -> list[Comparison]:
    """Send every case to LiteLLM alone, then to the plugin's proxy (``concurrency`` cases at a
    time), then judge each against what the backends recorded. Judged in batches of ``batch``
    cases (the recorders' logs are read and cleared after each); ``progress(done, counts)`` is
    called after each batch."""
    if not stack.record:
        raise ValueError("run_cases needs a stack with recorders (record=True)")
    done: list[Comparison] = []
    pending = list(cases)
    limits = httpx.Limits(max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2)
    with httpx.Client(limits=limits, trust_env=False) as client:
        def one(case: Case) -> Comparison:
            bases = getattr(stack, "model_bases", None)
            sides = []
            for proxy, tag in ((stack.without, "L"), (stack.with_plugin, "P")):
                outcome = send(client, proxy, case, _marker(case, tag), timeout_s=timeout_s, model_bases=bases)
                if outcome.status is None and outcome.error_type in STALE_CONNECTION and proxy.running:
                    # a pooled keep-alive connection the proxy's server closed as it was reused (uvicorn closes one
                    # idle 5 s): sent once more, on either side, as a client would; a proxy that drops the
                    # request again (or died) stays a failure of that side
                    outcome = send(client, proxy, case, _marker(case, tag), timeout_s=timeout_s, model_bases=bases)
                sides.append(outcome)
            return Comparison(case, *sides)

        restarts = 0
        for start in range(0, len(pending), batch):
            chunk = pending[start:start + batch]
            with ThreadPoolExecutor(concurrency) as pool:
                results = list(pool.map(one, chunk))
                if restarts < MAX_BASELINE_RESTARTS and not stack.without.running:
                    restarts += 1
                    _redo_baseline(stack, client, pool, results, timeout_s, f"L{restarts}")
            time.sleep(0.3)  # a recorder writes its row when the upstream answer has been relayed
            _judge_batch(stack, results)
            stack.clear_backends()
            done.extend(results)
            if progress is not None:
                progress(len(done), summarize(done)["counts"])
    return done


#: times one run restarts LiteLLM alone's proxy after its process died (a crash of LiteLLM itself: once, a
#: segfault inside libpython under LiteLLM 1.108.7, with no plugin loaded); a baseline that dies again is left dead
#: and the run's premise checks fail
MAX_BASELINE_RESTARTS = 2
#: ``Outcome.error_type`` of a request that met a connection the server had just closed (no answer at all)
STALE_CONNECTION = frozenset({"ReadError", "RemoteProtocolError"})
#: ``Outcome.error_type`` of a request whose proxy went away (httpx's transport errors; a client timeout is not one)
LOST = frozenset({"RemoteProtocolError", "ConnectError", "ReadError", "WriteError", "ConnectTimeout"})


def _redo_baseline(stack: DifferentialStack, client: httpx.Client, pool: ThreadPoolExecutor,
                   results: list[Comparison], timeout_s: float, tag: str) -> None:
    """LiteLLM alone's proxy died during a batch: record it (``stack.baseline_crashes``), start it again
    and send LiteLLM alone's side of every case it lost once more, under a new marker (the backends may
    have logged attempts of the lost request). The plugin's side is never sent again: a plugin proxy that
    dies stays a failure of the plugin."""
    crashed = stack.without.returncode
    stack.without.restart()
    lost = [c for c in results if c.plain.status is None and c.plain.error_type in LOST]
    stack.baseline_crashes.append({"returncode": crashed, "lost": len(lost)})
    bases = getattr(stack, "model_bases", None)

    def again(comparison: Comparison) -> None:
        marker = _marker(comparison.case, tag)
        comparison.plain = send(client, stack.without, comparison.case, marker, timeout_s=timeout_s, model_bases=bases)
        comparison.plain_marker = marker

    list(pool.map(again, lost))


def _judge_batch(stack: DifferentialStack, results: list[Comparison]) -> None:
    names = {stack.fast_api.base_url: "fast", stack.slow_api.base_url: "slow"}
    by_marker: dict[str, list[Attempt]] = {}
    for row in stack.backend_rows():
        if row.get("marker"):
            by_marker.setdefault(row["marker"], []).append(Attempt.of(row, names[row["api_base"]]))
    for comparison in results:
        case = comparison.case
        comparison.plain_attempts = by_marker.get(comparison.plain_marker or _marker(case, "L"), [])
        comparison.plugin_attempts = by_marker.get(_marker(case, "P"), [])
        cache: dict[str, int | None] = {}

        def prompt_tokens(api_base: str, case: Case = case, cache: dict = cache) -> int | None:
            if api_base not in cache:
                cache[api_base] = stack.prompt_tokens(case, api_base)
            return cache[api_base]

        for side, outcome, attempts in (("plain", comparison.plain, comparison.plain_attempts),
                                        ("plugin", comparison.plugin, comparison.plugin_attempts)):
            served = serving_attempt(outcome, attempts) if outcome.ok else None
            setattr(comparison, f"{side}_served_by", served.backend if served else None)
        comparison.verdict = judge(
            client_budget(case.body, case.endpoint), comparison.plain, comparison.plugin, comparison.plain_attempts,
            comparison.plugin_attempts, windows=stack.windows, slow_api_base=stack.slow_api.base_url,
            fast_api_base=stack.fast_api.base_url, prompt_tokens=prompt_tokens,
        )


def summarize(comparisons: Sequence[Comparison]) -> dict[str, Any]:
    """Counts and the listed differences: ``{"counts": {bodies, identical, plugin_better,
    plugin_worse, plugin_5xx, plain_5xx, escalated}, "by_endpoint": {endpoint: {bodies, identical,
    plugin_better, plugin_worse, both_200, same_status_error, streams}}, "plugin_better": [...],
    "plugin_worse": [...]}``."""
    counts = {"bodies": len(comparisons), "identical": 0, "plugin_better": 0, "plugin_worse": 0,
              "plugin_5xx": 0, "plain_5xx": 0, "both_200": 0, "escalated_by_plugin": 0, "slow_requests_plain": 0,
              "slow_requests_plugin": 0}
    better, worse = [], []
    by_endpoint: dict[str, dict[str, int]] = {}
    for c in comparisons:
        kind = c.verdict.kind if c.verdict else "unjudged"
        counts[kind] = counts.get(kind, 0) + 1
        row = by_endpoint.setdefault(c.case.endpoint, {"bodies": 0, "identical": 0, "plugin_better": 0,
                                                       "plugin_worse": 0, "both_200": 0, "same_status_error": 0,
                                                       "streams": 0})
        row["bodies"] += 1
        row[kind] = row.get(kind, 0) + 1
        row["both_200"] += c.plain.ok and c.plugin.ok
        row["same_status_error"] += kind == "identical" and not c.plain.ok and c.plain.status == c.plugin.status
        row["streams"] += isinstance(c.case.body, dict) and c.case.body.get("stream") is True
        counts["plugin_5xx"] += (c.plugin.status or 0) >= 500
        counts["plain_5xx"] += (c.plain.status or 0) >= 500
        counts["both_200"] += c.plain.ok and c.plugin.ok
        counts["escalated_by_plugin"] += c.plugin_served_by == "slow" and c.plain_served_by == "fast"
        counts["slow_requests_plain"] += sum(a.backend == "slow" for a in c.plain_attempts)
        counts["slow_requests_plugin"] += sum(a.backend == "slow" for a in c.plugin_attempts)
        entry = {"case": c.case.case_id, "endpoint": c.case.endpoint, "tags": list(c.case.tags),
                 "reason": c.verdict.reason if c.verdict else None}
        if kind == "plugin_better":
            better.append(entry)
        elif kind == "plugin_worse":
            worse.append(entry)
    return {"counts": counts, "by_endpoint": by_endpoint, "plugin_better": better, "plugin_worse": worse}


def save_failures(comparisons: Sequence[Comparison], path: Path) -> Path:
    """Write every plugin-worse comparison (with its full case, body included) as JSON lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for c in comparisons:
            if c.verdict and c.verdict.kind == "plugin_worse":
                handle.write(json.dumps({"case": c.case.to_json(), **c.to_json()}) + "\n")
    return path


def send_pair(
    client: httpx.Client, stack: DifferentialStack, case: Case, *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> tuple[Outcome, Outcome]:
    """``case`` to LiteLLM alone, then to the plugin's proxy, one after the other (no marker):
    ``(plain, plugin)``. Sequential, so the plugin's added latency is the difference."""
    plain = send(client, stack.without, case, None, timeout_s=timeout_s)
    plugin = send(client, stack.with_plugin, case, None, timeout_s=timeout_s)
    return plain, plugin


def added_latency_ms(
    pairs: Sequence[tuple[Outcome, Outcome]], stack: DifferentialStack | None = None
) -> list[float]:
    """Per pair, the plugin proxy's latency minus LiteLLM alone's (milliseconds); with a
    ``stack`` started with ``gc_probe``, each side's garbage-collection pauses during its
    request are taken out of its latency first."""
    out = []
    for plain, plugin in pairs:
        plain_s, plugin_s = plain.latency_s, plugin.latency_s
        if stack is not None:
            plain_s -= stack.gc_pause_s("without", plain.began, plain.ended)
            plugin_s -= stack.gc_pause_s("with_plugin", plugin.began, plugin.ended)
        out.append((plugin_s - plain_s) * 1000)
    return out


def p99(values: Sequence[float]) -> float:
    """The 99th percentile by nearest rank (with fewer than 100 values: the largest)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("p99 of no values")
    rank = max(1, -(-99 * len(ordered) // 100))  # ceil(0.99 n)
    return ordered[rank - 1]


def report_lines(summary: Mapping[str, Any], *, seed: int, limit: int = 40) -> list[str]:
    """Human-readable lines: the counts, then each difference with its reason (at most ``limit`` each)."""
    counts = summary["counts"]
    lines = [f"differential seed={seed}: " + ", ".join(f"{k}={v}" for k, v in counts.items())]
    for endpoint, row in sorted(summary.get("by_endpoint", {}).items()):
        lines.append(f"  {endpoint}: " + ", ".join(f"{k}={v}" for k, v in row.items()))
    for kind in ("plugin_better", "plugin_worse"):
        rows = summary[kind]
        if rows:
            lines.append(f"{kind} ({len(rows)}):")
            for row in rows[:limit]:
                lines.append(f"  [{row['case']}] {row['endpoint']} {' '.join(row['tags'])[:160]}\n      {row['reason']}")
            if len(rows) > limit:
                lines.append(f"  … {len(rows) - limit} more")
    return lines
