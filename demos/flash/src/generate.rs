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
//! binding some fifty launches per token. At temperature 0 the captured pass also ends with
//! greedy decoding's hand-over (the pick written where the next pass reads its token, the
//! position and the caches' length moved on), so it feeds itself: a run of up to [`GREEDY_RUN`]
//! tokens is that many replays handed to the GPU one after another and one read-back of their
//! logits, not a round trip through the host per token. The host picks again from the logits
//! it reads (the same rule, `greedy_pick`) and checks that the GPU fed what it picked.

use std::collections::VecDeque;

use kiln_app::kiln::cpu::{Array, greedy_pick};
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
    /// Tokens per second after the first (each token's pass, read back one by one or in a
    /// greedy run).
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

/// Tokens one greedy run of replays writes at most before the host reads their logits back.
pub const GREEDY_RUN: usize = 16;

/// How a run's one-token passes are made: the fastest way the path has, or a slower one, to
/// measure what each step saves (all three give the same logits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// Replayed from a capture; at temperature 0 in runs that feed themselves.
    Fastest,
    /// Replayed from a capture one at a time, each token picked on the host and written back.
    OneByOne,
    /// Each pass recorded as it comes (chosen, allocated and bound), none captured.
    Recorded,
}

/// The one-token pass captured, and the inputs its replays rewrite.
struct Captured<B: Backend> {
    pass: B::Replay,
    token: B::Ids,
    position: B::Ids,
    logits: B::T,
    /// Greedy decoding's log [GREEDY_RUN, V + 1] (each replay's logits and pick), when the pass
    /// feeds itself.
    log: Option<B::T>,
}

/// A pass a greedy run made before the host asked for it: the token it fed and the logits
/// after it.
struct Queued {
    fed: u32,
    row: Vec<f32>,
}

