//! `fleet talk`: the walkthrough in a kiln_app window. Each stage's visual is drawn into an RGBA
//! bitmap from live measurements on this device: the census, the ceilings filling in sample by
//! sample, the variants racing (one measurement per frame), and the selector's pick against the
//! race's winner.

use kiln::{DType, Gpu, Tensor};
use kiln_app::raster::palette::{ACCENT, BG, MUTED, TEXT};
use kiln_app::raster::{Bitmap, Rgba, wrap};
use kiln_app::talk::Stage;
use kiln_app::{BenchReport, Demo, Options, Rates};
use kiln_fleet::Report;
use kiln_fleet::talk::{self, CeilingMeter, CeilingsView, Race, RaceView};

/// The visual's size: the window's left 44 % at 1280×720, drawn 1:1.
const W: usize = 560;
const H: usize = 720;
const PAD: usize = 16;

const TRACK: Rgba = [36, 36, 46, 255];
const GOOD: Rgba = [126, 231, 135, 255];
const GOOD_DIM: Rgba = [28, 64, 34, 255];
const BAD: Rgba = [255, 107, 107, 255];
const REFERENCE: Rgba = [110, 140, 200, 255];

/// A device of the checked-in reports, for the ceilings' comparison.
struct Reference {
    name: String,
    copy_gb_per_s: f64,
    fma_gflop_per_s: f64,
}

/// The checked-in reports' devices (those that parse) and their measured ceilings.
fn references() -> Vec<Reference> {
    [
        (
            "fleet/reports/nvidia-h200.json",
            include_str!("../../../reports/nvidia-h200.json"),
        ),
        (
            "fleet/reports/lavapipe.json",
            include_str!("../../../reports/lavapipe.json"),
        ),
    ]
    .iter()
    .filter_map(|(what, json)| Report::parse(what, json).ok())
    .map(|r| Reference {
        name: r.device.name.clone(),
        copy_gb_per_s: r.ceilings.copy_gb_per_s,
        fma_gflop_per_s: r.ceilings.fma_gflop_per_s,
    })
    .collect()
}

/// The walkthrough as a kiln_app demo.
pub struct FleetTalk {
    gpu: Gpu,
    stage: usize,
    /// Seconds since the stage was shown (the census's bars grow in).
    t: f32,
    meter: CeilingMeter,
    race: Race,
    stages: Vec<Stage>,
    references: Vec<Reference>,
    offered: Vec<talk::Offered>,
    pixels: Tensor,
    /// A measurement that failed: shown in the visual, and the measuring stops.
    error: Option<String>,
}

impl FleetTalk {
    /// One step of the current stage's measurement (one sample: a frame stays short).
    fn work(&mut self) {
        if self.error.is_some() {
            return;
        }
        let result = match self.stage {
            1 if !self.meter.done() => pollster::block_on(self.meter.step()),
            2 | 3 if !self.race.done() => pollster::block_on(self.race.step()),
            _ => Ok(false),
        };
        if let Err(e) = result {
            self.error = Some(e.to_string());
        }
    }

    fn draw(&self) -> Bitmap {
        let mut b = Bitmap::new(W, H, BG);
        let names = [
            "device census",
            "ceilings",
            "variants racing",
            "the tuned choice",
        ];
        b.text(PAD, PAD, "KILN FLEET", 2, MUTED);
        let title = format!(
            "{}. {}",
            self.stage + 1,
            names.get(self.stage).copied().unwrap_or("")
        );
        b.text(PAD, PAD + 24, &title, 3, ACCENT);
        let top = PAD + 24 + 40;
        match self.stage {
            0 => self.census(&mut b, top),
            1 => self.ceilings(&mut b, top, &self.meter.view()),
            2 => {
                race(&mut b, top, &self.race.view(), 64);
            }
            _ => tuned(&mut b, top, &self.race.view()),
        }
        if let Some(e) = &self.error {
            let lines = wrap(&format!("error: {e}"), (W - 2 * PAD) / 8);
            let mut y = H.saturating_sub(PAD + 12 * lines.len());
            b.rect(0, y.saturating_sub(6), W, H, BG);
            for line in lines {
                b.text(PAD, y, &line, 1, BAD);
                y += 12;
            }
        }
        b
    }

