//! The waves demo: every pixel's RGBA comes out of one matrix multiplication per frame
//! (see `model` for the factorisation), on the GPU through kiln's kernels or on the CPU path.
//! Presenter mode walks through it in five stages, each with its own live picture (`visual`).

mod model;
mod visual;
#[cfg(target_arch = "wasm32")]
mod web;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use kiln_app::kiln::cpu::{self, Array};
use kiln_app::kiln::{self, Choice, DType, DeviceProfile, Dispatch, Gpu, Tensor, bench, ops};
use kiln_app::talk::{Code, Stage, Target};
use kiln_app::{BenchReport, Demo, Image, Options, Rates};
use model::{BIAS, Model, SCALE};

const RESOLUTIONS: [usize; 3] = [256, 512, 1024];
const WAVES: [usize; 5] = [8, 16, 32, 64, 128];

/// The walkthrough's stages, 0-based, in the order `stages()` lists them.
const PARAMETERS: usize = 0;
const FACTORS: usize = 1;
const PRODUCT: usize = 2;
const COLOUR: usize = 3;
const RATES: usize = 4;

fn main() {
    kiln_app::run::<Waves>();
}

/// The GPU path for one model: tensors and the three prepared launches of a frame
/// (sinusoid table → matmul → RGBA8), reused every frame; only the phases change.
struct GpuFrame {
    phase: Tensor,
    /// The factors and the product, kept for presenter mode's pictures.
    left: Tensor,
    right: Tensor,
    planes: Tensor,
    pixels: Tensor,
    dispatches: Vec<Dispatch>,
    /// The selector's choices for the three launches, in order.
    choices: Vec<Choice>,
}

/// The element type of the frame's matrices on the GPU path: f16 (with f32 accumulation) where
/// the adapter has cooperative matrices, so the product runs on them; f32 elsewhere. The CPU path
/// stays f32, and the benchmark checks that both paths' pixels agree within 2/255.
fn frame_dtype(profile: &DeviceProfile) -> DType {
    let f = &profile.features;
    if f.cooperative_matrix && f.shader_f16 {
        DType::F16
    } else {
        DType::F32
    }
}

impl GpuFrame {
    fn new(gpu: &Gpu, m: &Model) -> kiln::Result<GpuFrame> {
        let (res, w) = (m.res, m.count());
        let dtype = frame_dtype(gpu.profile());
        let left = Tensor::from_slice(gpu, &[4 * res, 2 * w], &m.left(), dtype)?;
        let freq = Tensor::from_slice(gpu, &[w], &m.freq(), DType::F32)?;
        let phase = Tensor::from_slice(gpu, &[w], &m.phases(0.0), DType::F32)?;
        let right = Tensor::uninit(gpu, &[2 * w, res], dtype)?;
        let planes = Tensor::uninit(gpu, &[4 * res, res], dtype)?;
        let pixels = Tensor::uninit(gpu, &[res, res], DType::U32)?;
        // The frame runs the kernels `frame_choices` lists, so the walkthrough (which shows
        // that list, with or without a device) names what runs.
        let choices = frame_choices(Target::Device(gpu), m)?;
        let name = |i: usize| choices.get(i).map(|c| c.variant.name.as_str());
        let (table, _) = ops::sinusoid::plan(&freq, &phase, &right, 0.0, m.step(), name(0))?;
        let (product, _) = ops::matmul::plan(&left, &right, &planes, name(1))?;
        let planes = planes.reshape(&[4, res, res])?;
        let (pack, _) = ops::rgba8::plan(&planes, &pixels, SCALE, BIAS, name(2))?;
        Ok(GpuFrame {
            phase,
            left,
            right,
            planes,
            pixels,
            dispatches: vec![table, product, pack],
            choices,
        })
    }

    /// `family variant` of each launch.
    fn variants(&self) -> Vec<String> {
        self.choices
            .iter()
            .map(|c| format!("{} {}", c.variant.family, c.variant.name))
            .collect()
    }

    fn launches(&self) -> Vec<&Dispatch> {
        self.dispatches.iter().collect()
    }

    /// Computes the frame at time `t` on the GPU; the pixels stay there.
    fn compute(&self, gpu: &Gpu, m: &Model, t: f32) -> kiln::Result<()> {
        self.phase.write(&m.phases(t))?;
        gpu.record(&self.launches())
    }
}

