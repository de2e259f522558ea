//! `fleet`: run the campaign on this machine's GPU, validate reports, merge them into the tuned
//! table, show them, and walk an audience through it (`fleet talk`). A native program: the
//! browser runs the campaign through the fleet-web crate instead.

#[cfg(not(target_arch = "wasm32"))]
mod cli;
#[cfg(not(target_arch = "wasm32"))]
mod collector;
#[cfg(not(target_arch = "wasm32"))]
mod presenter;

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    cli::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
