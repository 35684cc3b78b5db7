"""The plugin reads the windows LiteLLM's own ``/v1/models`` refresh discovered instead of reading
the same cards a second time (real ``litellm --config`` proxies, real emulated vLLM backends).

Each backend sits behind a counting front (a pass-through in this process) that counts the
``GET /v1/models`` requests it forwards, so who read the cards is seen on the wire:

* refresh on (LiteLLM's default): LiteLLM reads each backend's cards once at start-up; after that,
  a request that cannot fit ``fast`` reaches only ``slow`` and an overflowing output budget is
  clamped on ``fast``, with no ``/v1/models`` read at all (neither the pre-call nor the deployment
  hook fetches), and the plugin's gauge ``kvwarm_discovered_window_tokens`` still shows both windows;
* ``general_settings.disable_model_info_refresh: true``: nobody reads the cards until the first
  request, then the plugin reads them itself and routes the same way.
"""

from __future__ import annotations

import http.server
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from litellm_kvwarm.lab.processes import BackendSpec, proxy_config, start_emulator, start_proxy
from litellm_kvwarm.tokens import calibrated_estimator, estimate_request

from e2e_support import backend_requests, chat, clear_backends, long_text, messages_with_exact_tokens

pytestmark = pytest.mark.e2e

FAST_WINDOW, SLOW_WINDOW = 16_384, 131_072
SERVED = {"fast": "fast-8b", "slow": "slow-27b"}
ENV = {"KVWARM_REQUEST_BUDGET_MS": 2000, "KVWARM_WARM_AHEAD": 0}  # default TTL (900 s): LiteLLM's windows apply
OVERFLOW = {"model": "fast", "messages": [{"role": "user", "content": long_text(120_000)}], "max_tokens": 64}


