"""Plugin settings: one frozen object, every field with a default and an environment variable.

Each setting ``name`` is read from the environment variable ``KVWARM_<NAME>`` (upper case).
In a LiteLLM config the usual place for them is the ``environment_variables:`` section,
which LiteLLM exports before it imports callbacks::

    environment_variables:
      KVWARM_OUTPUT_FLOOR_TOKENS: "256"

An invalid value raises :class:`SettingsError` naming the variable; raised while LiteLLM
imports ``litellm_kvwarm.proxy_handler_instance`` it stops the proxy at start.

:class:`Settings` is a pydantic-settings ``BaseSettings`` (``env_prefix="KVWARM_"``); how the
environment is read is :mod:`litellm_kvwarm.config_env`, the README table and the start-up
line (:func:`settings_table`, :func:`describe`) are :mod:`litellm_kvwarm.config_render`.
``python -m litellm_kvwarm.config`` prints the README table.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from .config_env import ENV_PREFIX, EnvironSource, SettingsError, env_name, settings_error
from .config_render import describe, settings_table
from .config_defaults import (  # noqa: F401  (the defaults, importable from here too)
    DEFAULT_OUTPUT_FLOOR_TOKENS, DEFAULT_SAFE_CHARS_PER_TOKEN, DEFAULT_ROUTING_CHARS_PER_TOKEN,
    DEFAULT_WINDOW_TTL_S, DEFAULT_REQUEST_BUDGET_MS, DEFAULT_DISCOVERY_TIMEOUT_S,
    DEFAULT_UNKNOWN_WINDOW_RETRY_S, DEFAULT_WARM_THRESHOLD, DEFAULT_WARM_COOLDOWN_S,
    DEFAULT_WARM_MAX_CONCURRENCY, DEFAULT_WARM_TIMEOUT_S, DEFAULT_WARM_MEMORY_SESSIONS,
    DEFAULT_WARM_QUEUE_SIZE, DEFAULT_WARM_QUEUE_BYTES, DEFAULT_WARM_TENANT_RATE, DEFAULT_REDIS_MAX_CONNECTIONS,
    DEFAULT_WARM_REWARM_STEP, DEFAULT_WARM_PRIORITY, DEFAULT_WARM_PIECE_TOKENS, DEFAULT_WARM_PIECE_SHARE, DEFAULT_WARM_MAX_PIECES,
    DEFAULT_WARM_HEAD_TOKENS, DEFAULT_DECODE_WARM_TOKENS, DEFAULT_WARM_LEAD_STEPS,
)

__all__ = ["ENV_PREFIX", "Settings", "SettingsError", "describe", "env_name", "settings_table"]


class Settings(BaseSettings):
    """All plugin settings. Units are in the field names (``_tokens``, ``_s`` = seconds, ``_ms``).

    :meth:`from_env` reads them from ``KVWARM_*`` variables. Direct construction
    (``Settings(window_ttl_s=2)``) takes only the values given, defaults for the rest, and never
    the process environment: tests and callers that build settings are not changed by a
    ``KVWARM_*`` variable exported in their shell. Raises pydantic's ``ValidationError`` there.
    """

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="forbid", case_sensitive=True)

    proactive_routing: bool = Field(True, description="Route a request that cannot fit the group's window to its escalation target before dispatch.")
    clamp_output: bool = Field(True, description="Lower max_tokens / max_completion_tokens so prompt + output fits the chosen deployment.")
    keep_output_budget: bool = Field(False, description=(
        "Where a step of the chain is known to hold prompt + the whole output budget, never cut it on the source: the source "
        "trims or refuses it as without the plugin, a refusal escalates with the whole budget (as LiteLLM's "
        "context_window_fallbacks would). Off: the source serves it with the budget cut to fit (faster, shorter)."))
    exact_count: bool = Field(
        True,
        description="When the safe estimate would cut the requested output, count exactly with the backend's /tokenize.",
    )
    output_floor_tokens: int = Field(
        DEFAULT_OUTPUT_FLOOR_TOKENS,
        ge=1,
        description="Output tokens a request must have room for; routing needs estimate + floor to fit; clamps never go below it.",
    )
    clamp_margin_tokens: int = Field(0, ge=0, description="Tokens left unused by a clamp on an exact count.")
    estimator: str = Field(
        "calibrated",
        pattern=r"^(calibrated|ratio)$",
        description=(
            "'calibrated': character-class weights fitted on real data per tokenizer family (docs/estimator.md); "
            "'ratio': characters ÷ the two ratios below."
        ),
    )
    estimator_family: str = Field(
        "",
        description=(
            "Force the calibrated weights of one family (cl100k, o200k, qwen2.5, qwen3.6, deepseek, llama3, gemma3, any); "
            "empty: told from each deployment's served model name, 'any' when unknown."
        ),
    )
    learn_from_usage: bool = Field(
        True,
        description=(
            "Raise a model group's estimates, per tenant, by what its own responses' usage.prompt_tokens show, once 8 prompts "
            "of at least 256 tokens have been seen (a served tokenizer outside the calibrated families); never lowers them."
        ),
    )
    safe_chars_per_token: float = Field(
        DEFAULT_SAFE_CHARS_PER_TOKEN, gt=0, description="With KVWARM_ESTIMATOR=ratio: characters per token of the safe (over-)estimate used for clamping."
    )
    routing_chars_per_token: float = Field(
        DEFAULT_ROUTING_CHARS_PER_TOKEN,
        gt=0,
        description="With KVWARM_ESTIMATOR=ratio: characters per token of the routing (under-)estimate used for routing.",
    )
    window_ttl_s: float = Field(
        DEFAULT_WINDOW_TTL_S, gt=0, description="How long a discovered max_model_len is trusted, per deployment. At 300 or more the window LiteLLM's own /v1/models refresh keeps (every 300 s) is used first; below 300 the plugin reads the cards itself."
    )
    request_budget_ms: int = Field(
        DEFAULT_REQUEST_BUDGET_MS,
        ge=0,
        description=(
            "One wall-clock budget per request for all of the plugin's waits (window discovery, exact count, cooldown "
            "store), milliseconds, across every hook of the request; past it the request goes on as LiteLLM alone "
            "would send it (the lookups finish in the background). A lookup that failed or overran is not waited for "
            "again for KVWARM_UNKNOWN_WINDOW_RETRY_S. Replaces KVWARM_DISCOVERY_BUDGET_S (seconds), still read."
        ),
    )
    discovery_timeout_s: float = Field(
        DEFAULT_DISCOVERY_TIMEOUT_S, gt=0, description="Total wall-clock bound of one backend call (GET /v1/models, POST /tokenize, GET /metrics), body included; it runs in the background past the request budget."
    )
    unknown_window_retry_s: float = Field(
        DEFAULT_UNKNOWN_WINDOW_RETRY_S,
        gt=0,
        description=(
            "After a failed, overrunning or window-less discovery (or exact count), how long before that deployment "
            "is asked (and waited for) again."
        ),
    )
    warm_ahead: bool = Field(
        True, description="Warm the escalation target's prefix cache once a session nears the window (0 turns off every warm: ahead, reply and decode warms)."
    )
    warm_threshold: float = Field(DEFAULT_WARM_THRESHOLD, gt=0, le=1, description=(
        "Fraction of the group's window at which a session's routing estimate triggers a warm."))
    warm_cooldown_s: float = Field(DEFAULT_WARM_COOLDOWN_S, gt=0, description="At most one warm per session (per tenant) in this many seconds.")
    warm_limited: bool = Field(False, description=(
        "Also warm where LiteLLM limits what a warm would share: a target deployment whose rpm/tpm it enforces per minute "
        "or whose concurrent requests warms would crowd (over a tenth of them), a caller whose key, user, team or "
        "organization has a tpm limit. Warms then use what live traffic needs. Off: no warm there (skipped_rate_limited)."))
    warm_rewarm_step: float = Field(
        DEFAULT_WARM_REWARM_STEP,
        ge=0,
        le=1,
        description=(
            "A session that has grown by this fraction of the window since its last warm may warm again within the "
            "cooldown (a re-warm prefills only the growth: the earlier warm is cached); 0 = one warm per cooldown."
        ),
    )
    warm_max_concurrency: int = Field(
        DEFAULT_WARM_MAX_CONCURRENCY, ge=1, description="Warms in flight per proxy process; more wait in the queue (KVWARM_WARM_QUEUE_SIZE)."
    )
    warm_timeout_s: float = Field(DEFAULT_WARM_TIMEOUT_S, gt=0, description="A warm running longer is cancelled.")
    warm_queue_size: int = Field(DEFAULT_WARM_QUEUE_SIZE, ge=1, description=(
        "Warms waiting for a free slot per proxy process (one per session: a newer state of the session replaces "
        "its queued warm); past it the oldest queued warm is dropped. A warm that is dropped uses no cooldown."))
    warm_queue_bytes: int = Field(DEFAULT_WARM_QUEUE_BYTES, ge=1, description=(
        "Bytes the bodies of the warms a proxy process holds (queued, waiting or in flight) hold together, images and "
        "documents included; past it, a tenant holding more queued bytes gives up its oldest queued warms, else the warm "
        "is not queued (skipped_queue_bytes). Default: 256 MiB."))
    warm_tenant_rate: float = Field(
        DEFAULT_WARM_TENANT_RATE,
        ge=0,
        description=(
            "Warms sent per tenant per minute at most, shared through the cooldown store (caps what rotating session "
            "ids can cost); 0 = no cap."
        ),
    )
    reply_warm: bool = Field(True, description=(
        "After the source group answers a session past the threshold, warm the target with the request plus that reply as "
        "the client sends it back, so the escalated turn prefills only its new message; 0 turns it off."))
    warm_jump: bool = Field(True, description=(
        "Warm a session below the threshold when its size + its largest growth step so far + the output floor overflows "
        "the window (tool results); 0 turns it off."))
    warm_lead_steps: int = Field(DEFAULT_WARM_LEAD_STEPS, ge=0, description=(
        "Past the threshold, warm a session whose growth steps are known only once its size + this many of its largest "
        "step so far + the output floor overflow the window (one that stops short pays no warm; one whose first large "
        "step comes past the threshold escalates colder; a session seen once warms as before); 0 = at the threshold."))
    warm_head_tokens: int = Field(DEFAULT_WARM_HEAD_TOKENS, ge=0, description=(
        "The first time a session below the threshold is seen, warm its head (system, tools and the items up to its first "
        "user message: what every later request starts with) when that is at least this many tokens: a session that "
        "jumps past the window in one step still finds its head cached; 0 turns it off."))
    warm_priority: int = Field(DEFAULT_WARM_PRIORITY, description=(
        "vLLM priority of warms (extra_body.priority; lower is served first, live requests have 0): behind live traffic "
        "on servers run with --scheduling-policy priority; a deployment that refuses it gets warms without it; 0 = never sent."))
    warm_piece_tokens: int = Field(DEFAULT_WARM_PIECE_TOKENS, ge=0, description=(
        "A warm whose uncached part is larger is sent as successive prefixes of its conversation (cut at message "
        "boundaries, and inside long plain text), each adding at most this many tokens, the next after the previous "
        "returned: a live request waits for one piece at most (vLLM V1 runs a started prefill to its end); 0 = whole warms."))
    warm_piece_share: float = Field(DEFAULT_WARM_PIECE_SHARE, ge=0, le=1, description=(
        "Warm pieces at a group are this share of the median prompt of its recent live (not warm) requests, within [128, KVWARM_WARM_PIECE_TOKENS]: a live request waits ~this share of its own prefill for a piece; 0 = always KVWARM_WARM_PIECE_TOKENS."))
    warm_max_pieces: int = Field(DEFAULT_WARM_MAX_PIECES, ge=0, description=(
        "Pieces of one warm at most: a larger uncached part gets larger pieces (uncached / (this + 1)); the proxy "
        "handles each piece's whole body, so this bounds its work per warm (~32.5 whole warms at 64); 0 = no bound."))
    decode_warm_tokens: int = Field(DEFAULT_DECODE_WARM_TOKENS, ge=0, description=(
        "While a reply to a session past the warm threshold streams (chat completions), warm the target with the reply "
        "so far every this many tokens, so the escalated turn that sends it back prefills little of it; needs "
        "KVWARM_REPLY_WARM; 0 = off."))
    warm_memory_sessions: int = Field(
        DEFAULT_WARM_MEMORY_SESSIONS,
        ge=1,
        description="Sessions the in-memory cooldown store keeps (least recently used dropped).",
    )
    redis_url: str = Field(
        "",
        description="Redis for the shared cooldown; empty: REDIS_URL, else LiteLLM's REDIS_HOST/REDIS_PORT/REDIS_PASSWORD, else memory.",
    )
    redis_max_connections: int = Field(
        DEFAULT_REDIS_MAX_CONNECTIONS, ge=1, description="Connections the plugin's Redis pool opens at most, per proxy process."
    )
    hash_secret: str = Field(
        "",
        description=(
            "Key of the HMAC that turns tenant and session ids into the hashes kept in shared state (cooldown keys, "
            "warm metadata); empty: KVWARM_CACHE_SALT_SECRET, else LITELLM_SALT_KEY, else LITELLM_MASTER_KEY, else a "
            "random key per process (then replicas sharing a Redis do not share cooldowns)."
        ),
    )
    cache_salt_secret: str = Field(
        "",
        description="Secret for tenant prefix-cache isolation: set, every backend request carries cache_salt=HMAC(secret, tenant).",
    )
    session_pinning: bool = Field(
        True,
        description="Pin a session to one deployment of an escalation target group (rendezvous hash), so its warm is hit.",
    )
    backend_scrape_interval_s: float = Field(
        0.0,
        ge=0,
        description="Scrape each backend's /metrics (vllm:prefix_cache_*) this often, seconds; 0 = off.",
    )
    log_level: str = Field(
        "INFO",
        pattern=r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL)$",
        description="Level of the plugin's own log lines ([CONTEXT-ROUTE], [KV-WARM]) on stderr.",
    )
    escalation_targets: dict[str, str] = Field(
        default_factory=dict,
        description="Overrides router_settings.context_window_fallbacks: 'fast=slow,small=large' (source group=target group).",
    )

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("escalation_targets", mode="before")
    @classmethod
    def _parse_targets(cls, value: object) -> object:
        if isinstance(value, str):
            pairs: dict[str, str] = {}
            for item in filter(None, (part.strip() for part in value.split(","))):
                source, sep, target = item.partition("=")
                if not sep or not source.strip() or not target.strip():
                    raise ValueError(f"expected 'source=target[,source=target]', got {item!r}")
                pairs[source.strip()] = target.strip()
            return pairs
        return value

    @field_validator("estimator_family")
    @classmethod
    def _known_family(cls, value: str) -> str:
        if value:
            from .tokens import load_weights

            known = sorted(load_weights())
            if value not in known:
                raise ValueError(f"unknown family {value!r}; known: {', '.join(known)}")
        return value

    @model_validator(mode="after")
    def _check_bias(self) -> Settings:
        if self.estimator == "ratio" and self.safe_chars_per_token > self.routing_chars_per_token:
            raise ValueError(
                "safe_chars_per_token must not exceed routing_chars_per_token "
                "(the safe estimate must count at least as many tokens as the routing one)"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Direct construction reads only its arguments; the environment is :meth:`from_env`'s."""
        return (init_settings,)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``KVWARM_*`` variables of ``environ`` (default: ``os.environ``),
        through :class:`~litellm_kvwarm.config_env.EnvironSource`.

        Raises:
            SettingsError: a value does not parse or violates a bound; the message names the variable.
        """
        values = EnvironSource(cls, environ)()
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise settings_error(exc) from None


if __name__ == "__main__":  # python -m litellm_kvwarm.config
    print(settings_table())
