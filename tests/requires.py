"""Test dependencies that must be present: a missing one fails loudly instead of skipping.

``scripts/install.sh`` installs every one of these; a test run that lacks one is a broken
install, and a silent ``importorskip`` would turn it into a green run that tested less.
"""

from __future__ import annotations

import importlib.util

import pytest


def require(module: str, *, why: str = "") -> None:
    """Fail the test (or the collection, at module level) unless ``module`` is installed.

    Located with ``importlib.util.find_spec``, not imported (importing ``bfcl_eval`` whole
    would pull its CUDA dependencies, which the install leaves out on purpose).
    Raises ``pytest.fail.Exception`` (reported as a failure/collection error, never a skip).
    """
    if importlib.util.find_spec(module) is None:
        hint = f" ({why})" if why else ""
        pytest.fail(f"required test dependency {module!r} is missing{hint}: run `bash scripts/install.sh`", pytrace=False)
