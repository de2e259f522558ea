//! Text → WordPiece tokens for a BERT vocabulary, through the `tokenizers` crate (the
//! `unstable_wasm` build, so the page runs the same code): BERT's normaliser (clean text,
//! lower case, CJK characters split), its pre-tokeniser (whitespace and punctuation), then
//! greedy longest-match WordPiece with `##` continuations; [CLS] … [SEP] around the result.
//! BERT's special tokens in a text stay whole, as in Hugging Face's tokenizer (tested against
//! its output, `tests/hf_tokens.json`).

use std::str::FromStr;

use crate::model::ModelError;

#[derive(Debug)]
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    cls: u32,
    sep: u32,
}

/// A tokenised text.
#[derive(Clone, Debug, PartialEq)]
pub struct Tokens {
    pub tokens: Vec<String>,
    pub ids: Vec<u32>,
    /// The text's token count before the cut, [CLS] and [SEP] included: more than
    /// `tokens.len()` when the text was cut, so that the page can say so.
    pub full: usize,
    /// Whether `full` counts the whole text; a text far past the limit is read only as far as
    /// the cut needs, and `full` counts that part.
    pub counted_all: bool,
}

/// BERT's special tokens: kept whole where a text contains them.
const SPECIAL: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];

/// How far past the limit a text is read: this many bytes per kept token before the first
/// attempt, four times as many at each next. A pasted book costs no more than the cut needs.
const BYTES_PER_TOKEN: usize = 16;

/// The longest prefix of `text` within `max_bytes` that ends at a space (BERT's pre-tokeniser
/// splits there, and no special token holds one, so the prefix's tokens are the text's first
/// tokens); `None` when the text is no longer, or has no space to cut at.
fn prefix_at_break(text: &str, max_bytes: usize) -> Option<&str> {
    if text.len() <= max_bytes {
        return None;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let at = text[..end].rfind(char::is_whitespace)?;
    (at > 0).then(|| &text[..at])
}

impl Tokenizer {
    /// The tokenizer of a vocabulary (one token per line, id = line number).
    pub fn new(vocab: &[String]) -> Result<Tokenizer, ModelError> {
        let id = |t: &str| {
            vocab
                .iter()
                .position(|w| w == t)
                .map(|i| i as u32)
                .ok_or_else(|| ModelError::Vocab(format!("no {t} token")))
        };
        let (cls, sep) = (id("[CLS]")?, id("[SEP]")?);
        let map: serde_json::Map<String, serde_json::Value> = vocab
            .iter()
            .enumerate()
            .map(|(i, w)| (w.clone(), (i as u32).into()))
            .collect();
        // BERT's special tokens the vocabulary has stay whole in a text ("[MASK]" is one token,
        // not "[", "mask", "]"), as Hugging Face's tokenizer keeps them.
        let added: Vec<serde_json::Value> = SPECIAL
            .iter()
            .filter_map(|t| {
                let i = id(t).ok()?;
                Some(serde_json::json!({"id": i, "content": t, "special": true,
                    "single_word": false, "lstrip": false, "rstrip": false, "normalized": false}))
            })
            .collect();
        // The crate builds a tokenizer from its JSON form; this is the form of BERT's uncased
        // tokenizer.json, with the vocabulary given.
        let json = serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
            // talk:begin normalise
            "normalizer": {"type": "BertNormalizer",
                           "lowercase": true,
                           "clean_text": true,
                           "strip_accents": null,
                           "handle_chinese_chars": true},
            "pre_tokenizer":
                {"type": "BertPreTokenizer"},
            // talk:end normalise
            "post_processor": null, "decoder": null,
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100, "vocab": map},
        });
        let inner = tokenizers::Tokenizer::from_str(&json.to_string())
            .map_err(|e| ModelError::Vocab(format!("cannot build the tokenizer: {e}")))?;
        Ok(Tokenizer { inner, cls, sep })
    }

    /// [CLS] + the text's tokens + [SEP], truncated to `max_len` tokens in all.
    pub fn encode(&self, text: &str, max_len: usize) -> Result<Tokens, ModelError> {
        // talk:begin wordpiece
        // The text's tokens, read only as far as the cut needs; [CLS] and [SEP] around them.
        let keep = max_len.saturating_sub(2);
        let (enc, counted_all) = self.encode_prefix(text, keep)?;
        let mut tokens = vec!["[CLS]".to_string()];
        let mut ids = vec![self.cls];
        for (t, &i) in enc.get_tokens().iter().zip(enc.get_ids()).take(keep) {
            tokens.push(t.clone());
            ids.push(i);
        }
        tokens.push("[SEP]".into());
        ids.push(self.sep);
        // talk:end wordpiece
        let full = enc.get_ids().len() + 2;
        Ok(Tokens {
            tokens,
            ids,
            full,
            counted_all,
        })
    }

    /// The encoding of `text`, or of a prefix of it that already has more than `keep` tokens
    /// (then `false`: the rest was not read).
    fn encode_prefix(
        &self,
        text: &str,
        keep: usize,
    ) -> Result<(tokenizers::Encoding, bool), ModelError> {
        let run = |t: &str| {
            self.inner
                .encode(t, false)
                .map_err(|e| ModelError::Vocab(format!("cannot tokenise: {e}")))
        };
        let mut budget = (keep + 1).saturating_mul(BYTES_PER_TOKEN);
        while let Some(prefix) = prefix_at_break(text, budget) {
            let enc = run(prefix)?;
            if enc.get_ids().len() > keep {
                return Ok((enc, false));
            }
            budget = budget.saturating_mul(4);
        }
        Ok((run(text)?, true))
    }
}