/// The same frame on the CPU path (plain loops): sinusoid table, matmul, RGBA8.
fn cpu_frame(m: &Model, left: &Array, t: f32) -> kiln::Result<Vec<u32>> {
    let right = cpu::sinusoid(&m.freq(), &m.phases(t), m.res, 0.0, m.step())?;
    let planes = cpu::matmul(left, &right)?;
    let planes = Array::new(&[4, m.res, m.res], planes.data)?;
    cpu::rgba8(&planes, SCALE, BIAS)
}

/// The selector's choices for a frame's three launches on `target`, from the shapes alone: what
/// `GpuFrame::new` runs, and what the page without a WebGPU adapter shows, rendered for a
/// stored profile.
fn frame_choices(target: Target<'_>, m: &Model) -> kiln::Result<Vec<Choice>> {
    let (res, w) = (m.res, m.count());
    let dtype = frame_dtype(target.profile());
    let sel = target.selector();
    let widest = |family, count| {
        let call = ops::Elementwise {
            family,
            dtype,
            count: Some(count),
        };
        sel.choose(&call, None)
    };
    let product = ops::matmul::Call::new(dtype, 1, 4 * res, res, 2 * w);
    Ok(vec![
        widest("sinusoid", res)?,
        ops::matmul::choose(&sel, &product, None)?,
        widest("rgba8", res * res)?,
    ])
}

/// The walkthrough for `m`, its kernels (`choices`: the frame's three launches) rendered for
/// `target`. Without a device (`Target::Stored`) the pictures come from the CPU path and the
/// words say so.
fn walkthrough(m: &Model, target: Target<'_>, choices: &[Choice]) -> Vec<Stage> {
    let (res, w) = (m.res, m.count());
    let gflop = 2.0 * (4 * res * 2 * w * res) as f64 / 1e9;
    let stored = target.is_stored();
    let code = |i: usize| -> Option<Code> {
        let choice = choices.get(i)?;
        Code::kernel_for(target, choice)
            .map_err(|e| log::warn!("waves: cannot render {}: {e}", choice.variant.name))
            .ok()
    };
    // The variant's name only: the selector's reason (its rule or tuned-table entry, in its
    // own terms) is in the kernel-source view, not in words spoken to an audience.
    let matmul = choices
        .get(1)
        .map(|c| c.variant.name.clone())
        .unwrap_or_default();
    let product = if stored {
        format!(
            "on the left, as this page's CPU path computed them (WebGPU cannot run on this \
             page). For a device with only WebGPU's guaranteed limits Kiln would pick the \
             matmul variant {matmul}; the kernel-source view says why."
        )
    } else {
        format!(
            "on the left, as the GPU computed them. Kiln picked the matmul variant {matmul} \
             for this device; the kernel-source view says why."
        )
    };
    vec![
        Stage::new(
            "The waves",
            &format!(
                "{w} plane waves cross a {res}x{res} frame, each with a direction, a \
                 wavelength, a speed, a phase and a colour. A pixel's colour is the sum of \
                 every wave's sine there. On the left each wave is a dot at its direction \
                 and frequency, with a hand at its phase, turning as the wave moves."
            ),
            Some(Code::rust_excerpt(
                "demos/waves/src/model.rs: the waves",
                include_str!("model.rs"),
                "waves",
            )),
        ),
        Stage::new(
            "Two factor matrices",
            &format!(
                "sin(α + β) = sin α cos β + cos α sin β splits every wave into a row part \
                 and a column part. L [{}, {}] holds the rows' parts, fixed; R(t) [{}, {res}] \
                 holds the columns' sines and cosines, rebuilt on the GPU every frame from \
                 {w} phases, the only upload.",
                4 * res,
                2 * w,
                2 * w
            ),
            code(0),
        ),
        Stage::new(
            "One matmul",
            &format!(
                "planes = L · R(t) gives the red, green, blue and mean planes of the whole \
                 frame in one matrix multiplication, {gflop:.2} GFLOP per frame; {product}"
            ),
            code(1),
        ),
        Stage::new(
            "Colour mapping",
            &format!(
                "A third kernel maps each plane to a byte, 255 · clamp(v · {SCALE} + {BIAS}, \
                 0, 1), and packs four into one u32 per pixel. The window draws that buffer \
                 directly: nothing comes back to the CPU."
            ),
            code(2),
        ),
        Stage::new(
            "GPU against CPU",
            if stored {
                "The same frame on the plain CPU path (single-threaded loops) and on the GPU, \
                 both timed uncapped: no vsync, no display. Here only the CPU path runs, in \
                 this page's WebAssembly on one thread: WebGPU cannot run on this page (the \
                 explanation above says why), so there is no GPU bar to race it."
            } else {
                "The same frame on the plain CPU path (single-threaded loops) and on the GPU, \
                 both timed uncapped: no vsync, no display. The GPU is timed with GPU timestamps \
                 where the adapter has them, the wall clock otherwise; the bars are on a log \
                 scale."
            },
            Some(Code::rust_excerpt(
                "demos/waves/src/main.rs: measure()",
                include_str!("main.rs"),
                "measure",
            )),
        ),
    ]
}

