//! Timing GPU work: prepared launches with timestamp queries (or the wall clock where the
//! device has none), and a unit's launches profiled per family.

use super::*;

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
        warm_up_dispatches(gpu, dispatches, warm_up_budget_ms(gpu, 1000.0)).await?;
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

pub(super) async fn time_with_timestamps(
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
    /// The wall clock of the same timed runs, median: the GPU's part of a run can be no longer,
    /// and [`profile_unit`] refuses a profile whose GPU time is (wrong timestamps, or spans of
    /// one run counted in another).
    pub wall_ms: Option<f64>,
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
            wall_ms: None,
            by_family: Vec::new(),
        });
    }
    gpu.set_pass_timing(PassTiming::PerSubmission)?;
    let mut totals = Vec::with_capacity(runs);
    let mut walls = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        // Anything queued before the run is done first: its spans are not the run's.
        gpu.idle().await?;
        let began = Instant::now();
        work().await?;
        gpu.idle().await?;
        walls.push(began.elapsed().as_secs_f64() * 1e3);
        let busy = busy_ms(&gpu.take_pass_times().await?);
        check_within_wall(busy, walls[walls.len() - 1])?;
        totals.push(busy);
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
        wall_ms: median(&walls),
        by_family,
    })
}

/// Refuses a run whose GPU time (the union of its submissions' spans) is longer than the wall
/// clock around it: no GPU time can be, so the timestamps or their reading are wrong, and no
/// figure should be printed from them. A timestamp grid (a browser's rounding) may put a short
/// run's reading a quantum over.
pub fn check_within_wall(gpu_ms: f64, wall_ms: f64) -> Result<()> {
    let grid = 0.07; // Chrome rounds timestamps to 65.5 µs.
    if gpu_ms > wall_ms * 1.01 + grid {
        return Err(Error::Gpu(format!(
            "a run's GPU time ({gpu_ms:.3} ms) is over its wall clock ({wall_ms:.3} ms): the \
             timestamps or the union of their spans are wrong, so no GPU time is reported"
        )));
    }
    Ok(())
}