    /// The adapter, its features as lit or dark boxes, its key limits as bars (log scale, a
    /// tick at WebGPU's guaranteed minimum) and the variants it is offered, growing in.
    fn census(&self, b: &mut Bitmap, mut y: usize) {
        let p = self.gpu.profile();
        for line in wrap(&p.name, (W - 2 * PAD) / 16).iter().take(2) {
            b.text(PAD, y, line, 2, TEXT);
            y += 20;
        }
        let what = format!(
            "{} · {} · vendor {:04x}",
            p.backend, p.device_type, p.vendor
        );
        b.text(PAD, y + 4, &what, 2, MUTED);
        y += 28;
        b.text(PAD, y, &format!("class {}", p.class()), 1, MUTED);
        y += 20;

        let f = &p.features;
        let subgroups = if f.subgroup {
            format!("subgroups {}-{}", p.subgroup_min_size, p.subgroup_max_size)
        } else {
            "subgroups".into()
        };
        let chips = [
            ("f16".to_string(), f.shader_f16),
            (subgroups, f.subgroup),
            ("timestamps".to_string(), f.timestamp_query),
            ("coop matrices".to_string(), f.cooperative_matrix),
        ];
        let chip_w = (W - 2 * PAD - 8) / 2;
        for (i, (name, on)) in chips.iter().enumerate() {
            let (x, cy) = (PAD + (i % 2) * (chip_w + 8), y + (i / 2) * 40);
            let shown = self.t > 0.15 * i as f32;
            if *on && shown {
                b.rect(x, cy, chip_w, 32, GOOD_DIM);
                b.text(x + 10, cy + 8, &format!("+ {name}"), 2, GOOD);
            } else {
                outline(b, x, cy, chip_w, 32, TRACK);
                b.text(x + 10, cy + 8, &format!("- {name}"), 2, MUTED);
            }
        }
        y += 88;

        b.text(PAD, y, "limits (log scale; tick: WebGPU minimum)", 1, MUTED);
        y += 16;
        let l = &p.limits;
        let d = kiln::device::ProfileLimits::webgpu_defaults();
        let limits: [(&str, f64, f64, f64, String); 5] = [
            (
                "workgroup memory",
                f64::from(l.max_compute_workgroup_storage_size),
                f64::from(d.max_compute_workgroup_storage_size),
                65536.0,
                format!("{} KiB", l.max_compute_workgroup_storage_size / 1024),
            ),
            (
                "threads per workgroup",
                f64::from(l.max_compute_invocations_per_workgroup),
                f64::from(d.max_compute_invocations_per_workgroup),
                1024.0,
                l.max_compute_invocations_per_workgroup.to_string(),
            ),
            (
                "storage binding",
                l.max_storage_buffer_binding_size as f64,
                d.max_storage_buffer_binding_size as f64,
                (1u64 << 32) as f64,
                mib(l.max_storage_buffer_binding_size),
            ),
            (
                "buffer size",
                l.max_buffer_size as f64,
                d.max_buffer_size as f64,
                (1u64 << 40) as f64,
                mib(l.max_buffer_size),
            ),
            (
                "storage buffers per shader",
                f64::from(l.max_storage_buffers_per_shader_stage),
                f64::from(d.max_storage_buffers_per_shader_stage),
                64.0,
                l.max_storage_buffers_per_shader_stage.to_string(),
            ),
        ];
        for (i, (name, value, minimum, top, shown)) in limits.iter().enumerate() {
            let grow = ease(self.t - 0.3 - 0.12 * i as f32);
            b.text(PAD, y, name, 2, TEXT);
            let vx = W - PAD - 8 * 2 * shown.chars().count();
            b.text(vx, y, shown, 2, ACCENT);
            let frac = (value.max(1.0).log2() / top.log2()).clamp(0.02, 1.0);
            bar(b, PAD, y + 20, W - 2 * PAD, 10, frac * grow, ACCENT);
            let tick = PAD
                + ((minimum.max(1.0).log2() / top.log2()).clamp(0.0, 1.0) * (W - 2 * PAD) as f64)
                    as usize;
            b.rect(tick.min(W - PAD - 2), y + 16, 2, 18, TEXT);
            y += 42;
        }

        y += 4;
        b.text(PAD, y, "kernel variants offered here", 1, MUTED);
        y += 16;
        for (i, o) in self.offered.iter().take(5).enumerate() {
            let grow = ease(self.t - 1.0 - 0.1 * i as f32);
            let label = format!("{} {}/{}", o.family, o.here, o.all);
            b.text(PAD, y, &label, 1, TEXT);
            let x = PAD + 200;
            let frac = o.here as f64 / o.all.max(1) as f64;
            bar(b, x, y, W - PAD - x, 8, frac * grow, GOOD);
            y += 16;
        }
    }

