//! Text generation with a key/value cache, written once against [`Backend`]: the prompt in one
//! pass (flash attention over its rows, each layer's keys and values kept in a preallocated
//! cache), then one token at a time, each new row attending to the cache — flash-decoding on
//! the GPU path, the CPU reference on the CPU path. With grouped-query heads the caches hold
//! only the key/value heads. When the context reaches the learned positions it keeps its last
//! half and feeds that again from position 0, as the model was trained on windows.
//!
//! A one-token pass has the same shapes every time, so where the path can capture (the GPU) the
//! first one is captured and the rest replay it, with only the token, its position and the
//! caches' lengths rewritten: the host issues one list instead of choosing, allocating and
//! binding some fifty launches per token.

use rand::{Rng, SeedableRng, rngs::StdRng};
use web_time::Instant;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::model::{self, Params};
use crate::preset::Config;

/// What a run generated, and how long it took.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Generation {
    /// The new tokens.
    pub tokens: Vec<u32>,
    /// The logits each token was picked from.
    pub logits: Vec<Vec<f32>>,
    /// Seconds of the prompt's pass (to the first token's logits read back).
    pub prefill_s: f64,
    /// Seconds of the passes after it (one token each, or a refill), and how many there were.
    pub decode_s: f64,
    pub passes: usize,
    /// Times the context filled and its last half was fed again.
    pub refills: usize,
}

impl Generation {
    /// Tokens per second after the first: one pass and one read-back per token.
    pub fn tokens_per_s(&self) -> f64 {
        if self.passes == 0 || self.decode_s <= 0.0 {
            return 0.0;
        }
        self.passes as f64 / self.decode_s
    }
}

/// How tokens are picked: the likeliest at temperature 0; above it, draws seeded by `seed`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    pub temperature: f32,
    pub seed: u64,
}

/// The one-token pass captured, and the inputs its replays rewrite.
struct Captured<B: Backend> {
    pass: B::Replay,
    token: B::Ids,
    position: B::Ids,
    logits: B::T,
}

/// How the one-token passes run.
enum Passes<B: Backend> {
    /// Captured at the next token, where the path can.
    Capture,
    Replayed(Captured<B>),
    /// Each run as it comes (a path that cannot capture, or asked not to).
    EachCall,
}

/// Generation one token at a time (a window shows each as it comes): [`start`](Self::start)
/// runs the prompt, then [`pick`](Self::pick) takes a token from the newest logits and
/// [`advance`](Self::advance) feeds it. The model and path are passed to each call, so that
/// their owner keeps them.
pub struct Generator<B: Backend> {
    caches: Vec<B::Cache>,
    passes: Passes<B>,
    context: Vec<u32>,
    row: Vec<f32>,
    rng: StdRng,
    temperature: f32,
    out: Generation,
}

impl<B: Backend> std::fmt::Debug for Generator<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator")
            .field("context", &self.context.len())
            .field("tokens", &self.out.tokens.len())
            .finish_non_exhaustive()
    }
}

impl<B: Backend> Generator<B> {
    /// Checks the prompt and the sampling, makes one cache per layer and runs the prompt (its
    /// last T tokens; an empty prompt is token 0).
    pub async fn start(
        b: &B,
        c: &Config,
        p: &Params<B::T>,
        prompt: &[u32],
        Sampling { temperature, seed }: Sampling,
    ) -> Result<Self> {
        if !(temperature >= 0.0 && temperature.is_finite()) {
            return Err(Error::Config(format!(
                "the temperature must be 0 or more, got {temperature}"
            )));
        }
        if let Some(&bad) = prompt.iter().find(|&&t| t as usize >= c.vocab) {
            return Err(Error::Config(format!(
                "token {bad} is outside the {}-token vocabulary",
                c.vocab
            )));
        }
        let mut caches = (0..c.layers)
            .map(|_| b.cache(1, c.kv_heads, c.seq, c.head_dim()))
            .collect::<kiln_app::kiln::Result<Vec<_>>>()?;
        let context: Vec<u32> = if prompt.is_empty() {
            vec![0]
        } else {
            prompt[prompt.len().saturating_sub(c.seq)..].to_vec()
        };
        let start = Instant::now();
        let row = last_logits(b, c, p, &mut caches, &context, 0).await?;
        Ok(Generator {
            caches,
            passes: Passes::Capture,
            context,
            row,
            rng: StdRng::seed_from_u64(seed),
            temperature,
            out: Generation {
                prefill_s: start.elapsed().as_secs_f64(),
                ..Default::default()
            },
        })
    }

