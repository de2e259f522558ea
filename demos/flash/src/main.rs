//! `flash`: the speed page in a window, or headless: `--bench` trains a preset on both paths and
//! prints the comparison; `sample` continues a prompt from a checkpoint; `presets` lists the
//! shapes.

#[cfg(not(target_arch = "wasm32"))]
mod cli;

fn main() {
    #[cfg(not(target_arch = "wasm32"))]
    cli::main();
}
