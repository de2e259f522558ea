//! Helpers shared by the tests of the kernels, the demos and the fleet (a dev-dependency of
//! each): the window tests' X server, and skips the test runner counts.

pub mod skip;
pub mod x11;

pub use skip::skip;
