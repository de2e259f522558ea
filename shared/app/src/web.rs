//! What every page's wasm module needs around its exports, so that a demo's `mod web` holds
//! only its own exports: errors as JavaScript errors, the page's one device (opened on first
//! use, its pipelines kept between calls), a turn for the browser to draw between long steps,
//! progress reports to a page callback, and the panic hook and logger installed once.

use std::cell::RefCell;

use js_sys::{Function, Promise};
use kiln::{Gpu, GpuOptions};
use wasm_bindgen::{JsError, JsValue};
use wasm_bindgen_futures::JsFuture;

thread_local! {
    /// The page's device: a page opens one and every export shares it.
    static PAGE_GPU: RefCell<Option<Gpu>> = const { RefCell::new(None) };
}

/// An error as a JavaScript `Error` (what an export's `Result<_, JsError>` throws).
pub fn js_error(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// An error as a JavaScript value (a string: what an export's `Result<_, JsValue>` throws).
pub fn js_value(e: impl std::fmt::Display) -> JsValue {
    JsValue::from_str(&e.to_string())
}

/// A panic shows in the console with its message, and `log` goes there too; once per module.
pub fn start() {
    crate::platform::init_logging();
}

/// The page's one device, opened on first use (pipelines stay built between calls), with the
/// page's options.
pub async fn page_gpu() -> Result<Gpu, JsValue> {
    if let Some(gpu) = PAGE_GPU.with(|g| g.borrow().clone()) {
        return Ok(gpu);
    }
    let gpu = Gpu::new(&page_options()?).await.map_err(js_value)?;
    PAGE_GPU.with(|slot| *slot.borrow_mut() = Some(gpu.clone()));
    Ok(gpu)
}

/// The device options the page's URL asks for: `?without=` turns features off, comma-separated
/// (`subgroups`, `f16`, `timestamps`: the names of `kiln::gpu::OPTIONAL_FEATURES`, as `kiln
/// --without` takes them), so that a route can be timed beside its fallback on the same browser
/// and GPU. A name it does not know is an error that lists the names it does.
pub fn page_options() -> Result<GpuOptions, String> {
    let options = GpuOptions::default();
    let Some(window) = web_sys::window() else {
        return Ok(options);
    };
    let unreadable = |e: JsValue| format!("the page's address cannot be read: {e:?}");
    let search = window.location().search().map_err(unreadable)?;
    let params = web_sys::UrlSearchParams::new_with_str(&search).map_err(unreadable)?;
    let list = params.get("without").unwrap_or_default();
    options
        .without_named(&list)
        .map_err(|e| format!("?without={list}: {e}"))
}

/// Lets the browser draw and take input (a task turn) before the next step: a message through a
/// channel of its own. Not `setTimeout(0)`: a browser holds a timer set from a timer's task to
/// 4 ms once they nest five deep, as a loop of steps nests them (4.2 ms a yield measured in
/// headless Chromium, `site/tests/measure-readback.mjs`), which every step would pay.
pub async fn yield_to_page() -> Result<(), JsValue> {
    let channel = web_sys::MessageChannel::new()?;
    let (port1, port2) = (channel.port1(), channel.port2());
    let promise = Promise::new(&mut |resolve, _| port1.set_onmessage(Some(&resolve)));
    port2.post_message(&JsValue::UNDEFINED)?;
    JsFuture::from(promise).await?;
    // Closed, the ports keep nothing alive (Node, where measure-dawn.mjs runs the pages).
    port1.close();
    port2.close();
    Ok(())
}

/// Hands `value` to the page's progress callback as JSON text.
pub fn report(progress: &Function, value: &serde_json::Value) {
    let _ = progress.call1(&JsValue::NULL, &JsValue::from_str(&value.to_string()));
}
