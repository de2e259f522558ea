//! Pass timing: GPU timestamps around each submission or each launch, read back as `PassTime`s.

use super::counters::Live;
use super::device::Gpu;
use super::memory::lock;
use super::readback::read_raw;
use super::record::{MAX_QUERIES, PassTime, PassTiming, Queries};
use crate::error::Result;

impl Gpu {
    /// Times the following submissions with GPU timestamps (a no-op without them); the
    /// samples are read with [`take_pass_times`](Self::take_pass_times). Samples of work before
    /// the call that were not taken are dropped: a reading mixed with them would count another
    /// unit's spans in this one's, past its wall clock.
    pub fn set_pass_timing(&self, timing: PassTiming) -> Result<()> {
        self.flush()?;
        let mut rec = lock(&self.inner.recorder);
        if let Some(q) = rec.queries.as_mut() {
            q.labels.clear();
        }
        rec.timing = timing;
        if timing != PassTiming::Off && rec.queries.is_none() {
            rec.queries = self.new_queries();
        }
        Ok(())
    }

    /// The GPU times measured since timing was turned on (or last taken), in order.
    pub async fn take_pass_times(&self) -> Result<Vec<PassTime>> {
        self.flush()?;
        let taken = {
            let mut rec = lock(&self.inner.recorder);
            match &mut rec.queries {
                Some(q) if !q.labels.is_empty() => Some((
                    q.set.clone(),
                    q.resolve.clone(),
                    std::mem::take(&mut q.labels),
                )),
                _ => None,
            }
        };
        let Some((set, resolve, labels)) = taken else {
            return Ok(Vec::new());
        };
        let count = 2 * labels.len() as u32;
        let mut encoder =
            self.inner
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("kiln pass timing"),
                });
        encoder.resolve_query_set(&set, 0..count, &resolve, 0);
        self.inner.queue.submit([encoder.finish()]);
        Live::bump(&self.inner.counters.submissions, 1);
        let all = read_raw(self, &resolve, u64::from(count) * 8).await?;
        let ns_per_tick = self.inner.queue.get_timestamp_period();
        let stamp = |c: &[u8]| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            u64::from_le_bytes(b)
        };
        let origin = all.chunks_exact(16).map(|p| stamp(&p[..8])).min();
        let ms = |ticks: u64| ticks as f64 * f64::from(ns_per_tick) / 1e6;
        Ok(all
            .chunks_exact(16)
            .zip(labels)
            .map(|(pair, what)| {
                let (start, end) = (stamp(&pair[..8]), stamp(&pair[8..16]));
                PassTime {
                    what,
                    ms: ms(end.saturating_sub(start)),
                    start_ms: ms(start.saturating_sub(origin.unwrap_or(start))),
                }
            })
            .collect())
    }

    fn new_queries(&self) -> Option<Queries> {
        if !self.profile().features.timestamp_query {
            return None;
        }
        let device = &self.inner.device;
        let set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("kiln pass timing"),
            ty: wgpu::QueryType::Timestamp,
            count: MAX_QUERIES,
        });
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("kiln pass timing"),
            size: u64::from(MAX_QUERIES) * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Live::bump(&self.inner.counters.buffers_created, 1);
        Some(Queries {
            set,
            resolve,
            labels: Vec::new(),
        })
    }
}
