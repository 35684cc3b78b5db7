"""The lab of litellm-kvwarm: everything that does not run inside the proxy.

Emulated vLLM backends (:mod:`.emulator`), the process harness (:mod:`.processes`), real
conversations (:mod:`.datasets`), the demo (:mod:`.demo`), benchmarks (:mod:`.bench`), the
estimator's calibration (:mod:`.calibration`), charts, real vLLM servers for the second test tier,
and the ``kvwarm`` command. Installed with the extra: ``pip install 'litellm-kvwarm[lab]'`` (BFCL's
data: ``pip install --no-deps bfcl-eval==2026.3.23``). It may import the plugin; the plugin
(``litellm_kvwarm/*.py``) never imports it (``tests/test_layout.py``).
"""
