"""A LiteLLM callback for end-to-end tests: records, per successful call, what LiteLLM's spend
tracking reads (the standard logging payload's key and team fields) into ``spend-log.jsonl`` in
the proxy's working directory, plus whether the call was a plugin warm. Not a mock: it is
loaded by the real proxy as any operator's callback would be."""

import json
from pathlib import Path

from litellm.integrations.custom_logger import CustomLogger


class SpendRecorder(CustomLogger):
    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        payload = kwargs.get("standard_logging_object") or {}
        meta = payload.get("metadata") or {}
        params_meta = (kwargs.get("litellm_params") or {}).get("metadata") or {}
        row = {
            "model_group": payload.get("model_group"),
            "user_api_key_hash": meta.get("user_api_key_hash"),
            "user_api_key_team_id": meta.get("user_api_key_team_id"),
            "user_api_key_user_id": meta.get("user_api_key_user_id"),
            "kvwarm_warm": bool(params_meta.get("kvwarm_warm")),
            "metadata_keys": sorted(str(k) for k in params_meta),
            "session": params_meta.get("session_id"),
        }
        with Path("spend-log.jsonl").open("a") as f:
            f.write(json.dumps(row) + "\n")


proxy_handler = SpendRecorder()
