//! Timing: warm-up, repeats, median/min/max, with the clock named. GPU work is timed with
//! timestamp queries where the device has them, else with the wall clock around submit and
//! completion; rates (FLOP/s, bytes/s) are taken at the median.

mod gpu;
mod host;
mod warm_up;

pub use gpu::*;
pub use host::*;
pub use warm_up::*;

// What this file and the parts above share (they read it with `use super::*`).
use std::fmt;

use serde::Serialize;
use web_time::Instant;

use crate::error::{Error, Result};
use crate::gpu::readback::read_raw;
use crate::gpu::{Counters, Dispatch, Gpu, PassTime, PassTiming};
/// The most repeats one timing takes (two timestamps each; wgpu allows 4096 per query set).
pub const MAX_REPEATS: usize = 2048;

/// Which clock a timing came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")] // the same names as `Clock::as_str`
pub enum Clock {
    /// GPU timestamps written at the start and end of each compute pass.
    GpuTimestamps,
    /// Wall clock around submit and completion (includes submission overhead).
    WallClock,
}

impl Clock {
    /// The name JSON output uses (`gpu_timestamps`, `wall_clock`).
    pub fn as_str(self) -> &'static str {
        match self {
            Clock::GpuTimestamps => "gpu_timestamps",
            Clock::WallClock => "wall_clock",
        }
    }
}

impl fmt::Display for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Clock::GpuTimestamps => "GPU timestamps",
            Clock::WallClock => "wall clock",
        })
    }
}

/// Repeated measurements of one piece of work, in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timing {
    pub clock: Clock,
    pub warmup: usize,
    pub samples_ms: Vec<f64>,
    /// The median of the samples; for timestamps that a clock rounds (`quantum_ms`), their mean
    /// instead: rounding both ends to a grid leaves the mean unbiased, while the median lands on
    /// one of two neighbouring grid values (Chrome's WebGPU timed a 0.103 ms frame at 0.131).
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// The grid a rounding clock's readings sit on (Chrome's WebGPU rounds timestamps to
    /// 65.536 µs), read off the samples by [`quantum_ms`]; absent for a clock that does not round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantum_ms: Option<f64>,
}

/// The median of samples (the mean of the middle two for an even count); `None` for none.
pub fn median(samples: &[f64]) -> Option<f64> {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let mid = s.len() / 2;
    match s.len() {
        0 => None,
        n if n % 2 == 1 => Some(s[mid]),
        _ => Some((s[mid - 1] + s[mid]) / 2.0),
    }
}

/// The grid that samples sit on when their clock rounds its readings: the greatest common
/// divisor of their nanoseconds, where every sample is a whole number of nanoseconds, the
/// divisor is at least a microsecond and the samples are not all equal (equal samples say
/// nothing of rounding). `None` otherwise, as for any clock that reads to the nanosecond: the
/// divisor of real timings is a few nanoseconds.
pub fn quantum_ms(samples_ms: &[f64]) -> Option<f64> {
    let ns: Vec<u64> = samples_ms
        .iter()
        .map(|&s| (s * 1e6).round() as u64)
        .collect();
    let whole = samples_ms
        .iter()
        .zip(&ns)
        .all(|(&s, &n)| (s * 1e6 - n as f64).abs() < 1e-3);
    let differ = ns.windows(2).any(|w| w[0] != w[1]);
    let divisor = ns.iter().fold(0, |g, &n| gcd(g, n));
    (whole && differ && divisor >= 1_000).then_some(divisor as f64 / 1e6)
}

/// The GPU time the spans cover together: a later submission's span may begin before the one
/// before it ends (its first timestamp written as the GPU takes it up, while the work before it
/// still runs), so their sum would count that time twice (the Mega step's four submissions
/// summed to 27.5 ms of a step that took 8.7 on the wall, H100, kernels/perf/mlp-fusion-slower.md).
pub fn busy_ms(times: &[PassTime]) -> f64 {
    let mut spans: Vec<(f64, f64)> = times
        .iter()
        .map(|t| (t.start_ms, t.start_ms + t.ms))
        .collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut total, mut reach) = (0.0, f64::NEG_INFINITY);
    for (start, end) in spans {
        total += (end - start.max(reach)).max(0.0);
        reach = reach.max(end);
    }
    total
}

/// The centre of GPU timestamp readings (or sums or unions of them): their mean when the clock rounds
/// them to a grid ([`quantum_ms`]), which the rounding leaves unbiased, else their median. `None`
/// for no readings.
pub fn timestamp_centre(samples_ms: &[f64]) -> Option<f64> {
    centre(samples_ms, quantum_ms(samples_ms))
}

