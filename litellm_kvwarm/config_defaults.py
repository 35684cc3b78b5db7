"""The settings' defaults (:class:`litellm_kvwarm.config.Settings`), one named constant each, with the
reason where a number is a choice. No logic."""

DEFAULT_OUTPUT_FLOOR_TOKENS = 256
DEFAULT_SAFE_CHARS_PER_TOKEN = 3.0
DEFAULT_ROUTING_CHARS_PER_TOKEN = 4.0
DEFAULT_WINDOW_TTL_S = 900.0
DEFAULT_REQUEST_BUDGET_MS = 300
DEFAULT_DISCOVERY_TIMEOUT_S = 5.0
DEFAULT_UNKNOWN_WINDOW_RETRY_S = 30.0
DEFAULT_WARM_THRESHOLD = 0.6
DEFAULT_WARM_COOLDOWN_S = 300.0
DEFAULT_WARM_MAX_CONCURRENCY = 4
DEFAULT_WARM_TIMEOUT_S = 120.0
DEFAULT_WARM_MEMORY_SESSIONS = 256
DEFAULT_WARM_QUEUE_SIZE = 1024
#: Bytes the bodies of one process's held warms (queued, parked, in flight) hold together: 256 MiB. A text warm body
#: is ~4 bytes a token (a 12k-token warm ~50 KB, :mod:`litellm_kvwarm.warm_bytes`), so 1024 of them (the count bound)
#: hold ~50 MB and this bound never binds them; it binds media: ~48 warms carrying a 5 MB image each, where the count
#: bound alone let ~1024 × 5.5 MB (5.6 GB, breaker B 2026-12) pile up while a target hangs. A quarter of a 1 GiB
#: worker's memory at most, beside LiteLLM's own.
DEFAULT_WARM_QUEUE_BYTES = 256 * 1024 * 1024
DEFAULT_WARM_TENANT_RATE = 120.0
DEFAULT_REDIS_MAX_CONNECTIONS = 16
#: Re-warm once a session grew by 5% of the window: a re-warm prefills only the growth, so a
#: small step costs requests, not prefill, and leaves less of the escalated prompt uncached.
DEFAULT_WARM_REWARM_STEP = 0.05
#: Priority of warms: any value > 0 sorts them behind live requests (vLLM's default 0) on a server
#: run with ``--scheduling-policy priority`` (vLLM ≥ 0.6.3: lower values are scheduled first).
DEFAULT_WARM_PRIORITY = 10
#: Tokens a warm piece adds at most: a started prefill keeps vLLM V1's GPU to its end, so a warm's
#: uncached part is sent as prefixes that each add at most this much (:mod:`litellm_kvwarm.warm_pieces`).
DEFAULT_WARM_PIECE_TOKENS = 512
#: A warm piece's size as a share of its target group's median live prompt (:mod:`litellm_kvwarm.warm_piece_size`):
#: a live request that waits for one piece waits ~5% of its own prefill.
DEFAULT_WARM_PIECE_SHARE = 0.05
#: Pieces of one warm at most: each piece's whole body passes through the proxy, so their number bounds the
#: proxy's work per warm (~32.5 whole warms at 64; :data:`litellm_kvwarm.warm_pieces.DEFAULT_MAX_PIECES`).
#: 64 lets a 12k-token warm (a first warm a few steps before a 16k window) go in ~190-token pieces, the size
#: :data:`DEFAULT_WARM_PIECE_SHARE` gives a group whose live prompts are ~4k tokens (48 made them ~290).
DEFAULT_WARM_MAX_PIECES = 64
#: Off (0) by default: with it on (e.g. 3), past the threshold a session with known growth steps is warmed only once
#: its size + this many of its largest step so far + the output floor overflow the window
#: (:func:`litellm_kvwarm.session_steps.lead_due`). Measured (docs/benchmarks.md section 6) it saves little: the
#: sessions that stop short stop near the window, and one whose first large step comes past the threshold (an
#: agent's tool result) escalates with nothing warmed above the threshold.
DEFAULT_WARM_LEAD_STEPS = 0
#: Tokens (routing estimate) a session's head (prompt fields + items up to its first user message,
#: :mod:`litellm_kvwarm.warm_head`) needs before it is warmed on first sight: ≈0.2 s of prefill saved on a
#: GPU prefilling ~10k tok/s (a 27B model), 2.7 s at the benchmark's emulated 750 tok/s.
DEFAULT_WARM_HEAD_TOKENS = 2048
#: Tokens of streamed reply between two decode warms (:mod:`litellm_kvwarm.decode_warm`): the escalated
#: turn is left at most this much of the reply to prefill (0.34 s at the benchmark's 750 tok/s).
DEFAULT_DECODE_WARM_TOKENS = 256

