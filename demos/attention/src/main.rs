//! The attention demo's window (natively) or canvas (in the browser).

#[cfg(target_arch = "wasm32")]
mod web;

fn main() {
    kiln_app::run::<attention::Attention>();
}
