//! Training text as tokens: a corpus the project generates (arithmetic and a small grammar, from
//! a fixed seed, so the demo needs no download) or a UTF-8 text file the user gives. Tokens are
//! characters; batches are windows at offsets drawn from the step number, so both paths see the
//! same data in the same order.

use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::error::{Error, Result};

/// The synthetic corpus's alphabet: fixed, so its checkpoints always agree on the vocabulary.
pub const SYNTHETIC_ALPHABET: &str = "\n +=.0123456789abcdefghijklmnopqrstuvwxyz";

/// Largest file the demo reads (characters are kept as u32 tokens).
const MAX_FILE_BYTES: u64 = 64 << 20;
/// Largest vocabulary a text may have.
const MAX_VOCAB: usize = 512;

/// A tokenised corpus.
#[derive(Clone, Debug)]
pub struct Corpus {
    /// Token i is `alphabet[i]`.
    pub alphabet: Vec<char>,
    pub tokens: Vec<u32>,
    /// Where the text came from, in words.
    pub source: String,
}

/// One step's inputs and targets, [B·T] each.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    pub inputs: Vec<u32>,
    pub targets: Vec<u32>,
}

impl Corpus {
    /// The generated corpus: `lines` lines of sums and short sentences, from `seed`.
    pub fn synthetic(seed: u64, lines: usize) -> Corpus {
        const NOUNS: [&str; 8] = ["cat", "dog", "bird", "fox", "kiln", "gpu", "tile", "wave"];
        const VERBS: [&str; 6] = ["sees", "likes", "follows", "warms", "draws", "finds"];
        const ADJS: [&str; 6] = ["red", "quick", "small", "warm", "bright", "lazy"];
        let mut rng = StdRng::seed_from_u64(seed);
        let mut text = String::new();
        for _ in 0..lines {
            if rng.random_bool(0.5) {
                let a = rng.random_range(0..1000u32);
                let b = rng.random_range(0..1000u32);
                text.push_str(&format!("{a}+{b}={}\n", a + b));
            } else {
                let pick = |rng: &mut StdRng, words: &[&'static str]| {
                    words[rng.random_range(0..words.len())]
                };
                let (a, n1, v) = (
                    pick(&mut rng, &ADJS),
                    pick(&mut rng, &NOUNS),
                    pick(&mut rng, &VERBS),
                );
                let (n2, a2) = (pick(&mut rng, &NOUNS), pick(&mut rng, &ADJS));
                text.push_str(&format!("the {a} {n1} {v} the {a2} {n2}.\n"));
            }
        }
        let alphabet: Vec<char> = SYNTHETIC_ALPHABET.chars().collect();
        let tokens = text
            .chars()
            .map(|c| alphabet.iter().position(|&a| a == c).unwrap_or(0) as u32)
            .collect();
        Corpus {
            alphabet,
            tokens,
            source: format!("synthetic (sums and sentences, seed {seed}, {lines} lines)"),
        }
    }

    /// A UTF-8 text file, one token per distinct character.
    pub fn from_file(path: &str) -> Result<Corpus> {
        let io = |source| Error::Io {
            path: path.to_string(),
            source,
        };
        let size = std::fs::metadata(path).map_err(io)?.len();
        if size > MAX_FILE_BYTES {
            return Err(Error::Data(format!(
                "{path} has {size} bytes; the demo reads at most {MAX_FILE_BYTES}"
            )));
        }
        let bytes = std::fs::read(path).map_err(io)?;
        Self::from_bytes(path, &bytes)
    }

    /// Text from bytes (a file's contents, or the page's text box).
    pub fn from_bytes(name: &str, bytes: &[u8]) -> Result<Corpus> {
        if bytes.is_empty() {
            return Err(Error::Data(format!("{name} is empty")));
        }
        if bytes.contains(&0) {
            return Err(Error::Data(format!(
                "{name} looks binary (it contains NUL bytes); give a text file"
            )));
        }
        let text = std::str::from_utf8(bytes).map_err(|e| {
            Error::Data(format!(
                "{name} is not UTF-8 text (invalid byte at offset {})",
                e.valid_up_to()
            ))
        })?;
        let mut alphabet: Vec<char> = text.chars().collect();
        alphabet.sort_unstable();
        alphabet.dedup();
        if alphabet.len() > MAX_VOCAB {
            return Err(Error::Data(format!(
                "{name} has {} distinct characters; the demo takes at most {MAX_VOCAB}",
                alphabet.len()
            )));
        }
        let tokens = text
            .chars()
            .map(|c| alphabet.binary_search(&c).unwrap_or(0) as u32)
            .collect();
        Ok(Corpus {
            alphabet,
            tokens,
            source: name.to_string(),
        })
    }

    pub fn vocab(&self) -> usize {
        self.alphabet.len()
    }

    /// Checks that windows of `seq + 1` tokens fit.
    pub fn check(&self, seq: usize) -> Result<()> {
        if self.tokens.len() < seq + 2 {
            return Err(Error::Data(format!(
                "{} has {} tokens; a sequence of {seq} needs at least {}",
                self.source,
                self.tokens.len(),
                seq + 2
            )));
        }
        Ok(())
    }

    /// The batch of step `step`: `batch` windows of `seq` tokens and the tokens after them.
    pub fn batch(&self, seed: u64, step: u64, batch: usize, seq: usize) -> Batch {
        let mut rng = StdRng::seed_from_u64(seed ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let last = self.tokens.len() - seq - 1;
        let mut inputs = Vec::with_capacity(batch * seq);
        let mut targets = Vec::with_capacity(batch * seq);
        for _ in 0..batch {
            let at = rng.random_range(0..=last);
            inputs.extend_from_slice(&self.tokens[at..at + seq]);
            targets.extend_from_slice(&self.tokens[at + 1..at + seq + 1]);
        }
        Batch { inputs, targets }
    }

    /// Tokens of a text in this corpus's alphabet; characters it lacks are an error.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        text.chars()
            .map(|c| {
                self.alphabet
                    .iter()
                    .position(|&a| a == c)
                    .map(|i| i as u32)
                    .ok_or_else(|| Error::Data(format!("the vocabulary has no {c:?}")))
            })
            .collect()
    }

    pub fn decode(&self, tokens: &[u32]) -> String {
        tokens
            .iter()
            .filter_map(|&t| self.alphabet.get(t as usize))
            .collect()
    }
}