    /// Runs every one-token pass as it comes rather than replaying a captured one (to measure
    /// what the capture saves; the two give the same logits).
    pub fn each_call(mut self) -> Self {
        self.passes = Passes::EachCall;
        self
    }

    /// Takes the next token from the newest logits.
    pub fn pick(&mut self) -> u32 {
        let next = pick(&self.row, self.temperature, &mut self.rng);
        self.out.tokens.push(next);
        self.out.logits.push(self.row.clone());
        next
    }

    /// Feeds the last picked token: the logits of the one after it. When the context is full
    /// it keeps its last half and feeds that again from position 0.
    pub async fn advance(&mut self, b: &B, c: &Config, p: &Params<B::T>) -> Result<()> {
        let Some(&next) = self.out.tokens.last() else {
            return Err(Error::Config("advance before any token was picked".into()));
        };
        let start = Instant::now();
        self.context.push(next);
        self.row = if self.context.len() > c.seq {
            self.context.drain(..self.context.len() - c.seq / 2);
            for cache in &mut self.caches {
                b.cache_clear(cache)?;
            }
            self.out.refills += 1;
            last_logits(b, c, p, &mut self.caches, &self.context, 0).await?
        } else {
            let at = self.context.len() - 1;
            self.one_token(b, c, p, next, at).await?
        };
        self.out.decode_s += start.elapsed().as_secs_f64();
        self.out.passes += 1;
        Ok(())
    }

    /// The logits after `token` at position `at`: the captured pass replayed (captured now if
    /// this is the first), or the pass run as it comes.
    async fn one_token(
        &mut self,
        b: &B,
        c: &Config,
        p: &Params<B::T>,
        token: u32,
        at: usize,
    ) -> Result<Vec<f32>> {
        if let Passes::Capture = self.passes {
            let (token, position) = (b.ids(&[token])?, b.ids(&[at as u32])?);
            let caches = &mut self.caches;
            // The capture counts the token's row in each cache; the first replay writes it.
            // (The model's errors ride through the capture as a value.)
            let captured = b.capture(|| Ok(model::feed(b, c, p, caches, &token, &position, 1)))?;
            self.passes = match captured {
                Some((pass, logits)) => {
                    let logits = logits?;
                    b.replay(&pass)?;
                    let row = b.read(&logits).await?;
                    self.passes = Passes::Replayed(Captured {
                        pass,
                        token,
                        position,
                        logits,
                    });
                    return Ok(row);
                }
                None => Passes::EachCall,
            };
        }
        match &self.passes {
            Passes::Replayed(r) => {
                for cache in &mut self.caches {
                    b.cache_grow(cache, 1)?;
                }
                b.write_ids(&r.token, &[token])?;
                b.write_ids(&r.position, &[at as u32])?;
                b.replay(&r.pass)?;
                Ok(b.read(&r.logits).await?)
            }
            _ => last_logits(b, c, p, &mut self.caches, &[token], at).await,
        }
    }

    /// What has been generated so far.
    pub fn generation(&self) -> &Generation {
        &self.out
    }

    pub fn into_generation(self) -> Generation {
        self.out
    }
}

/// Continues `prompt` by `count` tokens on path `b` (an empty prompt starts from token 0).
/// At temperature 0 each token is the likeliest; above it, a draw from the softened
/// distribution with `seed`.
pub async fn generate<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    prompt: &[u32],
    count: usize,
    temperature: f32,
    seed: u64,
) -> Result<Generation> {
    let sampling = Sampling { temperature, seed };
    generate_watched(b, c, p, prompt, count, sampling, &mut |_| {}).await
}

