//! Helpers shared by the window tests of the demos and the fleet (a dev-dependency of each).

pub mod x11;
