"""Settings of one emulated server (vLLM, or another server's limits and error shapes): one frozen
object, defaults as named constants.

Contract: :class:`EmulatorConfig` is validated on construction; an invalid value raises
``ValueError`` naming the setting (and its CLI flag). The CLI (``__main__``) builds one from
its flags; tests build one directly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .error_bodies import ErrorFamily, family_for_version
from .faults import FaultSet
from .scheduler import POLICIES, PREFILL_ORDERS
from .server_shapes import SERVERS, ServerLimits

__all__ = [
    "CHAT_TEMPLATE_MODES",
    "DEFAULT_BLOCK_SIZE",
    "DEFAULT_CHAT_TEMPLATE_MODE",
    "DEFAULT_DECODE_TOKENS_PER_S",
    "DEFAULT_HOST",
    "DEFAULT_KV_CAPACITY_WINDOWS",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_PREFILL_TOKENS_PER_S",
    "DEFAULT_PREFILL_ORDER",
    "DEFAULT_SCHEDULING_POLICY",
    "DEFAULT_SERVER",
    "DEFAULT_TIME_SCALE",
    "DEFAULT_VLLM_VERSION",
    "EmulatorConfig",
    "LoraModule",
    "parse_lora_module",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_VLLM_VERSION = "0.32.0"
DEFAULT_PREFILL_TOKENS_PER_S = 5000.0
DEFAULT_DECODE_TOKENS_PER_S = 50.0
DEFAULT_TIME_SCALE = 1.0
DEFAULT_BLOCK_SIZE = 16
#: Without --kv-capacity-tokens the prefix cache holds this many full windows.
DEFAULT_KV_CAPACITY_WINDOWS = 10
#: Output tokens when a request sets no max_tokens (vLLM would go to window - prompt or EOS).
DEFAULT_MAX_TOKENS = 16
#: The server whose length checks and error shapes are emulated (see ``server_shapes``).
DEFAULT_SERVER = "vllm"
#: vLLM's default ``--scheduling-policy`` (see ``scheduler``).
DEFAULT_SCHEDULING_POLICY = "fcfs"
DEFAULT_PREFILL_ORDER = "between-chunks"
#: How chat messages are rendered (see ``reasoning``): "plain" (Qwen2.5's template, reasoning never
#: rendered) or "qwen3" (Qwen3's rule for ``reasoning_content``; replies carry reasoning).
CHAT_TEMPLATE_MODES = ("plain", "qwen3")
DEFAULT_CHAT_TEMPLATE_MODE = "plain"
#: Limits that only one server has: field -> (CLI flag, the server that has it).
SERVER_ONLY_LIMITS = {
    "admission_limit_tokens": ("--admission-limit-tokens", "sglang"),
    "max_total_tokens": ("--max-total-tokens", "tgi"),
    "parallel": ("--parallel", "llamacpp"),
    "loaded_context_tokens": ("--loaded-context-tokens", "lmstudio"),
}


@dataclass(frozen=True)
class LoraModule:
    """One static LoRA adapter (vLLM's ``LoRAModulePath``): served as ``name``, loaded from ``path``."""

    name: str
    path: str
    base_model_name: str | None = None


def parse_lora_module(text: str) -> LoraModule:
    """One ``--lora-modules`` value as vLLM reads it: ``name=path``, or a JSON object
    ``{"name": ..., "path": ..., "base_model_name": ...}``.

    Raises:
        ValueError: neither form, or an empty name or path.
    """
    if "=" in text and "," not in text:
        name, path = text.split("=", 1)
        module = LoraModule(name.strip(), path.strip())
    else:
        try:
            fields = json.loads(text)
            module = LoraModule(**fields)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"--lora-modules: {text!r} is neither name=path nor a JSON object ({exc})") from None
    if not module.name or not module.path:
        raise ValueError(f"--lora-modules: {text!r} needs a non-empty name and path")
    return module


