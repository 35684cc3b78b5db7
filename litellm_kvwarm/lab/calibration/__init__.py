"""Calibration of the token estimates (offline tooling; never imported by the plugin at run time).

``python -m litellm_kvwarm.lab.calibration`` (or ``scripts/calibrate.py``) fits the weights of
:class:`litellm_kvwarm.tokens.CalibratedEstimator` and writes the report:

1. :mod:`.dataset`: real requests (ShareGPT V3 chat prefixes, BFCL tool-calling prefixes),
   split by conversation into a fit half and a held-out half, each with its content kind.
2. :mod:`.templates` + :mod:`.families`: each request rendered in a family's chat template
   and counted by that family's offline tokenizer (the truth).
3. :mod:`.fit`: quantile regression (linear program) of the safe and routing weights, plus
   margins checked on the fit half.
4. :mod:`.evaluate`: held-out metrics per family and content kind, against the seed ratios.
5. :mod:`.bench` and :mod:`.report`: cost per request, ``docs/estimator.md`` and its charts.

Needs the ``calibrate`` extra (numpy, scipy, matplotlib, tokenizer packages).
"""
