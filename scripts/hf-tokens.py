"""Writes demos/attention/tests/hf_tokens.json: test sentences and the ids Hugging Face's own
tokenizer (the `tokenizers` package reading the model's tokenizer.json, as transformers' fast
BERT tokenizer does) gives them, [CLS] and [SEP] included. The attention demo's tokenizer is
tested against it. Run where the model and `tokenizers` are present:

    python3 scripts/hf-tokens.py [models/all-minilm-l6-v2]
"""
import json
import os
import sys

from tokenizers import Tokenizer

SENTENCES = [
    "The capital of France is [MASK].",
    "[CLS] a sentence that starts itself [SEP] and goes on [SEP]",
    "padding [PAD][PAD] and an unknown [UNK] token",
    "Lower case [mask] is not the special token, nor is [ MASK ].",
    "Special tokens glued to words: word[MASK]word and ([SEP]).",
    "Déjà vu: naïve café owners don't e-mail résumés at 3:45pm!",
    "Tabs\tand\nnew lines   and  runs of spaces.",
    "中文字符 and 日本語 mixed with English",
    "Emoji 🙂 and symbols ™ © ½ are not in the vocabulary",
    "a" * 120 + " follows a word too long for WordPiece",
    "Numbers 1234567 and 3.14159, hyphen-ated, under_scored, CamelCase.",
    "[MASK] [MASK] [MASK]",
]


def main():
    model = sys.argv[1] if len(sys.argv) > 1 else "models/all-minilm-l6-v2"
    tok = Tokenizer.from_file(os.path.join(model, "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    cases = []
    for s in SENTENCES:
        enc = tok.encode(s)
        cases.append({"text": s, "tokens": enc.tokens, "ids": enc.ids})
    out = os.path.join(os.path.dirname(__file__), "..", "demos", "attention", "tests", "hf_tokens.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"source": "tokenizers " + __import__("tokenizers").__version__ + ", " + os.path.basename(model) + "/tokenizer.json",
                   "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases written to {os.path.normpath(out)}")


if __name__ == "__main__":
    main()
