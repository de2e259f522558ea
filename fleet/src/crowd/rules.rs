//! The merge's thresholds: the quorum, how far past its class's ceilings a time may go, how far
//! a report's claimed ceilings may sit from its class's, and what no device of a type can beat.

/// Devices that must agree before the crowd decides a (class, family, bucket, scope).
pub const DEFAULT_QUORUM: usize = 3;
/// How far past the device's own ceilings a time may go before it is impossible: caches can
/// beat the copy kernel's DRAM bandwidth, and matrix units (f16 cooperative matrices) run at up
/// to ~16× the f32 FMA peak, of which the FMA chain measures about half. The curated reports'
/// fastest results reach 1× (lavapipe's copy) and 0.36× (the H200's).
pub const DEFAULT_MARGIN: f64 = 32.0;
/// How far a report's claimed ceilings may sit from its class's median (either way) before the
/// report is set aside: devices of one class differ (a laptop's and a desktop's GPU of one
/// vendor and feature set, about 4.5× in copy bandwidth), a forged ceiling by far more.
pub const CEILING_SPREAD: f64 = 16.0;

/// The most any device of a type can do, whatever its reports claim: the class's ceilings are
/// clamped to these (copy GB/s read + written, FMA GFLOP/s). The H200 measures 4,300 and about
/// 33,000; these leave room for hardware years ahead, not for 1e30.
pub(super) fn physical_limit(device_type: &str) -> (f64, f64) {
    match device_type {
        "cpu" => (2_000.0, 50_000.0),
        _ => (30_000.0, 1_000_000.0),
    }
}

/// The merge's thresholds.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    pub quorum: usize,
    pub margin: f64,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            quorum: DEFAULT_QUORUM,
            margin: DEFAULT_MARGIN,
        }
    }
}

/// Why a time is impossible on a class's ceilings (`margin` past them), or `None`.
pub(super) fn implausible(
    ms: f64,
    bytes: f64,
    flops: f64,
    copy: f64,
    fma: f64,
    margin: f64,
) -> Option<String> {
    let gb = bytes / ms / 1e6;
    let gflop = flops / ms / 1e6;
    if gb > copy * margin {
        return Some(format!(
            "implausible: {ms:.3e} ms moves {gb:.3e} GB/s, over {margin}× the class's copy \
             ceiling of {copy:.3e} GB/s"
        ));
    }
    if gflop > fma * margin {
        return Some(format!(
            "implausible: {ms:.3e} ms does {gflop:.3e} GFLOP/s, over {margin}× the class's FMA \
             ceiling of {fma:.3e} GFLOP/s"
        ));
    }
    None
}
