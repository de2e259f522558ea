//! The waves demo: every pixel's RGBA comes out of one matrix multiplication per frame
//! (see `model` for the factorisation), on the GPU through kiln's kernels or on the CPU path.

mod model;

use std::rc::Rc;

use kiln_app::kiln::cpu::{self, Array};
use kiln_app::kiln::{self, DType, Dispatch, Gpu, Tensor, bench, ops};
use kiln_app::{BenchReport, Demo, Image, Options, Rates};
use model::{BIAS, Model, SCALE};

const RESOLUTIONS: [usize; 3] = [256, 512, 1024];
const WAVES: [usize; 5] = [8, 16, 32, 64, 128];

fn main() {
    kiln_app::run::<Waves>();
}

/// The GPU path for one model: tensors and the three prepared launches of a frame
/// (sinusoid table → matmul → RGBA8), reused every frame; only the phases change.
struct GpuFrame {
    phase: Tensor,
    pixels: Tensor,
    dispatches: Vec<Dispatch>,
    variants: Vec<String>,
}

/// The element type of the frame's matrices on the GPU path: f16 (with f32 accumulation) where
/// the adapter has cooperative matrices, so the product runs on them; f32 elsewhere. The CPU path
/// stays f32, and the benchmark checks that both paths' pixels agree within 2/255.
fn frame_dtype(gpu: &Gpu) -> DType {
    let f = &gpu.profile().features;
    if f.cooperative_matrix && f.shader_f16 {
        DType::F16
    } else {
        DType::F32
    }
}

impl GpuFrame {
    fn new(gpu: &Gpu, m: &Model) -> kiln::Result<GpuFrame> {
        let (res, w) = (m.res, m.count());
        let dtype = frame_dtype(gpu);
        let left = Tensor::from_slice(gpu, &[4 * res, 2 * w], &m.left(), dtype)?;
        let freq = Tensor::from_slice(gpu, &[w], &m.freq(), DType::F32)?;
        let phase = Tensor::from_slice(gpu, &[w], &m.phases(0.0), DType::F32)?;
        let right = Tensor::uninit(gpu, &[2 * w, res], dtype)?;
        let planes = Tensor::uninit(gpu, &[4 * res, res], dtype)?;
        let pixels = Tensor::uninit(gpu, &[res, res], DType::U32)?;
        let (table, c1) = ops::sinusoid::plan(&freq, &phase, &right, 0.0, m.step(), None)?;
        let (product, c2) = ops::matmul::plan(&left, &right, &planes, None)?;
        let planes = planes.reshape(&[4, res, res])?;
        let (pack, c3) = ops::rgba8::plan(&planes, &pixels, SCALE, BIAS, None)?;
        Ok(GpuFrame {
            phase,
            pixels,
            dispatches: vec![table, product, pack],
            variants: [c1, c2, c3]
                .iter()
                .map(|c| format!("{} {}", c.variant.family, c.variant.name))
                .collect(),
        })
    }

    fn launches(&self) -> Vec<&Dispatch> {
        self.dispatches.iter().collect()
    }

    /// Computes the frame at time `t` on the GPU; the pixels stay there.
    fn compute(&self, gpu: &Gpu, m: &Model, t: f32) -> kiln::Result<()> {
        self.phase.write(&m.phases(t))?;
        gpu.submit(&self.launches());
        Ok(())
    }
}

/// The same frame on the CPU path (plain loops): sinusoid table, matmul, RGBA8.
fn cpu_frame(m: &Model, left: &Array, t: f32) -> kiln::Result<Vec<u32>> {
    let right = cpu::sinusoid(&m.freq(), &m.phases(t), m.res, 0.0, m.step())?;
    let planes = cpu::matmul(left, &right)?;
    let planes = Array::new(&[4, m.res, m.res], planes.data)?;
    cpu::rgba8(&planes, SCALE, BIAS)
}

struct Waves {
    gpu: Gpu,
    model: Model,
    gpu_frame: Rc<GpuFrame>,
    left: Rc<Array>,
    /// The CPU path's pixels, uploaded for display.
    cpu_pixels: Tensor,
    t: f32,
    paused: bool,
    on_gpu: bool,
}

impl Waves {
    fn build(gpu: &Gpu, count: usize, res: usize, seed: u64) -> kiln::Result<Waves> {
        let model = Model::new(count, res, seed);
        let left = Array::new(&[4 * res, 2 * count], model.left())?;
        Ok(Waves {
            gpu: gpu.clone(),
            gpu_frame: Rc::new(GpuFrame::new(gpu, &model)?),
            left: Rc::new(left),
            cpu_pixels: Tensor::uninit(gpu, &[res, res], DType::U32)?,
            model,
            t: 0.0,
            paused: false,
            on_gpu: true,
        })
    }

    fn rebuild(&mut self, count: usize, res: usize, seed: u64) -> bool {
        match Waves::build(&self.gpu, count, res, seed) {
            Ok(next) => {
                *self = Waves {
                    t: self.t,
                    paused: self.paused,
                    on_gpu: self.on_gpu,
                    ..next
                };
                true
            }
            Err(e) => {
                log::error!("waves: cannot switch to {res}×{res}, {count} waves: {e}");
                false
            }
        }
    }

    fn settings(m: &Model) -> String {
        format!("{0}×{0}, {1} waves, seed {2}", m.res, m.count(), m.seed)
    }
}