    /// Copy bandwidth and FMA rate: this device's bar (its median so far) among the checked-in
    /// reports' devices, on a log scale, with a dot per sample taken; then the dispatch latency.
    fn ceilings(&self, b: &mut Bitmap, mut y: usize, v: &CeilingsView) {
        let status = if v.done {
            format!("measured here: median of {} samples each", v.of)
        } else {
            format!(
                "measuring here, live: {} of {} samples",
                v.samples.iter().sum::<usize>(),
                3 * v.of
            )
        };
        b.text(PAD, y, &status, 1, MUTED);
        b.text(PAD, y + 12, &v.clock, 1, MUTED);
        y += 28;
        let refs = &self.references;
        // (what, unit, this device's figure, the fleet's, samples taken here).
        type Row<'a> = (&'a str, &'a str, Option<f64>, Vec<(String, f64)>, usize);
        let rows: [Row; 2] = [
            (
                "memory bandwidth (copy)",
                "GB/s",
                v.copy_gb_per_s,
                refs.iter()
                    .map(|r| (r.name.clone(), r.copy_gb_per_s))
                    .collect(),
                v.samples[0],
            ),
            (
                "arithmetic (FMA chain)",
                "GFLOP/s",
                v.fma_gflop_per_s,
                refs.iter()
                    .map(|r| (r.name.clone(), r.fma_gflop_per_s))
                    .collect(),
                v.samples[1],
            ),
        ];
        for (name, unit, here, fleet, samples) in rows {
            b.text(PAD, y, name, 2, TEXT);
            y += 22;
            let value = here.map_or("measuring...".to_string(), |x| {
                format!("{} {unit}", figure(x))
            });
            b.text(PAD, y, &value, 3, ACCENT);
            y += 34;
            // One log scale for this device and the fleet's: a factor of 1000 apart is common.
            let all: Vec<f64> = fleet
                .iter()
                .map(|f| f.1)
                .chain(here)
                .filter(|x| *x > 0.0)
                .collect();
            let lo = all.iter().copied().fold(f64::MAX, f64::min).min(1.0) / 2.0;
            let hi = all.iter().copied().fold(0.0, f64::max).max(10.0) * 2.0;
            let frac = |x: f64| ((x / lo).log10() / (hi / lo).log10()).clamp(0.0, 1.0);
            let bx = PAD + 176;
            let bw = W - PAD - bx;
            b.text(PAD, y + 2, "this device", 1, ACCENT);
            bar(b, bx, y, bw, 12, here.map_or(0.0, frac), ACCENT);
            for s in 0..v.of {
                let colour = if s < samples { ACCENT } else { TRACK };
                b.rect(bx + s * 10, y + 16, 6, 6, colour);
            }
            y += 28;
            for (i, (device, x)) in fleet.iter().enumerate() {
                let grow = ease(self.t - 0.2 * i as f32);
                b.text(PAD, y + 2, &clip(device, 21), 1, MUTED);
                bar(b, bx, y, bw, 12, frac(*x) * grow, REFERENCE);
                let label = format!("{} {unit}", figure(*x));
                b.text(
                    W - PAD - 8 * label.chars().count(),
                    y + 16,
                    &label,
                    1,
                    MUTED,
                );
                y += 30;
            }
            y += 12;
        }
        b.text(PAD, y, "dispatch latency (submit and wait)", 2, TEXT);
        y += 22;
        let latency = v
            .dispatch_latency_us
            .map_or("measuring...".to_string(), |us| format!("{us:.0} µs"));
        b.text(PAD, y, &latency, 3, ACCENT);
        y += 30;
        b.text(
            PAD,
            y,
            &format!("the fleet: {} checked-in report(s)", refs.len()),
            1,
            MUTED,
        );
    }
}

