//! The only places where native and the browser differ inside the kernel crate: waiting for
//! the GPU, and resolving error-scope futures. Natively both block briefly; in the browser
//! nothing may block, callbacks arrive through the event loop.

use crate::error::Result;

/// How long [`drive`] checks the device in a loop before it blocks in the driver's wait.
/// Sleeping in the driver's wait and being woken costs tens of µs after the GPU is done, more
/// than a short forward takes (PERF.md, 2026-12-05, later); a model's pass finishes within this,
/// and work that runs longer (a software adapter's) pays this much of a core once per wait.
#[cfg(not(target_arch = "wasm32"))]
const SPIN: std::time::Duration = std::time::Duration::from_micros(500);

/// Drives the device until submitted work and its callbacks have completed (natively), or
/// returns at once (in the browser, where the event loop delivers the callbacks). Natively it
/// checks the device without blocking for up to [`SPIN`], then blocks until the work is done.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn drive(device: &wgpu::Device) -> Result<()> {
    let gpu_error = |e: wgpu::PollError| crate::error::Error::Gpu(e.to_string());
    let start = std::time::Instant::now();
    while start.elapsed() < SPIN {
        if device
            .poll(wgpu::PollType::Poll)
            .map_err(gpu_error)?
            .is_queue_empty()
        {
            return Ok(());
        }
        std::hint::spin_loop();
    }
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map(|_| ())
        .map_err(gpu_error)
}

#[cfg(target_arch = "wasm32")]
pub(crate) fn drive(_device: &wgpu::Device) -> Result<()> {
    Ok(())
}

/// Resolves the future of a popped error scope. Natively it is ready at once and its error is
/// returned; in the browser it resolves later, and its error goes to `late` instead.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn scope_error(
    scope: impl std::future::Future<Output = Option<wgpu::Error>>,
    _late: impl FnOnce(wgpu::Error) + 'static,
) -> Option<wgpu::Error> {
    pollster::block_on(scope)
}

#[cfg(target_arch = "wasm32")]
pub(crate) fn scope_error(
    scope: impl std::future::Future<Output = Option<wgpu::Error>> + 'static,
    late: impl FnOnce(wgpu::Error) + 'static,
) -> Option<wgpu::Error> {
    wasm_bindgen_futures::spawn_local(async move {
        if let Some(e) = scope.await {
            late(e);
        }
    });
    None
}

/// What a capture keeps of an op call (`ops::fuse`'s notes): shareable between threads
/// natively, as the device that holds it is; in the browser, where the device is not, any
/// value. Read back through [`as_any`](Self::as_any).
pub(crate) trait Noting: std::any::Any + wgpu::WasmNotSendSync {
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: std::any::Any + wgpu::WasmNotSendSync> Noting for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
