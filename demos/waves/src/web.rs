//! The browser's CPU fallback: without WebGPU there is no window to open (kiln-app's `run` returns), and
//! the page (site/src/waves.js) draws the CPU path's frames from this export into a 2D canvas.

use kiln_app::kiln::cpu::Array;
use wasm_bindgen::prelude::*;

use crate::model::Model;

/// The waves on the CPU path: the same model and the same three steps as the GPU path.
#[wasm_bindgen]
#[derive(Debug)]
pub struct CpuWaves {
    model: Model,
    left: Array,
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
        let left = Array::new(&[4 * res, 2 * count], model.left())
            .map_err(|e| JsError::new(&e.to_string()))?;
        Ok(CpuWaves { model, left })
    }

    /// The frame at time `t` seconds as RGBA8 bytes, opaque (for `ImageData`).
    pub fn frame(&self, t: f32) -> Result<Vec<u8>, JsError> {
        let pixels = crate::cpu_frame(&self.model, &self.left, t)
            .map_err(|e| JsError::new(&e.to_string()))?;
        // The fourth plane (the mean wave) sits in the alpha byte: the page shows RGB.
        Ok(pixels
            .iter()
            .flat_map(|p| {
                let [r, g, b, _] = p.to_le_bytes();
                [r, g, b, 255]
            })
            .collect())
    }

    /// The frame's side in pixels.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> usize {
        self.model.res
    }

    /// The settings in words (`256×256, 128 waves, seed 1`).
    #[wasm_bindgen(getter)]
    pub fn settings(&self) -> String {
        crate::Waves::settings(&self.model)
    }
}