/// GPU tensors copied back for a stage's picture. One copy is in flight at a time: natively it
/// lands before `request` returns; in the browser it lands a frame or two later, and the picture
/// shows the latest copy made for its stage.
#[derive(Default)]
struct Readback {
    landed: Rc<RefCell<Option<Landed>>>,
    busy: Rc<Cell<bool>>,
}

struct Landed {
    stage: usize,
    floats: Vec<Vec<f32>>,
    pixels: Vec<u32>,
}

impl Readback {
    /// Copies `floats` (and `pixels`) back for `stage`, unless a copy is already on its way.
    fn request(&self, stage: usize, floats: Vec<Tensor>, pixels: Option<Tensor>) {
        if self.busy.replace(true) {
            return;
        }
        let (landed, busy) = (self.landed.clone(), self.busy.clone());
        kiln_app::spawn(async move {
            let copied = async {
                let mut read = Vec::with_capacity(floats.len());
                for t in &floats {
                    read.push(t.read().await?);
                }
                let pixels = match &pixels {
                    Some(t) => t.read_u32().await?,
                    None => Vec::new(),
                };
                kiln::Result::<Landed>::Ok(Landed {
                    stage,
                    floats: read,
                    pixels,
                })
            };
            match copied.await {
                Ok(l) => *landed.borrow_mut() = Some(l),
                Err(e) => log::warn!("waves: copying a stage's tensors back failed: {e}"),
            }
            busy.set(false);
        });
    }