class CountingFront:
    """A pass-through HTTP server in front of one backend that counts ``GET .../models`` requests."""

    def __init__(self, upstream: str):
        self.upstream, self.models_reads = upstream, 0
        front = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self):
                if self.command == "GET" and self.path.rstrip("/").endswith("/models"):
                    front.models_reads += 1
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
                answer = httpx.request(self.command, front.upstream + self.path, content=body, headers=headers, timeout=60)
                self.send_response(answer.status_code)
                self.send_header("content-type", answer.headers.get("content-type", "application/json"))
                self.send_header("content-length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_DELETE = _forward

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("discovery")
    # fast rejects prompt + max_tokens over its window (vLLM 0.18-0.31): the clamp case shows it
    emulators = {"fast": start_emulator("fast-8b", FAST_WINDOW, workdir=work, vllm_version="0.25.0", time_scale=0),
                 "slow": start_emulator("slow-27b", SLOW_WINDOW, workdir=work, time_scale=0)}
    fronts = {(mode, g): CountingFront(emulators[g].base_url) for mode in ("on", "off") for g in ("fast", "slow")}
    proxies = {}
    try:
        def launch(mode: str):
            groups = {g: [BackendSpec(served_model_name=SERVED[g], api_base=fronts[(mode, g)].base_url + "/v1")] for g in SERVED}
            config = proxy_config(groups, env_vars=ENV, callbacks=["litellm_kvwarm.proxy_handler_instance", "prometheus"],
                                  model_info_refresh=(mode == "on"))
            return start_proxy(config, workdir=work / f"proxy-{mode}")

        with ThreadPoolExecutor(2) as pool:
            futures = {mode: pool.submit(launch, mode) for mode in ("on", "off")}
            for mode, future in futures.items():
                proxies[mode] = future.result()
        yield {**emulators, "fronts": fronts, "proxies": proxies}
    finally:
        for proc in [*proxies.values(), *emulators.values()]:
            proc.stop()
        for front in fronts.values():
            front.close()


@pytest.fixture(autouse=True)
def _clean_logs(stack):
    clear_backends(stack["fast"], stack["slow"])


def reads(stack, mode: str) -> dict[str, int]:
    return {g: stack["fronts"][(mode, g)].models_reads for g in SERVED}


def plugin_windows(proxy) -> dict[str, float]:
    """``kvwarm_discovered_window_tokens`` by served model, from the proxy's /metrics."""
    text = httpx.get(proxy.base_url + "/metrics", headers={"Authorization": f"Bearer {proxy.master_key}"},
                     timeout=30, follow_redirects=True).text
    return {served: s.value for f in text_string_to_metric_families(text) for s in f.samples
            if s.name == "kvwarm_discovered_window_tokens" for served in SERVED.values() if served in s.labels["deployment"]}


def litellm_discovered(proxy) -> bool:
    """Whether LiteLLM's refresh stored a window for both deployments (its merged /model/info view)."""
    answer = httpx.get(proxy.base_url + "/model/info", headers={"Authorization": f"Bearer {proxy.master_key}"}, timeout=30)
    rows = answer.json().get("data", []) if answer.status_code == 200 else []
    found = {r.get("model_name"): (r.get("model_info") or {}).get("max_input_tokens") for r in rows}
    return found.get("fast") == FAST_WINDOW and found.get("slow") == SLOW_WINDOW


def test_the_overflow_means_what_the_tests_rely_on():
    floor = 256
    assert FAST_WINDOW < estimate_request(OVERFLOW, estimator=calibrated_estimator("fast-8b")).routing + floor <= SLOW_WINDOW


def test_litellm_s_windows_route_without_the_plugin_reading_the_cards(stack):
    proxy, deadline = stack["proxies"]["on"], time.monotonic() + 60
    while not (all(n >= 1 for n in reads(stack, "on").values()) and litellm_discovered(proxy)):
        assert time.monotonic() < deadline, f"LiteLLM's start-up refresh did not finish: {reads(stack, 'on')}"
        time.sleep(0.5)
    before = reads(stack, "on")

    response = chat(proxy, OVERFLOW)
    assert response.status_code == 200, response.text
    assert backend_requests(stack["fast"]) == []  # no attempt on fast
    assert [r["status"] for r in backend_requests(stack["slow"])] == [200]

    clear_backends(stack["fast"], stack["slow"])
    messages = messages_with_exact_tokens(stack["fast"], "fast-8b", 12_289)
    response = chat(proxy, {"model": "fast", "messages": messages, "max_tokens": 4_096})
    assert response.status_code == 200, response.text
    fast_log = backend_requests(stack["fast"])
    assert len(fast_log) == 1 and fast_log[0]["status"] == 200, fast_log  # clamped at the first attempt
    assert 4_000 <= fast_log[0]["max_tokens"] < 4_096 and fast_log[0]["prompt_tokens"] + fast_log[0]["max_tokens"] <= FAST_WINDOW

    assert reads(stack, "on") == before  # the plugin read no card: LiteLLM's windows served both hooks
    assert plugin_windows(proxy) == {"fast-8b": FAST_WINDOW, "slow-27b": SLOW_WINDOW}
    log = proxy.log_path.read_text(errors="replace")
    assert "model 'fast-8b': 16384 (litellm)" in log and "(discovered)" not in log


def test_with_litellm_s_refresh_off_the_plugin_reads_the_cards_itself(stack):
    proxy = stack["proxies"]["off"]
    assert reads(stack, "off") == {"fast": 0, "slow": 0}  # LiteLLM read nothing at start-up
    response = chat(proxy, OVERFLOW)
    assert response.status_code == 200, response.text
    assert backend_requests(stack["fast"]) == []
    assert [r["status"] for r in backend_requests(stack["slow"])] == [200]
    assert reads(stack, "off") == {"fast": 1, "slow": 1}  # the plugin's own reads, one per deployment
    assert plugin_windows(proxy) == {"fast-8b": FAST_WINDOW, "slow-27b": SLOW_WINDOW}
    log = proxy.log_path.read_text(errors="replace")
    assert "model 'fast-8b': 16384 (discovered)" in log and "(litellm)" not in log