/// How the one-token passes run.
enum Passes<B: Backend> {
    /// Captured at the next token, where the path can.
    Capture,
    /// Boxed: a plan and five tensors, where the other states are empty.
    Replayed(Box<Captured<B>>),
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
    /// Whether a captured pass feeds itself (temperature 0, unless asked one by one).
    hand_over: bool,
    /// Passes a greedy run made that no advance has taken yet.
    queued: VecDeque<Queued>,
    /// Advances the caller still means to make, when it said (a run of replays makes no more).
    advances: Option<usize>,
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
        let mut caches = b.caches(c.layers, 1, c.kv_heads, c.seq, c.head_dim())?;
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
            hand_over: temperature == 0.0,
            queued: VecDeque::new(),
            advances: None,
            out: Generation {
                prefill_s: start.elapsed().as_secs_f64(),
                ..Default::default()
            },
        })
    }

    /// Makes the one-token passes `way` (the default is the fastest).
    pub fn way(mut self, way: Way) -> Self {
        match way {
            Way::Fastest => {}
            Way::OneByOne => self.hand_over = false,
            Way::Recorded => self.passes = Passes::EachCall,
        }
        self
    }

    /// Says how many more advances the caller will make, so that a greedy run of replays makes
    /// no passes past them.
    pub fn advances(mut self, count: usize) -> Self {
        self.advances = Some(count);
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
    /// it keeps its last half and feeds that again from position 0. A token a greedy run fed
    /// that is not the host's pick from the same logits (a fault of the GPU's hand-over) is an
    /// error, after which the generator cannot go on.
    pub async fn advance(&mut self, b: &B, c: &Config, p: &Params<B::T>) -> Result<()> {
        let Some(&next) = self.out.tokens.last() else {
            return Err(Error::Config("advance before any token was picked".into()));
        };
        let start = Instant::now();
        self.context.push(next);
        self.row = if self.context.len() > c.seq {
            // A greedy run stops at the context's end, and its passes are taken before this.
            self.queued.clear();
            self.context.drain(..self.context.len() - c.seq / 2);
            for cache in &mut self.caches {
                b.cache_clear(cache)?;
            }
            self.out.refills += 1;
            last_logits(b, c, p, &mut self.caches, &self.context, 0).await?
        } else if let Some(Queued { fed, row }) = self.queued.pop_front() {
            if fed != next {
                // The caches hold the GPU's tokens now: this generator cannot go on.
                return Err(kiln_app::kiln::Error::Gpu(format!(
                    "greedy_next fed token {fed} where the host picked {next} from the same logits"
                ))
                .into());
            }
            row
        } else {
            let at = self.context.len() - 1;
            self.one_token(b, c, p, next, at).await?
        };
        self.advances = self.advances.map(|n| n.saturating_sub(1));
        self.out.decode_s += start.elapsed().as_secs_f64();
        self.out.passes += 1;
        Ok(())
    }

    /// The logits after `token` at position `at`: the captured pass replayed (captured now if
    /// this is the first; at temperature 0 a run of replays, the later passes queued), or
    /// the pass run as it comes.
    async fn one_token(
        &mut self,
        b: &B,
        c: &Config,
        p: &Params<B::T>,
        token: u32,
        at: usize,
    ) -> Result<Vec<f32>> {
        let fresh = matches!(self.passes, Passes::Capture);
        if fresh {
            self.passes = match self.capture(b, c, p, token, at)? {
                Some(captured) => Passes::Replayed(Box::new(captured)),
                None => Passes::EachCall,
            };
        }
        let Passes::Replayed(r) = &self.passes else {
            return last_logits(b, c, p, &mut self.caches, &[token], at).await;
        };
        // The capture counted the token's row in each cache and made the inputs with their
        // values; a later pass rewrites them.
        if !fresh {
            for cache in &mut self.caches {
                b.cache_grow(cache, 1)?;
            }
            b.write_ids(&r.token, &[token])?;
            b.write_ids(&r.position, &[at as u32])?;
        }
        let Some(log) = &r.log else {
            b.replay(&r.pass)?;
            return Ok(b.read(&r.logits).await?);
        };
        // As many passes as the caller wants, the log holds and the context has room for.
        let wanted = self.advances.unwrap_or(GREEDY_RUN).max(1);
        let run = GREEDY_RUN.min(wanted).min(c.seq - at);
        // One recording, submitted at the read-back in pieces that grow (the GPU starts on the
        // first while the host encodes the rest).
        for _ in 0..run {
            b.replay(&r.pass)?;
        }
        let logged = b.read(log).await?;
        // Each replay after the first moved the caches on by a row on the GPU; count them here.
        for cache in &mut self.caches {
            b.cache_grow(cache, run - 1)?;
        }
        let width = c.vocab + 1;
        let mut fed = token;
        let mut rows = (at..at + run).map(|position| {
            let row = &logged[(position % GREEDY_RUN) * width..][..width];
            let queued = Queued {
                fed,
                row: row[..c.vocab].to_vec(),
            };
            fed = row[c.vocab] as u32;
            queued
        });
        let first = rows.next().map(|a| a.row).unwrap_or_default();
        self.queued.extend(rows);
        Ok(first)
    }

    /// Captures the one-token pass (at temperature 0 with the hand-over at its end); `None` on
    /// a path that cannot capture. The capture counts the token's row in each cache; the first
    /// replay writes it.
    fn capture(
        &mut self,
        b: &B,
        c: &Config,
        p: &Params<B::T>,
        token: u32,
        at: usize,
    ) -> Result<Option<Captured<B>>> {
        let (token, position) = (b.ids(&[token])?, b.ids(&[at as u32])?);
        let log = if self.hand_over {
            let width = c.vocab + 1;
            Some(b.upload(&Array::new(
                &[GREEDY_RUN, width],
                vec![0.0; GREEDY_RUN * width],
            )?)?)
        } else {
            None
        };
        let caches = &mut self.caches;
        let mut feed_and_pick = || -> Result<B::T> {
            let logits = model::feed(b, c, p, caches, &token, &position, 1)?;
            if let Some(log) = &log {
                b.feed_greedy(&logits, &token, &position, caches, log)?;
            }
            Ok(logits)
        };
        // The model's errors ride through the capture as a value.
        let Some((pass, logits)) = b.capture(|| Ok(feed_and_pick()))? else {
            return Ok(None);
        };
        Ok(Some(Captured {
            pass,
            token,
            position,
            logits: logits?,
            log,
        }))
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

/// [`generate`] with the one-token passes made `way` (what the faster ways save is the
/// difference).
#[allow(clippy::too_many_arguments)]
pub async fn generate_as<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    prompt: &[u32],
    count: usize,
    temperature: f32,
    seed: u64,
    way: Way,
) -> Result<Generation> {
    let sampling = Sampling { temperature, seed };
    let g = Generator::start(b, c, p, prompt, sampling).await?.way(way);
    run(b, c, p, g, count, &mut |_| {}).await
}

/// Picks `count` tokens, feeding each but the last.
async fn run<B: Backend>(
    b: &B,
    c: &Config,
    p: &Params<B::T>,
    g: Generator<B>,
    count: usize,
    watch: &mut dyn FnMut(&[u32]),
) -> Result<Generation> {
    let mut g = g.advances(count.saturating_sub(1));
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
    let best = || greedy_pick(row).unwrap_or(0);
    if temperature <= 0.0 {
        return best();
    }
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let w: Vec<f32> = row
        .iter()
        .map(|&l| ((l - max) / temperature).exp())
        .collect();
    let total: f32 = w.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        return best();
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

/// The two runs' logits, step by step, over the steps where they agree on every token so far
/// and the first where they do not.
fn compared_steps<'a>(
    a: &'a Generation,
    b: &'a Generation,
) -> impl Iterator<Item = (&'a Vec<f32>, &'a Vec<f32>)> {
    let same = a
        .tokens
        .iter()
        .zip(&b.tokens)
        .take_while(|(x, y)| x == y)
        .count();
    a.logits.iter().zip(&b.logits).take(same + 1)
}

/// The largest relative L2 difference between two runs' logits at one step ([`compared_steps`]):
/// how far the paths' arithmetic is apart, whatever the tokens (what the page's test bounds, as
/// the native test bounds the cached logits against the uncached).
pub fn logit_rel_l2(a: &Generation, b: &Generation) -> f64 {
    compared_steps(a, b)
        .map(|(x, y)| kiln_app::kiln::cpu::rel_l2(x, y))
        .fold(0.0, f64::max)
}

/// The largest difference between two runs' logits over [`compared_steps`].
pub fn logit_difference(a: &Generation, b: &Generation) -> f32 {
    compared_steps(a, b)
        .flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p - q).abs()))
        .fold(0.0, f32::max)
}