/// The race: one row per variant, its bar the median GFLOP/s so far against the best racer's,
/// a dot per timed sample; the selector's pick marked.
fn race(b: &mut Bitmap, mut y: usize, v: &RaceView, row: usize) -> usize {
    let timed = v.racers.iter().map(|r| r.samples).sum::<usize>();
    let status = if v.done {
        format!("{}: GFLOP/s, median of {}", v.case, v.of)
    } else {
        format!("{}: racing, {timed} samples so far", v.case)
    };
    b.text(PAD, y, &status, 1, MUTED);
    b.text(PAD, y + 12, &v.clock, 1, MUTED);
    y += 28;
    let best = v
        .racers
        .iter()
        .filter_map(|r| r.gflop_per_s)
        .fold(0.0, f64::max);
    for r in &v.racers {
        let colour = if r.picked { ACCENT } else { TEXT };
        let name = if r.picked {
            format!("{} (selector)", r.variant)
        } else {
            r.variant.clone()
        };
        b.text(PAD, y, &clip(&name, 33), 2, colour);
        let note = match (r.status, r.gflop_per_s) {
            ("waiting", _) => "waiting".to_string(),
            ("wrong", _) => "WRONG: not timed".to_string(),
            ("failed", _) => "FAILED".to_string(),
            (_, Some(g)) => format!("{} GFLOP/s", figure(g)),
            _ => format!("checked: error {:.0e}", r.rel_l2.unwrap_or(0.0)),
        };
        let note_colour = match r.status {
            "wrong" | "failed" => BAD,
            "waiting" => MUTED,
            _ => TEXT,
        };
        let bar_y = y + 20;
        let frac = match (r.gflop_per_s, best > 0.0) {
            (Some(g), true) => g / best,
            _ => 0.0,
        };
        bar(
            b,
            PAD,
            bar_y,
            W - 2 * PAD,
            12,
            frac,
            if r.picked { ACCENT } else { REFERENCE },
        );
        b.text(PAD, bar_y + 16, &note, 1, note_colour);
        for s in 0..v.of {
            let c = if s < r.samples { colour } else { TRACK };
            b.rect(W - PAD - (v.of - s) * 10, bar_y + 16, 6, 6, c);
        }
        y += row;
    }
    y
}

/// The verdict: the race's fastest variant, the selector's pick and why, and whether they agree;
/// then the race again, smaller.
fn tuned(b: &mut Bitmap, mut y: usize, v: &RaceView) {
    b.text(PAD, y, "kiln's selector picks", 1, MUTED);
    y += 14;
    b.text(PAD, y, &clip(&v.picked, 33), 2, ACCENT);
    y += 22;
    let by = if v.picked_by == "tuned" {
        format!("from the tuned table: bucket {}", v.bucket)
    } else {
        format!("by {}: no tuned entry for this class", v.picked_by)
    };
    for line in wrap(&by, (W - 2 * PAD) / 8).iter().take(2) {
        b.text(PAD, y, line, 1, TEXT);
        y += 12;
    }
    y += 8;
    b.text(PAD, y, "fastest in the race here", 1, MUTED);
    y += 14;
    let fastest = v.fastest.clone().unwrap_or_else(|| "racing...".into());
    b.text(PAD, y, &clip(&fastest, 33), 2, TEXT);
    y += 30;
    let (verdict, colour) = match (v.agree, v.picked_over_fastest) {
        (Some(true), _) => ("THEY AGREE".to_string(), GOOD),
        (Some(false), Some(r)) => (format!("THEY DIFFER: pick {r:.2}x slower"), ACCENT),
        (Some(false), None) => ("THEY DIFFER".to_string(), ACCENT),
        (None, _) => ("the race is still running".to_string(), MUTED),
    };
    outline(b, PAD, y, W - 2 * PAD, 44, colour);
    b.text(PAD + 14, y + 14, &clip(&verdict, 31), 2, colour);
    y += 60;
    race(b, y, v, 50);
}

