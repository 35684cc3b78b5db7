#!/usr/bin/env python
"""Fit the token-estimate weights and regenerate docs/estimator.md (same as ``python -m litellm_kvwarm.calibration``)."""

from litellm_kvwarm.calibration.__main__ import main

if __name__ == "__main__":
    raise SystemExit(main())
