"""``general_settings.custom_auth`` for end-to-end tests (mocked: LiteLLM's virtual keys need
PostgreSQL plus Prisma engines that cannot be downloaded here, see FIELD_NOTES). It attaches
the same identity a virtual key would: team, user, hashed token, allowed models.

Copied into the proxy's config directory by the tests; ``KVWARM_TEST_KEYS`` (JSON) maps raw
keys to ``UserAPIKeyAuth`` fields."""

import hashlib
import json
import os

from fastapi import HTTPException
from litellm.proxy._types import UserAPIKeyAuth


async def user_api_key_auth(request, api_key: str) -> UserAPIKeyAuth:
    keys = json.loads(os.environ.get("KVWARM_TEST_KEYS", "{}"))
    raw = (api_key or "").removeprefix("Bearer ").strip()
    fields = keys.get(raw)
    if fields is None:
        raise HTTPException(status_code=401, detail="unknown key")
    return UserAPIKeyAuth(api_key=raw, token=hashlib.sha256(raw.encode()).hexdigest(), **fields)
