"""Reading the plugin's settings from ``KVWARM_*`` environment variables, through pydantic-settings.

:class:`EnvironSource` is pydantic-settings' own environment source (``env_prefix`` from the
settings' config) pointed at any mapping — ``os.environ`` by default, a plain ``dict`` in
tests — so that reading the environment is one call with no hidden global. What it reads is
exactly what the plugin read before pydantic-settings:

* only variables spelled ``KVWARM_<FIELD>`` in upper case (``kvwarm_window_ttl_s`` is not read);
* values reach the model's validators as the strings they are (no JSON decoding of
  ``KVWARM_ESCALATION_TARGETS``: its ``fast=slow,small=large`` syntax is the model's to parse);
* an empty value is a value (``KVWARM_REDIS_URL=`` is ``""``; ``KVWARM_OUTPUT_FLOOR_TOKENS=``
  is an error);
* variables that are no setting (``KVWARM_TEST_KEY``) are ignored;
* the legacy ``KVWARM_DISCOVERY_BUDGET_S`` (seconds) gives ``request_budget_ms`` when
  ``KVWARM_REQUEST_BUDGET_MS`` is not set.

:func:`settings_error` turns a pydantic ``ValidationError`` into :class:`SettingsError`, whose
message names each offending variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import EnvSettingsSource

if TYPE_CHECKING:
    from pydantic_settings import BaseSettings

__all__ = ["ENV_PREFIX", "LEGACY_DISCOVERY_BUDGET_S", "EnvironSource", "SettingsError", "env_name", "settings_error"]

ENV_PREFIX = "KVWARM_"
#: Before ``KVWARM_REQUEST_BUDGET_MS`` (milliseconds): the same budget in seconds. Still read.
LEGACY_DISCOVERY_BUDGET_S = ENV_PREFIX + "DISCOVERY_BUDGET_S"

_ERROR_PREFIX = "invalid litellm-kvwarm setting: "


class SettingsError(ValueError):
    """A setting has an invalid value; the message names its environment variable."""


def env_name(field: str) -> str:
    """Environment variable of a setting: ``output_floor_tokens`` -> ``KVWARM_OUTPUT_FLOOR_TOKENS``."""
    return ENV_PREFIX + field.upper()


class EnvironSource(EnvSettingsSource):
    """pydantic-settings' environment source over ``environ`` (default: ``os.environ``).

    Calling it returns ``{field name: raw string}`` for every setting whose variable is set
    (see the module docstring for what is read).

    Raises (when called):
        SettingsError: the legacy ``KVWARM_DISCOVERY_BUDGET_S`` is not a number.
    """

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str] | None = None) -> None:
        super().__init__(settings_cls, case_sensitive=False)
        self.environ = os.environ if environ is None else environ
        # Case-insensitive lookup (field names are lower case) over the upper-case spellings only.
        self.env_vars = {
            key.lower(): value
            for key, value in self.environ.items()
            if key.startswith(ENV_PREFIX) and key == key.upper()
        }

    def prepare_field_value(self, field_name: str, field: FieldInfo, value: Any, value_is_complex: bool) -> Any:
        """The raw string, undecoded: the model's validators parse every value (as before)."""
        return value

    def __call__(self) -> dict[str, Any]:
        values = super().__call__()
        legacy = self.environ.get(LEGACY_DISCOVERY_BUDGET_S)
        if legacy is not None and "request_budget_ms" not in values:
            try:
                values["request_budget_ms"] = str(round(float(legacy) * 1000))
            except ValueError:
                raise SettingsError(
                    f"{_ERROR_PREFIX}{LEGACY_DISCOVERY_BUDGET_S}: not a number: {legacy!r}"
                ) from None
        return values


def settings_error(exc: ValidationError) -> SettingsError:
    """One :class:`SettingsError` for every problem of ``exc``, each named by its variable
    (``KVWARM settings`` for a check across fields)."""
    problems = []
    for err in exc.errors():
        loc = err.get("loc") or ()
        where = env_name(str(loc[0])) if loc else "KVWARM settings"
        problems.append(f"{where}: {err['msg']}")
    return SettingsError(_ERROR_PREFIX + "; ".join(problems))
