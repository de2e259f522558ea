//! Timing: warm-up, repeats, median/min/max, with the clock named. GPU work is timed with
//! timestamp queries where the device has them, else with the wall clock around submit and
//! completion; rates (FLOP/s, bytes/s) are taken at the median.

use std::fmt;

use serde::Serialize;
use web_time::Instant;

use crate::error::{Error, Result};
use crate::gpu::{Dispatch, Gpu};
use crate::tensor::read_buffer;

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
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
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
        Ok(Timing {
            clock,
            warmup,
            median_ms: median(&samples_ms).unwrap_or(0.0),
            min_ms: samples_ms.iter().copied().fold(f64::INFINITY, f64::min),
            max_ms: samples_ms.iter().copied().fold(0.0, f64::max),
            samples_ms,
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

/// Keeps the GPU busy with `dispatches` for at least `ms` of wall time, unmeasured. A GPU that sat
/// idle (while the CPU reference ran, say) starts at low clocks, and a few warm-up runs of a
/// short kernel end before the clocks are back up.
pub async fn spin_up(gpu: &Gpu, dispatches: &[&Dispatch], ms: f64) -> Result<()> {
    let start = Instant::now();
    while start.elapsed().as_secs_f64() * 1e3 < ms {
        for _ in 0..4 {
            gpu.submit(dispatches);
        }
        gpu.idle().await?;
    }
    Ok(())
}

/// Times prepared dispatches run in order as one unit (one op, or a whole frame of several):
/// `warmup` unmeasured runs, then `repeats` measured ones.
pub async fn time_dispatches(
    gpu: &Gpu,
    dispatches: &[&Dispatch],
    warmup: usize,
    repeats: usize,
) -> Result<Timing> {
    check_repeats(repeats)?;
    for _ in 0..warmup {
        gpu.submit(dispatches);
    }
    gpu.idle().await?;
    if gpu.profile().features.timestamp_query {
        time_with_timestamps(gpu, dispatches, warmup, repeats).await
    } else {
        let mut samples = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            let start = Instant::now();
            gpu.submit(dispatches);
            gpu.idle().await?;
            samples.push(start.elapsed().as_secs_f64() * 1e3);
        }
        Timing::from_samples(Clock::WallClock, warmup, samples)
    }
}

async fn time_with_timestamps(
    gpu: &Gpu,
    dispatches: &[&Dispatch],
    warmup: usize,
    repeats: usize,
) -> Result<Timing> {
    let device = gpu.device();
    let count = 2 * repeats as u32;
    let queries = device.create_query_set(&wgpu::QuerySetDescriptor {
        label: Some("kiln bench"),
        ty: wgpu::QueryType::Timestamp,
        count,
    });
    let resolved = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("kiln bench timestamps"),
        size: u64::from(count) * 8,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("kiln bench"),
    });
    for i in 0..repeats as u32 {
        // One pass per run: its two timestamps bracket exactly these dispatches.
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("kiln bench"),
            timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                query_set: &queries,
                beginning_of_pass_write_index: Some(2 * i),
                end_of_pass_write_index: Some(2 * i + 1),
            }),
        });
        for d in dispatches {
            d.record(&mut pass);
        }
    }
    encoder.resolve_query_set(&queries, 0..count, &resolved, 0);
    gpu.queue().submit([encoder.finish()]);
    let bytes = read_buffer(gpu, &resolved).await?;
    let ns_per_tick = f64::from(gpu.queue().get_timestamp_period());
    let ticks: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect();
    let samples = ticks
        .chunks_exact(2)
        .map(|pair| pair[1].saturating_sub(pair[0]) as f64 * ns_per_tick / 1e6)
        .collect();
    Timing::from_samples(Clock::GpuTimestamps, warmup, samples)
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
