//! Where the host's time per launch goes: a unit run again and again, its recording, encoding
//! and submitting read from the device's counters.

use super::*;

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
