"""``python -m litellm_kvwarm.lab.emulator``: serve one emulated vLLM model over HTTP (with
``--server``, another server's length limits and error shapes).

Parses the flags into an :class:`EmulatorConfig` (an invalid value exits with status 2 and a
message naming the flag), logs one line per request to stderr, and runs uvicorn until
SIGINT/SIGTERM (open requests get :data:`SHUTDOWN_GRACE_S` to finish, so a request held by a
fault never delays a stop). Without ``--api-key`` the environment variable ``VLLM_API_KEY`` (if
non-empty) is the key, as in vLLM.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence

from .config import (
    CHAT_TEMPLATE_MODES,
    DEFAULT_BLOCK_SIZE,
    DEFAULT_CHAT_TEMPLATE_MODE,
    DEFAULT_DECODE_TOKENS_PER_S,
    DEFAULT_HOST,
    DEFAULT_KV_CAPACITY_WINDOWS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_PREFILL_TOKENS_PER_S,
    DEFAULT_PREFILL_ORDER,
    DEFAULT_SCHEDULING_POLICY,
    DEFAULT_SERVER,
    DEFAULT_TIME_SCALE,
    DEFAULT_VLLM_VERSION,
    EmulatorConfig,
    parse_lora_module,
)
from .faults import FaultSet, parse_faults
from .scheduler import POLICIES, PREFILL_ORDERS
from .server_shapes import SERVERS

#: vLLM's environment variable for the API key (``--api-key`` wins over it).
API_KEY_ENV = "VLLM_API_KEY"
#: On SIGTERM, requests still open after this long (held by a hang fault, dripping) are cut.
SHUTDOWN_GRACE_S = 1.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m litellm_kvwarm.lab.emulator",
        description="Emulate one vLLM OpenAI-compatible server: context errors, prefix cache, timing "
                    "(--server: SGLang's, TGI's, llama.cpp's or LM Studio's length errors instead).",
    )
    parser.add_argument("--served-model-name", required=True, help="the only model name accepted")
    parser.add_argument("--max-model-len", type=int, required=True, help="context window, tokens")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--vllm-version", default=DEFAULT_VLLM_VERSION,
                        help="version to emulate; 0.18-0.31 and 0.32+ behave differently (default %(default)s)")
    parser.add_argument("--prefill-tokens-per-s", type=float, default=DEFAULT_PREFILL_TOKENS_PER_S,
                        help="uncached prompt tokens prefilled per second (default %(default)s)")
    parser.add_argument("--decode-tokens-per-s", type=float, default=DEFAULT_DECODE_TOKENS_PER_S,
                        help="output tokens per second per request (default %(default)s)")
    parser.add_argument("--time-scale", type=float, default=DEFAULT_TIME_SCALE,
                        help="multiplier on every simulated wait; 0 = no waiting (default %(default)s)")
    parser.add_argument("--block-size", type=int, default=DEFAULT_BLOCK_SIZE,
                        help="prefix-cache block, tokens (default %(default)s)")
    parser.add_argument("--kv-capacity-tokens", type=int, default=None,
                        help=f"prefix-cache capacity, tokens (default {DEFAULT_KV_CAPACITY_WINDOWS} x --max-model-len)")
    parser.add_argument("--default-max-tokens", type=int, default=DEFAULT_MAX_TOKENS,
                        help="output tokens when a request sets no max_tokens, finishing with 'stop' (default %(default)s)")
    parser.add_argument("--request-log", default=None, help="append one JSON line per request to this file")
    parser.add_argument("--render-response-format", action="store_true",
                        help="count a response_format schema as prompt tokens (vLLM does not)")
    parser.add_argument("--hide-max-model-len", action="store_true",
                        help="omit max_model_len from /v1/models, like servers that do not report a window")
    parser.add_argument("--api-key", nargs="+", action="extend", default=None, metavar="KEY",
                        help=f"require 'Authorization: Bearer KEY' on /v1/* as vLLM does (default: env {API_KEY_ENV})")
    parser.add_argument("--strict-fields", action="store_true",
                        help="refuse chat/text completion fields OpenAI's API does not define (e.g. cache_salt), "
                             "with OpenAI's 400")
    parser.add_argument("--lora-modules", nargs="+", action="extend", default=None, metavar="NAME=PATH",
                        help="LoRA adapters served like the base model: name=path or vLLM's JSON form; repeatable")
    parser.add_argument("--server", default=DEFAULT_SERVER, choices=SERVERS,
                        help="whose length checks and error shapes (status, body, stream error event) chat and "
                             "completions use (default %(default)s)")
    parser.add_argument("--admission-limit-tokens", type=int, default=None,
                        help="--server sglang: refuse longer prompts, as SGLang's max_req_input_len")
    parser.add_argument("--max-total-tokens", type=int, default=None,
                        help="--server tgi: limit on prompt + max_new_tokens (default --max-model-len)")
    parser.add_argument("--parallel", type=int, default=None,
                        help="--server llamacpp: slots; each gets --max-model-len // N tokens (default 1)")
    parser.add_argument("--loaded-context-tokens", type=int, default=None,
                        help="--server lmstudio: the loaded context length (default --max-model-len)")
    parser.add_argument("--scheduling-policy", default=DEFAULT_SCHEDULING_POLICY, choices=POLICIES,
                        help="vLLM's: fcfs refuses a request with priority != 0; priority prefills a lower "
                             "'priority' first (default %(default)s)")
    parser.add_argument("--max-num-batched-tokens", type=int, default=None,
                        help="prefill chunk, tokens; the scheduler may switch requests between chunks "
                             "(default: a whole prompt in one chunk)")
    parser.add_argument("--prefill-order", default=DEFAULT_PREFILL_ORDER, choices=PREFILL_ORDERS,
                        help="between chunks of a prefill: between-chunks lets the best waiting request take "
                             "the next chunk; running-first is vLLM V1's rule (a started prefill keeps the GPU "
                             "until done; priority orders only the waiting queue) (default %(default)s)")
    parser.add_argument("--chat-template-mode", default=DEFAULT_CHAT_TEMPLATE_MODE, choices=CHAT_TEMPLATE_MODES,
                        help="qwen3: render assistant reasoning_content only after the last user message, "
                             "and generate replies with reasoning (default %(default)s)")
    parser.add_argument("--faults", default=None, metavar="JSON",
                        help='faults from the start, as PUT /emulator/faults takes them, e.g. \'{"models": "hang"}\'')
    return parser


def _faults(text: str | None) -> FaultSet:
    if text is None:
        return parse_faults({})
    try:
        spec = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"--faults is not JSON: {exc}") from None
    try:
        return parse_faults(spec)
    except ValueError as exc:
        raise ValueError(f"--faults: {exc}") from None


def config_from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> EmulatorConfig:
    """The :class:`EmulatorConfig` of parsed flags; ``environ`` (default ``os.environ``) supplies
    ``VLLM_API_KEY`` when ``--api-key`` is absent.

    Raises:
        ValueError: a flag's value is invalid (the message names the flag).
    """
    environ = os.environ if environ is None else environ
    # vLLM: [key for key in (args.api_key or [envs.VLLM_API_KEY]) if key]
    api_keys = tuple(key for key in (args.api_key or [environ.get(API_KEY_ENV)]) if key)
    return EmulatorConfig(
        served_model_name=args.served_model_name,
        max_model_len=args.max_model_len,
        vllm_version=args.vllm_version,
        prefill_tokens_per_s=args.prefill_tokens_per_s,
        decode_tokens_per_s=args.decode_tokens_per_s,
        time_scale=args.time_scale,
        block_size=args.block_size,
        kv_capacity_tokens=args.kv_capacity_tokens,
        default_max_tokens=args.default_max_tokens,
        request_log_path=args.request_log,
        render_response_format=args.render_response_format,
        hide_max_model_len=args.hide_max_model_len,
        api_keys=api_keys,
        strict_fields=args.strict_fields,
        lora_modules=tuple(parse_lora_module(item) for item in args.lora_modules or ()),
        faults=_faults(args.faults),
        server=args.server,
        admission_limit_tokens=args.admission_limit_tokens,
        max_total_tokens=args.max_total_tokens,
        parallel=args.parallel,
        loaded_context_tokens=args.loaded_context_tokens,
        scheduling_policy=args.scheduling_policy,
        max_num_batched_tokens=args.max_num_batched_tokens,
        prefill_order=args.prefill_order,
        chat_template_mode=args.chat_template_mode,
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
    except ValueError as exc:
        parser.error(str(exc))

    import uvicorn

    from .app import create_app
    from .tokenizer import get_encoding

    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    get_encoding()  # load before reporting healthy, so the first request is not slow
    logging.getLogger("litellm_kvwarm.lab.emulator").info(
        "emulator: serving %r (max_model_len %d, %s %s) on http://%s:%d, time scale %g; ready when /health answers",
        config.served_model_name, config.max_model_len, config.server, config.vllm_version, args.host, args.port,
        config.time_scale)
    uvicorn.run(create_app(config), host=args.host, port=args.port, access_log=False, log_level="warning",
                timeout_graceful_shutdown=SHUTDOWN_GRACE_S)


if __name__ == "__main__":
    main()
