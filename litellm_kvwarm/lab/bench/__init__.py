"""Benchmarks of litellm-kvwarm (issue 8): what warm-ahead saves and what the plugin costs, against
what an operator would configure in LiteLLM instead, measured side by side in one run.

``python -m litellm_kvwarm.lab.bench [--scale emulator|vllm] [--out DIR] [--quick] [--no-interference |
--interference-only]`` writes
``bench-results.json``, ``benchmarks.md`` and ``bench-*.png`` (default ``docs/``; ``docs/vllm/`` for
``--scale vllm``).

Modules, one concept each (pure ones marked):

* :mod:`.scales` (pure): the emulator's production numbers and the real-vLLM tier's windows;
* :mod:`.arms` (pure): the arms a-f and the floors e, ef as proxy configurations (f: closed loop);
* :mod:`.sessions`: which ShareGPT / BFCL conversations are replayed;
* :mod:`.replay`: one arm on fresh processes (emulators, or taps over the real servers), and the floor;
* :mod:`.escalation`, :mod:`.accuracy`, :mod:`.economics`, :mod:`.closed_loop`, :mod:`.targets`,
  :mod:`.stats` (pure): the analysis of the replay;
* :mod:`.interference`: live requests on slow while warms arrive (no warms / FCFS / low priority);
* :mod:`.cost`: the plugin's per-request CPU work against ``litellm.token_counter``, in-process;
* :mod:`.throughput`: proxy latency/throughput with and without the plugin, interleaved;
* :mod:`.report` (pure; sections in ``report_ttft``, ``report_sections``, ``report_closed``),
  :mod:`.figures`: the Markdown report and the charts;
* :mod:`.runner`: orchestration; :mod:`.vllm_scale`: the real vLLM servers of ``--scale vllm``
  (prerequisites, one start per run, empty caches per arm); :mod:`.tap`: the recording pass-through
  that gives real vLLM the emulator's request log.
"""
