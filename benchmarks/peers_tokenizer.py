"""Write a small word-level tokenizer that the peer tools load from a folder, made here.

    python benchmarks/peers_tokenizer.py FOLDER      # run with a peer venv's python

The peers count prompt and output tokens with a Hugging Face tokenizer, which they would
otherwise fetch by name from the Hub. This one needs no network: one token per
whitespace-separated word, the way the loopback simulator counts tokens, so a prompt the peer
makes of N tokens reaches the simulator as N tokens and the simulator's streamed words count as
one token each. The vocabulary is the simulator's output words and 4,000 made-up words; any
other word is ``[UNK]``. Saved with ``transformers``' ``PreTrainedTokenizerFast`` so that
``AutoTokenizer.from_pretrained(FOLDER)`` (AIPerf, GuideLLM, vLLM) loads it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

SPECIAL = ["[UNK]", "[BOS]", "[EOS]", "[PAD]"]
WORDS = ("the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "on")


def build(folder: Path) -> None:
    vocabulary = [*SPECIAL, *WORDS, *(f"w{i}" for i in range(4000))]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocabulary)}, "[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]",
        pad_token="[PAD]", model_max_length=1 << 20,
    )  # fmt: skip
    # The chat tools format messages with it; one line per message, the content as is.
    fast.chat_template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    fast.save_pretrained(folder)
    ids = {f"{n}_token_id": vocabulary.index(f"[{n.upper()}]") for n in ("bos", "eos", "pad")}
    config = {"model_type": "gpt2", "vocab_size": len(vocabulary), **ids}
    (folder / "config.json").write_text(json.dumps(config))


if __name__ == "__main__":
    build(Path(sys.argv[1]))
