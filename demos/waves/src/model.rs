//! The waves and the two factors of the frame.
//!
//! A plane wave sin(kx·x + ky·y − ω·t + φ) splits, by sin(α + β) = sin α cos β + cos α sin β, with
//! α = kx·x − ω·t + φ and β = ky·y, into a row factor and a column factor. For channel c and
//! waves w = 0..W:
//!
//!   L[c·H + y, 2w] = amp[c,w]·cos(ky_w·y)    R[2w,   x] = sin(α_w(x, t))
//!   L[c·H + y, 2w+1] = amp[c,w]·sin(ky_w·y)  R[2w+1, x] = cos(α_w(x, t))
//!
//! so the four planes of the frame are one product [4·H, 2W] · [2W, W_px]. L depends only on
//! the waves; R is a table of sines and cosines rebuilt each frame from W phases.

use rand::{Rng, SeedableRng, rngs::StdRng};

/// Wave coordinates are in a 1024-pixel frame whatever the resolution, so the picture keeps
/// its look when the resolution changes.
pub const FRAME_UNITS: f32 = 1024.0;

/// Planes map to bytes as 255 · clamp(v · SCALE + BIAS, 0, 1).
pub const SCALE: f32 = 0.22;
pub const BIAS: f32 = 0.5;

/// One plane wave sin(kx·x + ky·y − ω·t + φ), in frame units.
#[derive(Clone, Debug)]
pub struct Wave {
    pub kx: f32,
    pub ky: f32,
    pub omega: f32,
    pub phase: f32,
    /// Amplitude per plane: red, green, blue, and the mean of the three.
    pub amp: [f32; 4],
}

/// A set of waves on a square frame of `res` pixels.
#[derive(Clone, Debug)]
pub struct Model {
    pub res: usize,
    pub seed: u64,
    waves: Vec<Wave>,
}

impl Model {
    pub fn new(count: usize, res: usize, seed: u64) -> Model {
        // talk:begin waves
        let mut rng = StdRng::seed_from_u64(seed);
        let norm = 2.0 / (count as f32).sqrt();
        let waves = (0..count)
            .map(|_| {
                let wavelength = rng.random_range(100.0f32..600.0);
                let k = std::f32::consts::TAU / wavelength;
                let dir = rng.random_range(0.0..std::f32::consts::TAU);
                let speed = rng.random_range(30.0f32..160.0);
                let rgb = [
                    rng.random_range(-1.0f32..1.0),
                    rng.random_range(-1.0f32..1.0),
                    rng.random_range(-1.0f32..1.0),
                ];
                let mean = (rgb[0] + rgb[1] + rgb[2]) / 3.0;
                Wave {
                    kx: k * dir.cos(),
                    ky: k * dir.sin(),
                    omega: k * speed,
                    phase: rng.random_range(0.0..std::f32::consts::TAU),
                    amp: [rgb[0] * norm, rgb[1] * norm, rgb[2] * norm, mean * norm],
                }
            })
            .collect();
        // talk:end waves
        Model { res, seed, waves }
    }

    pub fn waves(&self) -> &[Wave] {
        &self.waves
    }

    pub fn count(&self) -> usize {
        self.waves.len()
    }

    /// Frame units per pixel.
    pub fn step(&self) -> f32 {
        FRAME_UNITS / self.res as f32
    }

    /// The row factor L [4·res, 2W], fixed for a model.
    pub fn left(&self) -> Vec<f32> {
        let (h, w2) = (self.res, 2 * self.count());
        let mut l = vec![0.0f32; 4 * h * w2];
        for c in 0..4 {
            for y in 0..h {
                let yy = y as f32 * self.step();
                let row = &mut l[(c * h + y) * w2..][..w2];
                for (i, wave) in self.waves.iter().enumerate() {
                    let beta = wave.ky * yy;
                    row[2 * i] = wave.amp[c] * beta.cos();
                    row[2 * i + 1] = wave.amp[c] * beta.sin();
                }
            }
        }
        l
    }

    /// kx per wave: the frequencies of the column factor's sinusoid table.
    pub fn freq(&self) -> Vec<f32> {
        self.waves.iter().map(|w| w.kx).collect()
    }

    /// φ − ω·t per wave at time `t`, wrapped to [0, 2π) so the angles stay small.
    pub fn phases(&self, t: f32) -> Vec<f32> {
        self.waves
            .iter()
            .map(|w| (w.phase - w.omega * t).rem_euclid(std::f32::consts::TAU))
            .collect()
    }
}
