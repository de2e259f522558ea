//! The browser's CPU fallback: without a WebGPU adapter there is no window to open (kiln-app's
//! `run` returns), and the page (site/src/waves.js) draws the CPU path's frames from this export
//! into a 2D canvas — and, in the walkthrough, each stage's picture, computed on the CPU path,
//! beside the stage list with the kernels rendered for a stored profile.

use std::collections::VecDeque;

use kiln_app::kiln::cpu::{self, Array};
use kiln_app::raster::Bitmap;
use kiln_app::raster::palette::{MUTED, TEXT};
use kiln_app::talk::{Stored, Target};
use kiln_app::web::js_error;
use wasm_bindgen::prelude::*;
use web_time::Instant;

use crate::frame::{cpu_frame, frame_choices};
use crate::model::Model;
use crate::stages::{COLOUR, FACTORS, PARAMETERS, PRODUCT, walkthrough};
use crate::visual;

/// How many frame times the CPU rate is the median of.
const TIMED: usize = 5;

/// The waves on the CPU path: the same model and the same three steps as the GPU path.
#[wasm_bindgen]
#[derive(Debug)]
pub struct CpuWaves {
    model: Model,
    left: Array,
    /// The last few frames' wall-clock times, ms (the last stage's rate).
    times_ms: VecDeque<f64>,
}

#[wasm_bindgen]
impl CpuWaves {
    /// `count` waves (1–128) on a `res`×`res` frame (1–1024).
    #[wasm_bindgen(constructor)]
    pub fn new(count: usize, res: usize, seed: u32) -> Result<CpuWaves, JsError> {
        if !(1..=128).contains(&count) || !(1..=1024).contains(&res) {
            return Err(JsError::new(&format!(
                "waves: {count} waves at {res}×{res} is out of range (1–128 waves, 1–1024 pixels)"
            )));
        }
        let model = Model::new(count, res, u64::from(seed));
        let left = Array::new(&[4 * res, 2 * count], model.left()).map_err(js_error)?;
        Ok(CpuWaves {
            model,
            left,
            times_ms: VecDeque::new(),
        })
    }

    /// The frame at time `t` seconds as RGBA8 bytes, opaque (for `ImageData`).
    pub fn frame(&mut self, t: f32) -> Result<Vec<u8>, JsError> {
        let pixels = self.timed_frame(t)?;
        // The fourth plane (the mean wave) sits in the alpha byte: the page shows RGB.
        Ok(pixels
            .iter()
            .flat_map(|p| {
                let [r, g, b, _] = p.to_le_bytes();
                [r, g, b, 255]
            })
            .collect())
    }

    /// The walkthrough stage `stage`'s picture (0-based) at time `t`, `stage_size` pixels
    /// square, as RGBA8 bytes: what the GPU path's pictures show, computed on the CPU path.
    /// The colour-mapping stage shows the frame itself (`frame`).
    pub fn stage(&mut self, stage: usize, t: f32) -> Result<Vec<u8>, JsError> {
        let m = &self.model;
        let picture = match stage {
            PARAMETERS => visual::parameters(m, t),
            FACTORS | PRODUCT => {
                let right = cpu::sinusoid(&m.freq(), &m.phases(t), m.res, 0.0, m.step())
                    .map_err(js_error)?;
                if stage == FACTORS {
                    visual::factors(m, &self.left.data, &right.data)
                } else {
                    let planes = cpu::matmul(&self.left, &right).map_err(js_error)?;
                    visual::planes(m, &planes.data)
                }
            }
            COLOUR => return self.frame(t),
            _ => {
                let pixels = self.timed_frame(t)?;
                let fps = self.rate();
                cpu_rate(&self.model, &pixels, fps)
            }
        };
        Ok(picture.rgba)
    }

    /// The side of a stage's picture in pixels.
    #[wasm_bindgen(getter)]
    pub fn stage_size(&self) -> usize {
        visual::SIZE
    }

    /// The walkthrough's stages as JSON (kiln-app's `Stage`s), the kernels rendered for WebGPU's
    /// guaranteed limits: this browser has no adapter to render them for.
    pub fn talk_stages(&self) -> Result<String, JsError> {
        let stored = Stored::webgpu_defaults().map_err(js_error)?;
        let target = Target::Stored(&stored);
        let choices = frame_choices(target, &self.model).map_err(js_error)?;
        serde_json::to_string(&walkthrough(&self.model, target, &choices)).map_err(js_error)
    }

    /// The frame's side in pixels.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> usize {
        self.model.res
    }

    /// The number of waves.
    #[wasm_bindgen(getter)]
    pub fn count(&self) -> usize {
        self.model.count()
    }

    /// The settings in words (`256×256, 128 waves, seed 1`).
    #[wasm_bindgen(getter)]
    pub fn settings(&self) -> String {
        crate::Waves::settings_words(&self.model)
    }
}

impl CpuWaves {
    /// The CPU path's frame at `t`, its wall-clock time kept for the rate.
    fn timed_frame(&mut self, t: f32) -> Result<Vec<u32>, JsError> {
        let start = Instant::now();
        let pixels = cpu_frame(&self.model, &self.left, t).map_err(js_error)?;
        if self.times_ms.len() == TIMED {
            self.times_ms.pop_front();
        }
        self.times_ms.push_back(start.elapsed().as_secs_f64() * 1e3);
        Ok(pixels)
    }

    /// Frames per second of the CPU path: the median of the last few frames (`None` before
    /// the first).
    fn rate(&self) -> Option<f64> {
        let times: Vec<f64> = self.times_ms.iter().copied().collect();
        kiln_app::kiln::bench::median(&times).map(|ms| 1e3 / ms.max(1e-3))
    }
}

/// The last stage without a GPU (a browser with no WebGPU adapter): the frame from the CPU
/// path beside its rate alone, `cpu_fps` (`None` while it is being measured).
fn cpu_rate(model: &Model, frame: &[u32], cpu_fps: Option<f64>) -> Bitmap {
    let mut b = visual::framed(model, frame);
    let Some(fps) = cpu_fps.filter(|f| f.is_finite() && *f > 0.0) else {
        b.text(352, 200, "measuring...", 2, MUTED);
        return b;
    };
    visual::bars(&mut b, &[(fps, visual::COOL, "CPU")]);
    let lines = [
        (format!("CPU {fps:.2} frames/s"), visual::COOL),
        ("    (wall clock, one thread)".to_string(), MUTED),
        ("GPU: no WebGPU on this page,".to_string(), TEXT),
        ("    nothing to race".to_string(), TEXT),
        (
            format!("at {0}x{0}, {1} waves", model.res, model.count()),
            TEXT,
        ),
    ];
    for (i, (text, colour)) in lines.iter().enumerate() {
        b.text(16, 400 + i * 34, text, 2, *colour);
    }
    b
}
