//! Readback: copies GPU bytes to the CPU through a pooled staging buffer, behind the work
//! recorded so far.

use crate::error::{Error, Result};
use crate::gpu::device::Gpu;
use crate::gpu::memory::{Kind, Slice};
use crate::platform;

/// Copies a slice back to the CPU: the copy is recorded behind the work that writes it, the
/// recording submitted, and the staging buffer (from the pool) mapped; then any error wgpu
/// raised on the way is reported.
pub(crate) async fn read_slice(gpu: &Gpu, slice: &Slice) -> Result<Vec<u8>> {
    start_read_slice(gpu, slice)?.await
}

/// [`read_slice`], started now: the copy recorded and submitted and the map asked for before
/// this returns, the bytes when the future is awaited. Work recorded in between runs on the GPU
/// while the read comes back (a training step's losses read while the next step runs) and is
/// not part of what is read.
pub(crate) fn start_read_slice(
    gpu: &Gpu,
    slice: &Slice,
) -> Result<impl Future<Output = Result<Vec<u8>>> + 'static> {
    let staging = staging(gpu, slice.size)?;
    gpu.record_copy(slice, &staging)?;
    map_staging(gpu, staging)
}

/// Copies the first `bytes` of a buffer outside the pool (timestamp results) back to the CPU.
pub(crate) async fn read_raw(gpu: &Gpu, buffer: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
    let staging = staging(gpu, bytes)?;
    gpu.record_copy_from(buffer, &staging)?;
    map_staging(gpu, staging)?.await
}

fn staging(gpu: &Gpu, bytes: u64) -> Result<Slice> {
    let block = gpu.pooled_block(
        "readback",
        || "a staging buffer".into(),
        bytes,
        Kind::Readback,
    )?;
    Ok(Slice {
        block,
        offset: 0,
        size: bytes,
    })
}

/// Submits what is recorded and asks for `staging` to be mapped; the future waits for the map
/// and copies the bytes out.
fn map_staging(
    gpu: &Gpu,
    staging: Slice,
) -> Result<impl Future<Output = Result<Vec<u8>>> + 'static> {
    gpu.flush()?;
    gpu.count_readback();
    let (tx, rx) = futures_channel::oneshot::channel();
    staging
        .block
        .raw
        .map_async(wgpu::MapMode::Read, ..staging.size, move |result| {
            // The receiver only disappears if the caller gave up on the read.
            let _ = tx.send(result);
        });
    let gpu = gpu.clone();
    Ok(async move {
        platform::drive(gpu.device(), !gpu.profile().is_software())?;
        gpu.check()?;
        rx.await
            .map_err(|_| Error::Readback("the device dropped the map request".into()))?
            .map_err(|e| Error::Readback(e.to_string()))?;
        let raw = &staging.block.raw;
        let bytes = raw
            .get_mapped_range(..staging.size)
            .map_err(|e| Error::Readback(e.to_string()))?
            .to_vec();
        raw.unmap();
        Ok(bytes)
    })
}
