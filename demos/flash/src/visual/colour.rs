//! The visuals' palette: cells not yet computed, masked cells, the highlight, and the warm and
//! cool ends of the scales that colour scores and probabilities.

pub(super) const FUTURE: [u8; 3] = [40, 44, 56];
pub(super) const MASKED: [u8; 3] = [24, 26, 33];
pub(super) const HIGHLIGHT: [u8; 3] = [250, 250, 255];
pub(super) const WARM: [u8; 3] = [255, 180, 84];
pub(super) const COOL: [u8; 3] = [90, 150, 255];

/// The colour `t` (clamped to 0..1) of the way from `a` to `b`.
pub(super) fn mix(a: [u8; 3], b: [u8; 3], t: f64) -> [u8; 3] {
    let t = t.clamp(0.0, 1.0);
    std::array::from_fn(|k| (f64::from(a[k]) * (1.0 - t) + f64::from(b[k]) * t).round() as u8)
}

/// A score's heat-map colour: warm above 0, cool below, by its size against `range`.
pub(super) fn heat_colour(s: f32, range: f32) -> [u8; 3] {
    let t = f64::from(s / range);
    if t >= 0.0 {
        mix(FUTURE, WARM, t.sqrt())
    } else {
        mix(FUTURE, COOL, (-t).sqrt())
    }
}

/// A probability's colour, on a dark-to-bright scale (a power below 1/2: most are small).
pub(super) fn prob_colour(p: f32) -> [u8; 3] {
    mix(
        [34, 36, 48],
        [255, 236, 150],
        f64::from(p.max(0.0)).powf(0.4),
    )
}
