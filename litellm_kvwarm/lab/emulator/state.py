"""What one emulated server holds: its config, clock, engine, metrics, request log and faults."""

from __future__ import annotations

import logging
from typing import Any

from .clock import Clock
from .config import EmulatorConfig
from .engine import Engine
from .fault_state import FaultState
from .request_log import RequestLog
from .vllm_metrics import EmulatorMetrics

__all__ = ["EmulatorState", "logger"]

logger = logging.getLogger("litellm_kvwarm.lab.emulator")
"""The emulator's one logger: a line per request (no prompt text) and per fault change."""


class EmulatorState:
    """Everything one emulated server holds: config, clock, engine, metrics, request log, faults."""

    def __init__(self, config: EmulatorConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.metrics = EmulatorMetrics(config.served_model_name)
        self.engine = Engine(config, clock, self.metrics)
        self.log = RequestLog(config.request_log_path)
        self.faults = FaultState(config.faults)

    def record(self, entry: dict[str, Any]) -> None:
        """Append ``entry`` to the request log and write one line (no prompt text) to stderr."""
        self.log.append(entry)
        ttft = "-" if entry["ttft_s"] is None else f"{entry['ttft_s']:.3f}s"
        logger.info(
            "%s model=%s status=%s prompt=%s cached=%s completion=%s max_tokens=%s stream=%s ttft=%s%s",
            entry["endpoint"], entry["model"], entry["status"], entry["prompt_tokens"], entry["cached_tokens"],
            entry["completion_tokens"], entry["max_tokens"], entry["stream"], ttft,
            (f" error={entry['error']!r}" if entry["error"] else "") + (f" fault={entry['fault']}" if entry["fault"] else ""),
        )