/// Max per-channel difference between two RGBA8 frames, in 1/255 steps.
fn max_channel_diff(a: &[u32], b: &[u32]) -> u32 {
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            (0..4).map(move |c| ((x >> (8 * c)) & 255).abs_diff((y >> (8 * c)) & 255))
        })
        .max()
        .unwrap_or(u32::MAX)
}

impl Demo for Waves {
    const NAME: &'static str = "waves";
    const TITLE: &'static str = "Kiln · waves";

    /// 1024×1024 on a GPU; 256×256 on a software adapter, where a 1024² frame takes seconds
    /// (`r` raises it).
    fn new(gpu: &Gpu, _options: &Options) -> kiln::Result<Self> {
        let res = if gpu.profile().device_type == "cpu" {
            256
        } else {
            1024
        };
        Waves::build(gpu, 128, res, 1)
    }

    fn frame(&mut self, dt: f32) -> kiln::Result<Tensor> {
        if !self.paused {
            self.t += dt;
        }
        if self.on_gpu {
            self.gpu_frame.compute(&self.gpu, &self.model, self.t)?;
            Ok(self.gpu_frame.pixels.clone())
        } else {
            let pixels = cpu_frame(&self.model, &self.left, self.t)?;
            self.cpu_pixels.write_u32(&pixels)?;
            Ok(self.cpu_pixels.clone())
        }
    }

    fn key(&mut self, key: &str) -> bool {
        let (count, res, seed) = (self.model.count(), self.model.res, self.model.seed);
        let next = |list: &[usize], x: usize, up: bool| {
            let i = list.iter().position(|&v| v == x).unwrap_or(0);
            if up {
                list[(i + 1) % list.len()]
            } else {
                list[i.saturating_sub(1)]
            }
        };
        match key {
            "space" => {
                self.paused = !self.paused;
                false
            }
            "g" => {
                self.on_gpu = !self.on_gpu;
                false
            }
            "+" | "=" if count < WAVES[WAVES.len() - 1] => {
                self.rebuild(next(&WAVES, count, true), res, seed)
            }
            "-" if count > WAVES[0] => self.rebuild(next(&WAVES, count, false), res, seed),
            "r" => self.rebuild(count, next(&RESOLUTIONS, res, true), seed),
            "s" => self.rebuild(count, res, seed + 1),
            _ => false,
        }
    }

    fn hud(&self) -> Vec<String> {
        let mut lines = vec![
            format!(
                "drawing: {} path{}",
                if self.on_gpu { "GPU" } else { "CPU" },
                if self.paused { " (paused)" } else { "" }
            ),
            Waves::settings(&self.model),
        ];
        lines.extend(
            self.gpu_frame
                .variants
                .iter()
                .map(|v| format!("kernel {v}")),
        );
        lines.push("keys: space pause, g GPU/CPU, +/- waves,".into());
        lines.push("      r resolution, s new seed".into());
        lines
    }

    fn measure(&self) -> impl Future<Output = kiln::Result<Rates>> + 'static {
        let (gpu, frame, model, left) = (
            self.gpu.clone(),
            self.gpu_frame.clone(),
            self.model.clone(),
            self.left.clone(),
        );
        async move {
            let g = bench::time_dispatches(&gpu, &frame.launches(), 1, 10).await?;
            let c = bench::time_cpu(0, 3, 1.0, || {
                let _ = cpu_frame(&model, &left, 0.5);
            })?;
            Ok(Rates {
                gpu_fps: 1e3 / g.median_ms,
                cpu_fps: 1e3 / c.median_ms,
                gpu_clock: g.clock,
            })
        }
    }

    fn bench(gpu: &Gpu, options: &Options) -> impl Future<Output = kiln::Result<BenchReport>> {
        let (gpu, frames, size) = (gpu.clone(), options.frames, options.size);
        async move {
            let w = Waves::build(&gpu, 128, size.unwrap_or(1024), 1)?;
            let gpu_t = bench::time_dispatches(&gpu, &w.gpu_frame.launches(), 3, frames).await?;
            let mut step = 0;
            let cpu_t = bench::time_cpu(0, frames, 30.0, || {
                step += 1;
                let _ = cpu_frame(&w.model, &w.left, step as f32 / 60.0);
            })?;
            // Both paths compute the frame at t = 1 s; the pixels must agree.
            w.gpu_frame.compute(&gpu, &w.model, 1.0)?;
            let on_gpu = w.gpu_frame.pixels.read_u32().await?;
            let on_cpu = cpu_frame(&w.model, &w.left, 1.0)?;
            let diff = max_channel_diff(&on_gpu, &on_cpu);
            // The fourth plane is the mean wave; the PNG shows RGB, opaque.
            let rgba = on_gpu
                .iter()
                .flat_map(|p| {
                    let [r, g, b, _] = p.to_le_bytes();
                    [r, g, b, 255]
                })
                .collect();
            let res = w.model.res as u32;
            Ok(BenchReport {
                demo: Self::NAME.into(),
                adapter: gpu.profile().name.clone(),
                backend: gpu.profile().backend.clone(),
                settings: Waves::settings(&w.model),
                gpu: gpu_t,
                cpu: cpu_t,
                checks: serde_json::json!({
                    "max_channel_diff_gpu_vs_cpu": diff,
                    "max_channel_diff_allowed": 2,
                    "agree": diff <= 2,
                    "kernels": w.gpu_frame.variants,
                    "cpu_path": "plain single-threaded loops (kiln::cpu)",
                }),
                image: Some(Image {
                    width: res,
                    height: res,
                    rgba,
                }),
            })
        }
    }
}
