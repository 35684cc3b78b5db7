"""What the handler does once at load (:func:`litellm_kvwarm.startup.on_load`)."""

from __future__ import annotations

import gc
import logging

from litellm_kvwarm import startup
from litellm_kvwarm.config import Settings


def test_loading_leaves_no_full_collection_due_for_the_first_request():
    """The load ends with a full collection, so the long-lived objects it made do not make one due on the first
    request (a breaker: a 400 ms gen-2 pause there, the first request ~470 ms slower than LiteLLM alone's)."""
    junk = [[object()] for _ in range(50_000)]  # what loading LiteLLM and the plugin leaves behind, survivors included
    gc.collect(0)
    gc.collect(1)
    assert gc.get_count()[2] >= 1  # objects promoted since the last full collection
    log = logging.getLogger("litellm_kvwarm")
    kept = (list(log.handlers), log.propagate, log.level)
    before = gc.get_stats()[2]["collections"]
    try:
        startup.on_load(Settings(), "test")
        assert gc.get_stats()[2]["collections"] == before + 1
        assert gc.get_count()[1:] == (0, 0)
    finally:
        log.handlers[:], log.propagate, log.level = kept[0], kept[1], kept[2]
    del junk
