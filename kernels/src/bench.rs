//! Timing: warm-up, repeats, median/min/max, with the clock named. GPU work is timed with
//! timestamp queries where the device has them, else with the wall clock around submit and
//! completion; rates (FLOP/s, bytes/s) are taken at the median.

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
/// summed to 27.5 ms of a step that took 8.7 on the wall, H100, kernels/PERF.md 2026-12-06).
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

/// What warming up took.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WarmUp {
    /// Units of work run.
    pub runs: usize,
    /// Wall time spent, ms.
    pub ms: f64,
    /// Wall time per unit in the last batch, ms.
    pub last_ms: f64,
    /// Whether three successive batches agreed within 5 % (else the budget ran out first).
    pub steady: bool,
}

/// Runs `work` — one unit of what is about to be timed (a frame, a forward pass, a step) —
/// unmeasured until the GPU's clocks are up: in batches of at least 40 ms, until three
/// successive batches agree within 5 % per unit (and at least 300 ms have passed), or until
/// `budget_ms` is spent (nothing at all for a budget of 0). A GPU that sat idle, or waited through a long CPU phase, runs several
/// times slower for the first few hundred milliseconds.
pub async fn warm_up<E>(
    mut work: impl AsyncFnMut() -> Result<(), E>,
    budget_ms: f64,
) -> Result<WarmUp, E> {
    let start = Instant::now();
    let elapsed = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    let mut per_unit: Vec<f64> = Vec::new();
    let mut runs = 0;
    if budget_ms <= 0.0 {
        return Ok(WarmUp {
            runs,
            ms: 0.0,
            last_ms: 0.0,
            steady: false,
        });
    }
    loop {
        let batch = Instant::now();
        let mut n = 0;
        while (n < 3 || elapsed(batch) < 40.0) && !(n > 0 && elapsed(start) >= budget_ms) {
            work().await?;
            n += 1;
        }
        runs += n;
        per_unit.push(elapsed(batch) / n as f64);
        let steady = per_unit.len() >= 3 && elapsed(start) >= 300.0 && {
            let last = &per_unit[per_unit.len() - 3..];
            let (lo, hi) = last.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
            hi <= lo * 1.05
        };
        if steady || elapsed(start) >= budget_ms {
            return Ok(WarmUp {
                runs,
                ms: elapsed(start),
                last_ms: per_unit.last().copied().unwrap_or(0.0),
                steady,
            });
        }
    }
}

/// Keeps a hardware GPU fully busy for `ms` with a chain of multiply-adds (the fleet's FMA
/// ceiling kernel), so that its clocks are up before light work is timed: a forward pass that
/// leaves the GPU idle between submissions can time steadily at low clocks (6.2 ms a MiniLM
/// forward on an H200 that later ran it in 1.8 ms). Nothing on a software adapter.
pub async fn heat(gpu: &Gpu, ms: f64) -> Result<()> {
    let ms = warm_up_budget_ms(gpu, ms);
    if ms <= 0.0 {
        return Ok(());
    }
    let n = 1 << 22;
    let x = crate::tensor::Tensor::full(gpu, &[n], 0.5, crate::dtype::DType::F32)?;
    let y = crate::tensor::Tensor::uninit(gpu, &[n], crate::dtype::DType::F32)?;
    let (fma, _) = crate::ops::fma_chain::plan(&x, &y, 256, 0.999, 0.001, None)?;
    let start = Instant::now();
    while start.elapsed().as_secs_f64() * 1e3 < ms {
        for _ in 0..8 {
            gpu.submit(&[&fma])?;
        }
        gpu.idle().await?;
    }
    gpu.mark_busy();
    Ok(())
}

/// Keeps the GPU busy with `dispatches` until its clocks are up (see [`warm_up`]; at most
/// `ms` of wall time), unmeasured. A fifth of the time goes to [`heat`] first: a unit of a few
/// microseconds leaves the GPU idle between its submissions, so it may not raise the clocks
/// itself, while its time per unit (the host's round trip) looks steady at any clock (decode
/// rows timed 3–4× slow on the H200 that way, PERF.md 2026-12-04).
pub async fn spin_up(gpu: &Gpu, dispatches: &[&Dispatch], ms: f64) -> Result<WarmUp> {
    let heating = ms / 5.0;
    heat(gpu, heating).await?;
    warm_up(
        async || {
            for _ in 0..4 {
                gpu.submit(dispatches)?;
            }
            gpu.idle().await
        },
        ms - heating,
    )
    .await
}