/// A rate with three significant figures or so.
fn figure(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn mib(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{} GiB", bytes >> 30)
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

fn clip(s: &str, cols: usize) -> String {
    if s.chars().count() <= cols {
        s.to_string()
    } else {
        s.chars()
            .take(cols.saturating_sub(2))
            .chain("..".chars())
            .collect()
    }
}

/// 0 → 1 over 0.6 s from `t` = 0, eased.
fn ease(t: f32) -> f64 {
    let x = f64::from((t / 0.6).clamp(0.0, 1.0));
    1.0 - (1.0 - x) * (1.0 - x)
}

fn bar(b: &mut Bitmap, x: usize, y: usize, w: usize, h: usize, frac: f64, colour: Rgba) {
    b.rect(x, y, w, h, TRACK);
    let filled = (frac.clamp(0.0, 1.0) * w as f64).round() as usize;
    b.rect(x, y, filled, h, colour);
}

fn outline(b: &mut Bitmap, x: usize, y: usize, w: usize, h: usize, colour: Rgba) {
    b.rect(x, y, w, 2, colour);
    b.rect(x, y + h - 2, w, 2, colour);
    b.rect(x, y, 2, h, colour);
    b.rect(x + w - 2, y, 2, h, colour);
}

impl Demo for FleetTalk {
    const NAME: &'static str = "fleet";
    const TITLE: &'static str = "Kiln · fleet walkthrough";
    const WINDOW: (u32, u32) = (1280, 720);

    fn new(gpu: &Gpu, _options: &Options) -> kiln::Result<Self> {
        let meter = CeilingMeter::new(gpu).map_err(kiln::Error::from)?;
        let race = Race::new(gpu).map_err(kiln::Error::from)?;
        let stages = talk::stages(gpu, &race, meter.choices()).map_err(kiln::Error::from)?;
        Ok(FleetTalk {
            gpu: gpu.clone(),
            stage: 0,
            t: 0.0,
            meter,
            race,
            stages,
            references: references(),
            offered: talk::offered_all(gpu).map_err(kiln::Error::from)?,
            pixels: Tensor::uninit(gpu, &[H, W], DType::U32)?,
            error: None,
        })
    }

    fn frame(&mut self, dt: f32) -> kiln::Result<Tensor> {
        self.t += dt;
        self.work();
        self.pixels.write_u32(&self.draw().packed())?;
        Ok(self.pixels.clone())
    }

    fn hud(&self) -> Vec<String> {
        let v = self.race.view();
        vec![
            format!("{}: {} variants racing", v.case, v.racers.len()),
            format!("selector picks {} ({})", v.picked, v.reason),
        ]
    }

    fn stages(&self) -> Vec<Stage> {
        self.stages.clone()
    }

    fn show_stage(&mut self, stage: usize) {
        self.stage = stage;
        self.t = 0.0;
    }

    fn kernels(&self) -> Vec<kiln::Choice> {
        let mut choices = self.meter.choices().to_vec();
        choices.extend(self.race.choices());
        choices
    }

    /// The raced case on both paths: the selector's pick on the GPU against kiln's plain CPU
    /// reference (a "frame" is one matrix product).
    fn measure(&self) -> impl Future<Output = kiln::Result<Rates>> + 'static {
        let comparison = self.race.against_cpu(10);
        async move {
            let c = comparison.await?;
            Ok(Rates {
                gpu_fps: 1e3 / c.gpu.median_ms,
                cpu_fps: 1e3 / c.cpu.median_ms,
                gpu_clock: c.gpu.clock,
            })
        }
    }

    fn bench(gpu: &Gpu, options: &Options) -> impl Future<Output = kiln::Result<BenchReport>> {
        let (gpu, frames) = (gpu.clone(), options.frames);
        async move {
            let race = Race::new(&gpu).map_err(kiln::Error::from)?;
            let c = race.against_cpu(frames.max(1)).await?;
            Ok(BenchReport {
                demo: Self::NAME.into(),
                adapter: gpu.profile().name.clone(),
                backend: gpu.profile().backend.clone(),
                settings: format!(
                    "{}, {}; GPU on the wall clock, {} runs per submission",
                    race.case, c.variant, c.runs
                ),
                gpu: c.gpu,
                cpu: c.cpu,
                checks: serde_json::json!({
                    "variant": c.variant,
                    "reason": c.reason,
                    "rel_l2_gpu_vs_cpu": c.rel_l2,
                    "agree": c.rel_l2 <= 1e-4,
                    "cpu_path": "plain single-threaded loops (kiln::cpu::matmul)",
                }),
                image: None,
            })
        }
    }
}
