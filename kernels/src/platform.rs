//! The only places where native and the browser differ inside the kernel crate: waiting for
//! the GPU, and resolving error-scope futures. Natively both block briefly; in the browser
//! nothing may block, callbacks arrive through the event loop.

use crate::error::Result;

/// Drives the device until submitted work and its callbacks have completed (natively), or
/// returns at once (in the browser, where the event loop delivers the callbacks).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn drive(device: &wgpu::Device) -> Result<()> {
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map(|_| ())
        .map_err(|e| crate::error::Error::Gpu(e.to_string()))
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