/// [`generate`], telling `watch` the tokens so far after each one (a page shows them as they
/// come).
pub async fn generate_watched<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    prompt: &[u32],
    count: usize,
    sampling: Sampling,
    watch: &mut dyn FnMut(&[u32]),
) -> Result<Generation> {
    let g = Generator::start(b, c, p, prompt, sampling).await?;
    run(b, c, p, g, count, watch).await
}

/// [`generate`] with every one-token pass run as it comes, none replayed (what the capture
/// saves is the difference).
pub async fn generate_each_call<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    prompt: &[u32],
    count: usize,
    temperature: f32,
    seed: u64,
) -> Result<Generation> {
    let sampling = Sampling { temperature, seed };
    let g = Generator::start(b, c, p, prompt, sampling)
        .await?
        .each_call();
    run(b, c, p, g, count, &mut |_| {}).await
}

/// Picks `count` tokens, feeding each but the last.
async fn run<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    mut g: Generator<B>,
    count: usize,
    watch: &mut dyn FnMut(&[u32]),
) -> Result<Generation> {
    for i in 0..count {
        g.pick();
        watch(&g.out.tokens);
        if i + 1 < count {
            g.advance(b, c, p).await?;
        }
    }
    Ok(g.into_generation())
}

/// Feeds `tokens` at positions `first..` and reads back the last row's logits.
async fn last_logits<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    caches: &mut [B::Cache],
    tokens: &[u32],
    first: usize,
) -> Result<Vec<f32>> {
    let n = tokens.len();
    let positions: Vec<u32> = (first..first + n).map(|i| i as u32).collect();
    let logits = model::feed(b, c, p, caches, &b.ids(tokens)?, &b.ids(&positions)?, n)?;
    let all = b.read(&logits).await?;
    Ok(all[(n - 1) * c.vocab..n * c.vocab].to_vec())
}

/// The likeliest token at temperature 0; above it, a draw from softmax(logits / temperature).
pub fn pick(row: &[f32], temperature: f32, rng: &mut StdRng) -> u32 {
    let best = || {
        row.iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map_or(0, |(i, _)| i)
    };
    if temperature <= 0.0 {
        return best() as u32;
    }
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let w: Vec<f32> = row
        .iter()
        .map(|&l| ((l - max) / temperature).exp())
        .collect();
    let total: f32 = w.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        return best() as u32;
    }
    let mut left = rng.random_range(0.0..total);
    w.iter()
        .position(|&x| {
            left -= x;
            left <= 0.0
        })
        .unwrap_or(w.len() - 1) as u32
}

/// Where two runs' tokens first differ, and whether the logits explain it: the margin by which
/// one run's pick led at that step, against the largest difference between the two runs'
/// logits there.
#[derive(Clone, Debug, PartialEq)]
pub struct Divergence {
    pub step: usize,
    /// The first run's lead of its pick over the second run's pick, in its own logits.
    pub margin: f32,
    /// max |a − b| over the step's logits.
    pub logit_difference: f32,
}

impl Divergence {
    /// A near-tie: the pick's lead is within twice the paths' measured difference.
    pub fn explained(&self) -> bool {
        self.margin <= 2.0 * self.logit_difference
    }
}

/// The first step where `a` and `b` picked different tokens, if any.
pub fn first_divergence(a: &Generation, b: &Generation) -> Option<Divergence> {
    let step = a.tokens.iter().zip(&b.tokens).position(|(x, y)| x != y)?;
    let (la, lb) = (&a.logits[step], &b.logits[step]);
    let logit_difference = la
        .iter()
        .zip(lb)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max);
    let margin = la[a.tokens[step] as usize] - la[b.tokens[step] as usize];
    Some(Divergence {
        step,
        margin,
        logit_difference,
    })
}

/// The largest difference between two runs' logits over the steps where they agree on every
/// token so far.
pub fn logit_difference(a: &Generation, b: &Generation) -> f32 {
    let same = a
        .tokens
        .iter()
        .zip(&b.tokens)
        .take_while(|(x, y)| x == y)
        .count();
    a.logits
        .iter()
        .zip(&b.logits)
        .take(same + 1)
        .flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p - q).abs()))
        .fold(0.0, f32::max)
}