/// How long to warm a device up for before timing it: a hardware GPU needs a few hundred
/// milliseconds of work to raise its clocks; a software adapter has none to raise.
pub fn warm_up_budget_ms(gpu: &Gpu, hardware_ms: f64) -> f64 {
    if gpu.profile().is_software() {
        0.0
    } else {
        hardware_ms
    }
}

/// Times prepared dispatches run in order as one unit (one op, or a whole frame of several):
/// the GPU warmed up first (at most a second; not on a software adapter), `warmup` more
/// unmeasured runs, then `repeats` measured ones.
pub async fn time_dispatches(
    gpu: &Gpu,
    dispatches: &[&Dispatch],
    warmup: usize,
    repeats: usize,
) -> Result<Timing> {
    check_repeats(repeats)?;
    // A GPU that was timed a moment ago is still at its clocks: a sweep warms it up once.
    if !gpu.busy_within(150.0) {
        spin_up(gpu, dispatches, warm_up_budget_ms(gpu, 1000.0)).await?;
    }
    for _ in 0..warmup {
        gpu.submit(dispatches)?;
    }
    gpu.idle().await?;
    let timing = if gpu.profile().features.timestamp_query {
        time_with_timestamps(gpu, dispatches, warmup, repeats).await
    } else {
        let mut samples = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            let start = Instant::now();
            gpu.submit(dispatches)?;
            gpu.idle().await?;
            samples.push(start.elapsed().as_secs_f64() * 1e3);
        }
        Timing::from_samples(Clock::WallClock, warmup, samples)
    };
    gpu.mark_busy();
    timing
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
    let prepared = gpu.prepare(dispatches)?;
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
        prepared.record(&mut pass);
    }
    encoder.resolve_query_set(&queries, 0..count, &resolved, 0);
    gpu.queue().submit([encoder.finish()]);
    let bytes = read_raw(gpu, &resolved, u64::from(count) * 8).await?;
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

/// What the host spends issuing one unit of work (medians over runs, ms, each part's median
/// taken apart, so they need not add up): `record`, the CPU recording its launches (or
/// appending a plan); `submit`, encoding them into command buffers and submitting them, of which
/// `encode` is wgpu's encoding and `queue_submit` its `queue.submit` calls; and record and
/// submit over the launches.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostCost {
    pub record_ms: f64,
    pub submit_ms: f64,
    pub encode_ms: f64,
    pub queue_submit_ms: f64,
    pub launches: u64,
    pub submissions: u64,
    pub us_per_launch: f64,
    /// `encode_ms` over the launches.
    pub encode_us_per_launch: f64,
    /// `queue_submit_ms` over the submissions.
    pub us_per_submission: f64,
}

/// Per-run samples (ms) of where the host's time for a unit of work goes: `record`, `submit`
/// (the flush after it: `encode` and `queue_submit` within it), and `finish` (waiting for the
/// result); and the launches and submissions of the last run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostRuns {
    pub record: Vec<f64>,
    pub submit: Vec<f64>,
    pub encode: Vec<f64>,
    pub queue_submit: Vec<f64>,
    pub finish: Vec<f64>,
    pub launches: u64,
    pub submissions: u64,
}

impl HostRuns {
    /// The medians, and record and submit over the launches; `None` without samples.
    pub fn cost(&self) -> Option<HostCost> {
        let (record_ms, submit_ms) = median(&self.record).zip(median(&self.submit))?;
        let (encode_ms, queue_submit_ms) = median(&self.encode).zip(median(&self.queue_submit))?;
        let per = |ms: f64, n: u64| 1e3 * ms / n.max(1) as f64;
        Some(HostCost {
            record_ms,
            submit_ms,
            encode_ms,
            queue_submit_ms,
            launches: self.launches,
            submissions: self.submissions,
            us_per_launch: per(record_ms + submit_ms, self.launches),
            encode_us_per_launch: per(encode_ms, self.launches),
            us_per_submission: per(queue_submit_ms, self.submissions),
        })
    }
}

