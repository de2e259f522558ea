//! `Prepared`: launches made ready once for benchmarks that record the same work many times
//! into their own command encoder.

use super::counters::Live;
use super::device::Gpu;
use super::dispatch::Dispatch;
use super::memory::Slice;
use crate::error::Result;

/// Prepared launches for benchmarks that record the same work many times into their own
/// command encoder: parameters in a buffer of their own, bind groups made once.
#[derive(Debug)]
pub struct Prepared {
    steps: Vec<(
        wgpu::ComputePipeline,
        wgpu::BindGroup,
        Option<u32>,
        [u32; 3],
    )>,
    _params: Option<wgpu::Buffer>,
    _hold: Vec<Slice>,
}

impl Prepared {
    /// Records the launches, in order, into `pass`.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        for (pipeline, bind, offset, [x, y, z]) in &self.steps {
            pass.set_pipeline(pipeline);
            match offset {
                Some(o) => pass.set_bind_group(0, bind, &[*o]),
                None => pass.set_bind_group(0, bind, &[]),
            }
            pass.dispatch_workgroups(*x, *y, *z);
        }
    }
}

impl Gpu {
    /// Prepares launches for a benchmark that records them many times itself.
    pub fn prepare(&self, dispatches: &[&Dispatch]) -> Result<Prepared> {
        let device = &self.inner.device;
        let mut bytes = Vec::new();
        let mut offsets = Vec::new();
        for d in dispatches {
            if d.kernel.uniform.is_none() {
                offsets.push(None);
                continue;
            }
            let at = bytes.len();
            offsets.push(Some(at as u32));
            bytes.extend_from_slice(&d.params);
            bytes.resize(at + self.param_slot(d.params.len() as u64) as usize, 0);
        }
        let params = (!bytes.is_empty()).then(|| {
            use wgpu::util::DeviceExt;
            Live::bump(&self.inner.counters.buffers_created, 1);
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("kiln prepared params"),
                contents: &bytes,
                usage: wgpu::BufferUsages::UNIFORM,
            })
        });
        let mut steps = Vec::new();
        let mut hold = Vec::new();
        for (d, offset) in dispatches.iter().zip(offsets) {
            let bind = self.create_bind_group(&d.kernel, &d.buffers, params.as_ref())?;
            steps.push((d.kernel.pipeline.clone(), bind, offset, d.groups));
            hold.extend(d.buffers.iter().cloned());
        }
        Ok(Prepared {
            steps,
            _params: params,
            _hold: hold,
        })
    }
}