/// The mean of samples on a grid (`quantum_ms` found), else their median.
fn centre(samples_ms: &[f64], quantum_ms: Option<f64>) -> Option<f64> {
    match quantum_ms {
        Some(_) => Some(samples_ms.iter().sum::<f64>() / samples_ms.len() as f64),
        None => median(samples_ms),
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl Timing {
    /// Summarises samples (at least one).
    pub fn from_samples(clock: Clock, warmup: usize, samples_ms: Vec<f64>) -> Result<Timing> {
        if samples_ms.is_empty() || samples_ms.iter().any(|s| !s.is_finite() || *s < 0.0) {
            return Err(Error::InvalidArgument {
                op: "bench",
                detail: format!("timing samples must be finite and ≥ 0: {samples_ms:?}"),
            });
        }
        if samples_ms.iter().all(|&s| s == 0.0) {
            return Err(Error::InvalidArgument {
                op: "bench",
                detail: "every sample is 0 ms: the clock is too coarse for this work".into(),
            });
        }
        // Only timestamps: a browser's wall clock sits on a grid too, but its samples carry
        // pauses (a first step's pipeline builds, garbage collection) that the median absorbs.
        let quantum_ms = match clock {
            Clock::GpuTimestamps => quantum_ms(&samples_ms),
            Clock::WallClock => None,
        };
        let centre = centre(&samples_ms, quantum_ms).unwrap_or(0.0);
        Ok(Timing {
            clock,
            warmup,
            median_ms: centre,
            min_ms: samples_ms.iter().copied().fold(f64::INFINITY, f64::min),
            max_ms: samples_ms.iter().copied().fold(0.0, f64::max),
            samples_ms,
            quantum_ms,
        })
    }

    /// `amount` per second at the median (FLOP/s for FLOPs, bytes/s for bytes).
    pub fn rate(&self, amount: f64) -> f64 {
        amount / (self.median_ms / 1e3)
    }
}

fn check_repeats(repeats: usize) -> Result<()> {
    if repeats == 0 || repeats > MAX_REPEATS {
        return Err(Error::InvalidArgument {
            op: "bench",
            detail: format!("repeats must be 1..={MAX_REPEATS}, got {repeats}"),
        });
    }
    Ok(())
}

/// Times CPU work with the wall clock: `warmup` unmeasured runs, then up to `repeats` measured
/// ones, stopping early (after at least one) once `budget_s` seconds have been spent.
pub fn time_cpu(
    warmup: usize,
    repeats: usize,
    budget_s: f64,
    mut work: impl FnMut(),
) -> Result<Timing> {
    check_repeats(repeats)?;
    for _ in 0..warmup {
        work();
    }
    let began = Instant::now();
    let mut samples = Vec::with_capacity(repeats);
    while samples.len() < repeats {
        let start = Instant::now();
        work();
        samples.push(start.elapsed().as_secs_f64() * 1e3);
        if began.elapsed().as_secs_f64() > budget_s {
            break;
        }
    }
    Timing::from_samples(Clock::WallClock, warmup, samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounded_readings_are_summarised_by_their_mean() -> Result<()> {
        // Chrome's grid (65.536 µs) under a 0.103 ms frame: readings of one and two quanta.
        let q = 0.065536;
        let samples: Vec<f64> = (0..20)
            .map(|i| if i % 5 < 2 { q } else { 2.0 * q })
            .collect();
        let t = Timing::from_samples(Clock::GpuTimestamps, 0, samples.clone())?;
        assert_eq!(t.quantum_ms, Some(q));
        let mean = samples.iter().sum::<f64>() / 20.0;
        assert!(
            (t.median_ms - mean).abs() < 1e-12,
            "{} against {mean}",
            t.median_ms
        );
        assert_eq!(median(&samples), Some(2.0 * q));
        Ok(())
    }

    #[test]
    fn fine_readings_keep_their_median() -> Result<()> {
        // Nanosecond readings as native timestamps give them: no grid of a microsecond or more.
        let samples = vec![0.102832, 0.102432, 0.103104, 0.102977, 0.102501];
        let t = Timing::from_samples(Clock::GpuTimestamps, 0, samples.clone())?;
        assert_eq!(t.quantum_ms, None);
        assert_eq!(Some(t.median_ms), median(&samples));
        // A wall clock on a grid keeps its median: its pauses would move a mean.
        let on_grid = vec![0.1, 0.1, 0.2, 5.0];
        let wall = Timing::from_samples(Clock::WallClock, 0, on_grid.clone())?;
        assert_eq!(
            (wall.quantum_ms, Some(wall.median_ms)),
            (None, median(&on_grid))
        );
        // Equal readings, a wall clock's fractions of a nanosecond, a grid under a microsecond.
        assert_eq!(quantum_ms(&[0.131072; 4]), None);
        assert_eq!(quantum_ms(&[0.1000004, 0.2000004]), None);
        assert_eq!(quantum_ms(&[0.000512, 0.001024]), None);
        assert_eq!(quantum_ms(&[0.2, 0.3, 0.5]), Some(0.1));
        Ok(())
    }

    #[test]
    fn overlapping_spans_count_once_and_gaps_not_at_all() {
        let span = |start_ms: f64, ms: f64| PassTime {
            what: "submission".into(),
            ms,
            start_ms,
        };
        // A piece that begins while the one before runs, one inside it, and one after a gap,
        // given out of order.
        let times = [
            span(4.0, 1.0),
            span(1.0, 0.5),
            span(0.0, 1.0),
            span(0.5, 2.0),
        ];
        assert!((busy_ms(&times) - 3.5).abs() < 1e-12, "{}", busy_ms(&times));
        assert_eq!(busy_ms(&[]), 0.0);
    }

    #[test]
    fn summed_timestamps_are_centred_the_same_way() {
        // A forward's passes summed: still on the grid, so their mean; fine sums keep the median.
        let q = 0.065536;
        let sums = [7.0 * q, 8.0 * q, 8.0 * q, 9.0 * q, 7.0 * q];
        let mean = sums.iter().sum::<f64>() / 5.0;
        let centre = timestamp_centre(&sums).unwrap_or(f64::NAN);
        assert!((centre - mean).abs() < 1e-12, "{centre} against {mean}");
        let fine = [0.51234, 0.50987, 0.51102];
        assert_eq!(timestamp_centre(&fine), median(&fine));
        assert_eq!(timestamp_centre(&[]), None);
    }
}