/// Runs a unit of work `runs` times (at least once), timing its three parts with the wall
/// clock: `record` records it (lazily or by appending a plan) and returns what to wait for,
/// the device's recording is flushed, and `finish` waits for the result. The flush's encoding
/// and `queue.submit` calls come from the device's counters over the flush alone.
pub async fn host_runs<T, E: From<Error>>(
    gpu: &Gpu,
    runs: usize,
    mut record: impl FnMut() -> Result<T, E>,
    mut finish: impl AsyncFnMut(T) -> Result<(), E>,
) -> Result<HostRuns, E> {
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    let mut out = HostRuns::default();
    for _ in 0..runs.max(1) {
        let before = gpu.counters();
        let start = Instant::now();
        let pending = record()?;
        out.record.push(ms(start));
        let (start, flushing) = (Instant::now(), gpu.counters());
        gpu.flush()?;
        out.submit.push(ms(start));
        let flushed = gpu.counters();
        let flush = flushed - flushing;
        out.encode.push(flush.encode_ns as f64 / 1e6);
        out.queue_submit.push(flush.queue_submit_ns as f64 / 1e6);
        out.launches = (flushed - before).dispatches;
        out.submissions = flush.submissions;
        let start = Instant::now();
        finish(pending).await?;
        out.finish.push(ms(start));
    }
    Ok(out)
}

/// What one unit of recorded work (a forward pass, a training step, a frame) asks of the
/// device once its shapes have been seen, and where its GPU time goes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnitProfile {
    /// Submissions, launches, buffers, bind groups, pipelines, writes and readbacks of one
    /// unit after a first run (pipelines built, the pool filled).
    pub counts: Counters,
    /// GPU time per unit from timestamps at the start and end of each submission's compute
    /// passes, the union of the submissions' spans ([`busy_ms`]; median over the runs); `None`
    /// without timestamp queries.
    pub gpu_ms: Option<f64>,
    /// The same unit with every launch in a pass of its own, timed: the kernels' GPU time by
    /// family, largest first. Pass boundaries add a little to each, and a pass's span may begin
    /// before the one before it ends, so the families' sum may exceed `gpu_ms`.
    pub by_family: Vec<FamilyTime>,
}

/// GPU time of one family's launches in a unit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FamilyTime {
    pub family: String,
    pub launches: usize,
    pub ms: f64,
}

/// Profiles `work` (one unit, ending in a readback or flush): a first run, a counted run,
/// `runs` runs timed per submission, and one run timed per launch.
pub async fn profile_unit<E: From<Error>>(
    gpu: &Gpu,
    mut work: impl AsyncFnMut() -> Result<(), E>,
    runs: usize,
) -> Result<UnitProfile, E> {
    work().await?;
    let before = gpu.counters();
    work().await?;
    let counts = gpu.counters() - before;
    if !gpu.profile().features.timestamp_query {
        return Ok(UnitProfile {
            counts,
            gpu_ms: None,
            by_family: Vec::new(),
        });
    }
    gpu.set_pass_timing(PassTiming::PerSubmission)?;
    let mut totals = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        work().await?;
        totals.push(busy_ms(&gpu.take_pass_times().await?));
    }
    gpu.set_pass_timing(PassTiming::PerDispatch)?;
    work().await?;
    let each = gpu.take_pass_times().await?;
    gpu.set_pass_timing(PassTiming::Off)?;
    let mut by_family: Vec<FamilyTime> = Vec::new();
    for t in each {
        let family = t.what.split('/').next().unwrap_or("").to_string();
        match by_family.iter_mut().find(|f| f.family == family) {
            Some(f) => {
                f.launches += 1;
                f.ms += t.ms;
            }
            None => by_family.push(FamilyTime {
                family,
                launches: 1,
                ms: t.ms,
            }),
        }
    }
    by_family.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    Ok(UnitProfile {
        counts,
        gpu_ms: timestamp_centre(&totals),
        by_family,
    })
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