    /// `draw` applied to the latest copy made for `stage`, if one has landed.
    fn with<R>(&self, stage: usize, draw: impl FnOnce(&Landed) -> R) -> Option<R> {
        self.landed
            .borrow()
            .as_ref()
            .filter(|l| l.stage == stage)
            .map(draw)
    }
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
    /// Presenter mode's stage (0-based); `None` outside presenter mode.
    stage: Option<usize>,
    /// A stage's picture, drawn on the CPU and uploaded as the frame.
    picture: Tensor,
    readback: Readback,
    /// The uncapped rates `measure` found last for these settings (the last stage's bars).
    rates: Rc<RefCell<Option<Rates>>>,
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
            stage: None,
            picture: Tensor::uninit(gpu, &[visual::SIZE, visual::SIZE], DType::U32)?,
            readback: Readback::default(),
            rates: Rc::default(),
        })
    }

    fn rebuild(&mut self, count: usize, res: usize, seed: u64) -> bool {
        match Waves::build(&self.gpu, count, res, seed) {
            Ok(next) => {
                *self = Waves {
                    t: self.t,
                    paused: self.paused,
                    on_gpu: self.on_gpu,
                    stage: self.stage,
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

    fn settings_words(m: &Model) -> String {
        format!("{0}×{0}, {1} waves, seed {2}", m.res, m.count(), m.seed)
    }

    /// The frame the demo normally shows, on the current path.
    fn colour_frame(&mut self) -> kiln::Result<Tensor> {
        if self.on_gpu {
            self.gpu_frame.compute(&self.gpu, &self.model, self.t)?;
            Ok(self.gpu_frame.pixels.clone())
        } else {
            let pixels = cpu_frame(&self.model, &self.left, self.t)?;
            self.cpu_pixels.write_u32(&pixels)?;
            Ok(self.cpu_pixels.clone())
        }
    }

    /// A stage's picture: the GPU frame computed, what the stage shows copied back from the
    /// GPU, and drawn.
    fn stage_picture(&mut self, stage: usize) -> kiln::Result<Tensor> {
        let (m, g) = (&self.model, &self.gpu_frame);
        let waiting = || visual::waiting("copying from the GPU...");
        let picture = match stage {
            PARAMETERS => visual::parameters(m, self.t),
            FACTORS => {
                g.compute(&self.gpu, m, self.t)?;
                self.readback
                    .request(stage, vec![g.left.clone(), g.right.clone()], None);
                self.readback
                    .with(stage, |l| match &l.floats[..] {
                        [left, right] => Some(visual::factors(m, left, right)),
                        _ => None,
                    })
                    .flatten()
                    .unwrap_or_else(waiting)
            }
            PRODUCT => {
                g.compute(&self.gpu, m, self.t)?;
                self.readback.request(stage, vec![g.planes.clone()], None);
                self.readback
                    .with(stage, |l| l.floats.first().map(|p| visual::planes(m, p)))
                    .flatten()
                    .unwrap_or_else(waiting)
            }
            _ => {
                g.compute(&self.gpu, m, self.t)?;
                self.readback
                    .request(stage, Vec::new(), Some(g.pixels.clone()));
                let rates = self.rates.borrow().clone();
                self.readback
                    .with(stage, |l| visual::rates(m, &l.pixels, rates.as_ref()))
                    .unwrap_or_else(waiting)
            }
        };
        // Each text's box and letter height, for the page's tests (waves.test.mjs).
        kiln_app::publish("texts", &picture.texts_json(Some(stage)));
        self.picture.write_u32(&picture.packed())?;
        Ok(self.picture.clone())
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
        let res = if gpu.profile().is_software() {
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
        match self.stage {
            Some(stage) if stage != COLOUR => self.stage_picture(stage),
            _ => self.colour_frame(),
        }
    }

    fn stages(&self) -> Vec<Stage> {
        walkthrough(
            &self.model,
            Target::Device(&self.gpu),
            &self.gpu_frame.choices,
        )
    }

    fn show_stage(&mut self, stage: usize) {
        self.stage = Some(stage.min(RATES));
    }

    /// The frame's size and the wave count, and whether `+`/`-` can change it: the page's
    /// text and buttons follow (a software adapter starts at 256×256, not 1024×1024).
    fn settings(&self) -> serde_json::Value {
        let m = &self.model;
        serde_json::json!({
            "res": m.res,
            "waves": m.count(),
            "seed": m.seed,
            "fewest": m.count() <= WAVES[0],
            "most": m.count() >= WAVES[WAVES.len() - 1],
            "words": Waves::settings_words(m),
        })
    }

    fn kernels(&self) -> Vec<Choice> {
        self.gpu_frame.choices.clone()
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
            Waves::settings_words(&self.model),
        ];
        lines.extend(
            self.gpu_frame
                .variants()
                .iter()
                .map(|v| format!("kernel {v}")),
        );
        lines.push("keys: space pause, g GPU/CPU, +/- waves,".into());
        lines.push("      r resolution, s new seed".into());
        lines
    }

    fn measure(&self) -> impl Future<Output = kiln::Result<Rates>> + 'static {
        let (gpu, frame, model, left, last) = (
            self.gpu.clone(),
            self.gpu_frame.clone(),
            self.model.clone(),
            self.left.clone(),
            self.rates.clone(),
        );
        async move {
            // talk:begin measure
            // The frame's 3 launches, 10 times, uncapped
            let g = bench::time_dispatches(&gpu, &frame.launches(), 1, 10).await?;
            // The CPU path (plain loops), 3 times
            let c = bench::time_cpu(0, 3, 1.0, || {
                let _ = cpu_frame(&model, &left, 0.5);
            })?;
            let rates = Rates {
                gpu_fps: 1e3 / g.median_ms,
                cpu_fps: 1e3 / c.median_ms,
                gpu_clock: g.clock,
            };
            // talk:end measure
            *last.borrow_mut() = Some(rates.clone());
            Ok(rates)
        }
    }

    fn bench(gpu: &Gpu, options: &Options) -> impl Future<Output = kiln::Result<BenchReport>> {
        let (gpu, frames, size) = (gpu.clone(), options.frames, options.size);
        async move {
            let w = Waves::build(&gpu, 128, size.unwrap_or(1024), 1)?;
            // GPU time per frame (timestamps; the GPU warmed up first), then the frame as the
            // window runs it — phases written, three launches recorded, one submission, waited
            // for — by the wall clock, and what it asks of the device.
            let gpu_t = bench::time_dispatches(&gpu, &w.gpu_frame.launches(), 3, frames).await?;
            bench::heat(&gpu, 300.0).await?;
            let frame = async |t: f32| -> kiln::Result<()> {
                w.gpu_frame.compute(&gpu, &w.model, t)?;
                gpu.idle().await
            };
            let mut wall = Vec::with_capacity(frames);
            for i in 0..frames {
                let start = web_time::Instant::now();
                frame(i as f32 / 60.0).await?;
                wall.push(start.elapsed().as_secs_f64() * 1e3);
            }
            let profile = bench::profile_unit(&gpu, async || frame(0.25).await, 10).await?;
            // Where the host's time goes: writing the phases and recording, then submitting.
            let host = bench::host_runs(
                &gpu,
                frames.max(10),
                || w.gpu_frame.compute(&gpu, &w.model, 0.25),
                async |()| gpu.idle().await,
            )
            .await?;
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
                settings: Waves::settings_words(&w.model),
                gpu: gpu_t,
                cpu: cpu_t,
                checks: serde_json::json!({
                    "max_channel_diff_gpu_vs_cpu": diff,
                    "max_channel_diff_allowed": 2,
                    "agree": diff <= 2,
                    "kernels": w.gpu_frame.variants(),
                    "cpu_path": "plain single-threaded loops (kiln::cpu)",
                    "wall_ms_per_frame": bench::median(&wall),
                    "per_frame": profile.counts,
                    "host_per_frame": host.cost(),
                    "host_us_per_launch": host.cost().map(|h| h.us_per_launch),
                    "gpu_timestamp_ms_per_frame": profile.gpu_ms,
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use kiln_app::talk::{self, Stored};

    /// The frame runs the variants `frame_choices` names: they are the ones the ops pick on
    /// their own for the frame's tensors, so naming them changes nothing.
    #[test]
    fn frame_choices_are_the_ops_own_choices() {
        let gpu = pollster::block_on(Gpu::new(&kiln::GpuOptions::default()))
            .expect("GPU tests need an adapter (Mesa lavapipe in CI)");
        for (count, res) in [(128, 256), (8, 512), (64, 1024)] {
            let m = Model::new(count, res, 1);
            let f = GpuFrame::new(&gpu, &m).unwrap();
            let freq = Tensor::from_slice(&gpu, &[m.count()], &m.freq(), DType::F32).unwrap();
            let own = [
                ops::sinusoid::plan(&freq, &f.phase, &f.right, 0.0, m.step(), None)
                    .unwrap()
                    .1,
                ops::matmul::plan(
                    &f.left,
                    &f.right,
                    &f.planes.reshape(&[4 * res, res]).unwrap(),
                    None,
                )
                .unwrap()
                .1,
                ops::rgba8::plan(&f.planes, &f.pixels, SCALE, BIAS, None)
                    .unwrap()
                    .1,
            ];
            let own: Vec<String> = own
                .iter()
                .map(|c| format!("{} {}", c.variant.family, c.variant.name))
                .collect();
            assert_eq!(f.variants(), own, "{count} waves at {res}x{res}");
        }
    }

    /// Without a device every stage still has its words and its code, the kernels rendered for
    /// a stored profile and said to be.
    #[test]
    fn the_walkthrough_needs_no_device() {
        for name in ["webgpu-defaults", "chromium-swiftshader", "nvidia-h200"] {
            let stored = Stored::profile(name).unwrap();
            let target = Target::Stored(&stored);
            let model = Model::new(128, 256, 1);
            let choices = frame_choices(target, &model).unwrap();
            let stages = walkthrough(&model, target, &choices);
            talk::check(&stages).unwrap();
            assert_eq!(stages.len(), RATES + 1);
            for s in &stages {
                let code = s.code.as_ref().expect("every stage shows code");
                assert!(!code.text().trim().is_empty(), "{}", s.title);
            }
            for i in [FACTORS, PRODUCT, COLOUR] {
                let code = stages[i].code.as_ref().unwrap();
                assert_eq!(code.language, "wgsl");
                assert!(code.caption.contains("stored profile"), "{}", code.caption);
            }
            assert!(
                stages[PRODUCT].text.contains("CPU path"),
                "{}",
                stages[PRODUCT].text
            );
        }
    }
}
