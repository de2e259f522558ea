//! The only places where native and the browser differ inside the kernel crate: waiting for
//! the GPU, and resolving error-scope futures. Natively both block briefly; in the browser
//! nothing may block, callbacks arrive through the event loop.

use crate::error::Result;

/// How long [`drive`] checks the device in a loop before it blocks in the driver's wait: a
/// thread woken from that wait may start tens of µs after the GPU is done, a tenth of a short
/// forward (kernels/perf/split-sums-in-permutes.md, where the read-back's wait came down and the
/// wall clock of a noisy host did not show it). It costs a core this long at most per wait.
#[cfg(not(target_arch = "wasm32"))]
const SPIN: std::time::Duration = std::time::Duration::from_micros(500);

/// Drives the device until submitted work and its callbacks have completed (natively), or
/// returns at once (in the browser, where the event loop delivers the callbacks). Natively, with
/// `spin` (a hardware adapter: a software one needs every core for the work itself), it checks
/// the device without blocking for up to [`SPIN`] first.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn drive(device: &wgpu::Device, spin: bool) -> Result<()> {
    let gpu_error = |e: wgpu::PollError| crate::error::Error::Gpu(e.to_string());
    let start = std::time::Instant::now();
    while spin && start.elapsed() < SPIN {
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
pub(crate) fn drive(_device: &wgpu::Device, _spin: bool) -> Result<()> {
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
