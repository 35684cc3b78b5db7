#!/usr/bin/env python
"""Fit the token-estimate weights and regenerate docs/estimator.md (same as ``python -m litellm_kvwarm.lab.calibration``)."""

from litellm_kvwarm.lab.calibration.__main__ import main

if __name__ == "__main__":
    raise SystemExit(main())