@dataclass(frozen=True)
class EmulatorConfig:
    """One emulated server.

    Attributes:
        served_model_name: the base model's name (``--served-model-name``); with
            ``lora_modules`` the adapters' names are accepted too.
        max_model_len: context window, tokens (``--max-model-len``).
        vllm_version: version reported by ``/version``; picks the error family.
        prefill_tokens_per_s: uncached prompt tokens prefilled per second.
        decode_tokens_per_s: output tokens generated per second, per request.
        time_scale: multiplier on every simulated wait; 0 = never wait.
        block_size: tokens per prefix-cache block.
        kv_capacity_tokens: prefix-cache capacity in tokens (``None`` = 10 windows).
        default_max_tokens: output tokens when a request sets no ``max_tokens``; reaching it
            finishes with ``"stop"``, standing in for the model's EOS.
        request_log_path: JSONL file the request log is appended to, if any.
        render_response_format: count a ``response_format`` schema as prompt tokens (vLLM does not).
        hide_max_model_len: leave ``max_model_len`` out of ``/v1/models``, like OpenAI-compatible
            servers that do not report a window (tests of the plugin's unknown-window path).
        api_keys: with any, paths under ``/v1`` need ``Authorization: Bearer <key>``
            (``--api-key``, else env ``VLLM_API_KEY``; see ``auth``).
        strict_fields: refuse chat/text completion fields OpenAI's API does not define, in
            OpenAI's wording (``--strict-fields``; see ``openai_fields``).
        lora_modules: static LoRA adapters (``--lora-modules``), listed after the base model
            and served with its window and engine.
        faults: faults applied from the start (``--faults``; see ``faults``).
        server: whose length checks and error shapes ``/v1/chat/completions`` and
            ``/v1/completions`` use (``--server``): ``"vllm"`` (the version family's, see
            ``error_bodies``), ``"sglang"``, ``"tgi"``, ``"llamacpp"`` or ``"lmstudio"`` (see
            ``server_shapes``). Other errors (model, JSON, fields) keep vLLM's shapes.
        admission_limit_tokens: SGLang's ``max_req_input_len``: longer prompts are refused
            (``--admission-limit-tokens``; server sglang only).
        max_total_tokens: TGI's limit on prompt + ``max_new_tokens`` (``--max-total-tokens``;
            server tgi only; ``None`` = ``max_model_len``).
        parallel: llama.cpp's slots; each has ``max_model_len // parallel`` tokens
            (``--parallel``; server llamacpp only; ``None`` = 1).
        loaded_context_tokens: LM Studio's loaded context length (``--loaded-context-tokens``;
            server lmstudio only; ``None`` = ``max_model_len``).

        scheduling_policy: vLLM's ``--scheduling-policy``: ``"fcfs"`` (a request with a non-zero
            ``priority`` is refused with vLLM's 400) or ``"priority"`` (lower ``priority`` prefills
            first; see ``scheduler``).
        max_num_batched_tokens: the prefill chunk, tokens (``--max-num-batched-tokens``; ``None``
            = a whole prompt in one chunk; see ``engine``).
        chat_template_mode: ``"plain"`` or ``"qwen3"`` (``--chat-template-mode``; see ``reasoning``).
        prefill_order: ``"between-chunks"`` or ``"running-first"`` (vLLM V1's rule: a started
            prefill keeps the GPU; ``--prefill-order``; see ``scheduler``).

    ``/v1/models`` advertises ``max_model_len`` whatever the lower limits above.
    """

    served_model_name: str
    max_model_len: int
    vllm_version: str = DEFAULT_VLLM_VERSION
    prefill_tokens_per_s: float = DEFAULT_PREFILL_TOKENS_PER_S
    decode_tokens_per_s: float = DEFAULT_DECODE_TOKENS_PER_S
    time_scale: float = DEFAULT_TIME_SCALE
    block_size: int = DEFAULT_BLOCK_SIZE
    kv_capacity_tokens: int | None = None
    default_max_tokens: int = DEFAULT_MAX_TOKENS
    request_log_path: str | None = None
    render_response_format: bool = False
    hide_max_model_len: bool = False
    api_keys: tuple[str, ...] = ()
    strict_fields: bool = False
    lora_modules: tuple[LoraModule, ...] = ()
    faults: FaultSet = field(default_factory=FaultSet)
    server: str = DEFAULT_SERVER
    admission_limit_tokens: int | None = None
    max_total_tokens: int | None = None
    parallel: int | None = None
    loaded_context_tokens: int | None = None
    scheduling_policy: str = DEFAULT_SCHEDULING_POLICY
    max_num_batched_tokens: int | None = None
    chat_template_mode: str = DEFAULT_CHAT_TEMPLATE_MODE
    prefill_order: str = DEFAULT_PREFILL_ORDER

    def __post_init__(self) -> None:
        checks = (
            (bool(self.served_model_name), "served_model_name (--served-model-name) must be non-empty"),
            (self.max_model_len >= 1, f"max_model_len (--max-model-len) must be >= 1, got {self.max_model_len}"),
            (self.prefill_tokens_per_s > 0, f"prefill_tokens_per_s (--prefill-tokens-per-s) must be > 0, got {self.prefill_tokens_per_s}"),
            (self.decode_tokens_per_s > 0, f"decode_tokens_per_s (--decode-tokens-per-s) must be > 0, got {self.decode_tokens_per_s}"),
            (self.time_scale >= 0, f"time_scale (--time-scale) must be >= 0, got {self.time_scale}"),
            (self.block_size >= 1, f"block_size (--block-size) must be >= 1, got {self.block_size}"),
            (self.kv_capacity_tokens is None or self.kv_capacity_tokens >= 0,
             f"kv_capacity_tokens (--kv-capacity-tokens) must be >= 0, got {self.kv_capacity_tokens}"),
            (self.default_max_tokens >= 1, f"default_max_tokens (--default-max-tokens) must be >= 1, got {self.default_max_tokens}"),
        )
        names = [self.served_model_name, *(m.name for m in self.lora_modules)]
        checks += (
            (all(self.api_keys), "api_keys (--api-key) must be non-empty strings"),
            (len(set(names)) == len(names),
             f"lora_modules (--lora-modules): names must differ from each other and from the served model, got {names}"),
        )
        checks += (
            (self.scheduling_policy in POLICIES,
             f"scheduling_policy (--scheduling-policy) must be one of {', '.join(POLICIES)}, got {self.scheduling_policy!r}"),
            (self.max_num_batched_tokens is None or (
                isinstance(self.max_num_batched_tokens, int) and not isinstance(self.max_num_batched_tokens, bool)
                and self.max_num_batched_tokens >= 1),
             f"max_num_batched_tokens (--max-num-batched-tokens) must be an integer >= 1, got {self.max_num_batched_tokens!r}"),
            (self.prefill_order in PREFILL_ORDERS,
             f"prefill_order (--prefill-order) must be one of {', '.join(PREFILL_ORDERS)}, got {self.prefill_order!r}"),
            (self.chat_template_mode in CHAT_TEMPLATE_MODES,
             f"chat_template_mode (--chat-template-mode) must be one of {', '.join(CHAT_TEMPLATE_MODES)}, "
             f"got {self.chat_template_mode!r}"),
        )
        checks += (
            (self.server in SERVERS, f"server (--server) must be one of {', '.join(SERVERS)}, got {self.server!r}"),
        )
        for name, (flag, server) in SERVER_ONLY_LIMITS.items():
            value = getattr(self, name)
            checks += (
                (value is None or self.server == server,
                 f"{name} ({flag}) needs server (--server) {server}, got {self.server!r}"),
                (value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 1),
                 f"{name} ({flag}) must be an integer >= 1, got {value!r}"),
            )
        checks += (
            (not isinstance(self.parallel, int) or self.parallel <= self.max_model_len,
             f"parallel (--parallel) must be <= max_model_len (--max-model-len) {self.max_model_len}, got {self.parallel}"),
        )
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        try:
            family_for_version(self.vllm_version)
        except ValueError as exc:
            raise ValueError(f"vllm_version (--vllm-version): {exc}") from None

    @property
    def family(self) -> ErrorFamily:
        """The vLLM behaviour family of :attr:`vllm_version`."""
        return family_for_version(self.vllm_version)

    @property
    def server_limits(self) -> ServerLimits:
        """The length limits of :attr:`server` (tokens), for ``server_shapes.check_server_lengths``."""
        return ServerLimits(
            self.server, self.max_model_len, admission_limit_tokens=self.admission_limit_tokens,
            max_total_tokens=self.max_total_tokens, parallel=self.parallel,
            loaded_context_tokens=self.loaded_context_tokens,
        )

    @property
    def model_names(self) -> tuple[str, ...]:
        """Every accepted ``model``: the served name, then each LoRA adapter's."""
        return (self.served_model_name, *(m.name for m in self.lora_modules))

    def lora(self, model: object) -> LoraModule | None:
        """The adapter served as ``model``, ``None`` for the base model (or an unknown name)."""
        return next((m for m in self.lora_modules if m.name == model), None)

    @property
    def kv_capacity_blocks(self) -> int:
        """Prefix-cache capacity in whole blocks."""
        tokens = self.kv_capacity_tokens
        if tokens is None:
            tokens = DEFAULT_KV_CAPACITY_WINDOWS * self.max_model_len
        return tokens // self.block_size
