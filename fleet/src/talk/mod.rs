//! The fleet's walkthrough for presenter mode. This file holds the stage list (device census →
//! ceilings → variants racing → the tuned choice) and the stages' words; `ceilings` and `race`
//! hold the live measurements behind the stages' visuals, a step at a time so that a window or a
//! page can draw between steps, both timed by `sample`. The native window (`fleet talk`,
//! `crate::presenter`) and the page (fleet-web's exports) share all of it.

mod ceilings;
mod race;
mod sample;

use kiln::{Choice, DType, Gpu, Reason, ops};
use kiln_app::talk::{Code, Stage, Target};
use serde::Serialize;

pub use ceilings::{CeilingMeter, CeilingsView, ceiling_choices};
pub use race::{Comparison, Race, RaceSetup, RaceView, RacerView};

use crate::error::Result;

/// The `DeviceProfile` struct as `kernels/src/device.rs` declares it: what the census records.
fn profile_source() -> String {
    let source = include_str!("../../../kernels/src/device.rs");
    let lines: Vec<&str> = source.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("pub struct DeviceProfile"));
    // Its doc comment too: the lines above that start with `///` or `#[`.
    let start = start.map(|s| {
        let mut s = s;
        while s > 0 && (lines[s - 1].starts_with("///") || lines[s - 1].starts_with("#[")) {
            s -= 1;
        }
        s
    });
    match start {
        Some(s) => lines[s..]
            .iter()
            .position(|l| *l == "}")
            .map(|e| lines[s..=s + e].join("\n"))
            .unwrap_or_else(|| lines[s..].join("\n")),
        None => source.to_string(),
    }
}

/// How many of a family's variants the target offers, and of how many.
fn offered(target: Target<'_>, family: &str) -> Result<(usize, usize)> {
    let reg = target.registry();
    Ok((
        reg.supported(family, target.profile())?.count(),
        reg.variants(family)?.len(),
    ))
}

/// Per kernel family, the variants this adapter is offered (its features and limits allow)
/// and the family's total: the families with the most variants first.
#[derive(Clone, Debug, Serialize)]
pub struct Offered {
    pub family: String,
    pub here: usize,
    pub all: usize,
}

pub fn offered_all(gpu: &Gpu) -> Result<Vec<Offered>> {
    offered_for(Target::Device(gpu))
}

/// [`offered_all`] for a target: the device in hand or a stored profile.
pub fn offered_for(target: Target<'_>) -> Result<Vec<Offered>> {
    let mut list = target
        .registry()
        .contracts()
        .map(|c| {
            let (here, all) = offered(target, &c.family)?;
            Ok(Offered {
                family: c.family.clone(),
                here,
                all,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    list.sort_by(|a, b| b.all.cmp(&a.all).then(a.family.cmp(&b.family)));
    Ok(list)
}

/// The walkthrough for the adapter in hand, in order: device census, ceilings, variants racing,
/// the tuned choice. `ceilings` are the ceiling kernels' choices (copy, FMA chain).
pub fn stages(gpu: &Gpu, race: &Race, ceilings: &[Choice]) -> Result<Vec<Stage>> {
    stages_for(Target::Device(gpu), &race.setup(), ceilings)
}

/// The walkthrough for a target: the device in hand, or a stored profile where there is no
/// device (the words say so, and that nothing is measured here).
pub fn stages_for(target: Target<'_>, race: &RaceSetup, ceilings: &[Choice]) -> Result<Vec<Stage>> {
    let p = target.profile();
    let stored = target.is_stored();
    let yes = |b: bool| if b { "yes" } else { "no" };
    let (mm_here, mm_all) = offered(target, "matmul")?;
    let features = format!(
        "f16 {}, subgroups {}, cooperative matrices {}",
        yes(p.features.shader_f16),
        yes(p.features.subgroup),
        yes(p.features.cooperative_matrix),
    );
    let census = Stage::new(
        "Device census",
        &if stored {
            format!(
                "First Kiln asks the device what it is. WebGPU cannot run on this page (the \
                 explanation above says why), so here is what WebGPU guarantees every device \
                 ({}): its features ({features}) \
                 and limits allow {mm_here} of the {mm_all} matrix-multiply variants. A real \
                 device's features and limits decide which variants may exist on it.",
                p.name
            )
        } else {
            format!(
                "First Kiln asks the device what it is: {}, through {}, a {} device. Its \
                 features ({features}) and limits decide which kernel variants may exist here: \
                 {mm_here} of the {mm_all} matrix-multiply variants.",
                p.name, p.backend, p.device_type,
            )
        },
        Some(Code::rust(
            "kernels/src/device.rs: the census every kernel is rendered for",
            &profile_source(),
        )),
    );

    let fma = ceilings
        .iter()
        .find(|c| c.variant.family == "fma_chain")
        .map(|c| Code::kernel_for(target, c))
        .transpose()?;
    let ceilings_stage = Stage::new(
        "Ceilings",
        &format!(
            "Two tiny kernels measure the best this device can do: a copy for memory bandwidth \
             and a long chain of multiply-adds for arithmetic. Every later result is read as a \
             share of these ceilings, so a phone and a data-centre GPU are judged by the same \
             yardstick.{}",
            if stored {
                " Without an adapter nothing is measured here: the bars are the devices of the \
                 fleet's checked-in reports."
            } else {
                ""
            }
        ),
        fma,
    );

    let rival = race
        .racers
        .iter()
        .find(|c| c.variant.name != race.picked.variant.name)
        .unwrap_or(&race.picked);
    let racing = Stage::new(
        "Variants racing",
        &format!(
            "Now {} variants of one matrix product ({}) race. Each is first checked against \
             the CPU reference, then timed; tile sizes, workgroup shape and vector width are \
             template values, so every contestant is the same source rendered differently.{}",
            race.racers.len(),
            race.case,
            if stored {
                " Without an adapter they cannot run here: these are the contenders a device \
                 with WebGPU's guaranteed limits would race."
            } else {
                ""
            }
        ),
        Some(Code::kernel_for(target, rival)?),
    );

    let why = match &race.picked.reason {
        Reason::Tuned { class, .. } => format!(
            "the tuned table has an entry for this class of device ({class}), measured by \
             an earlier campaign"
        ),
        Reason::Rule(_) => "no campaign has measured this class of device yet, so the \
                            selector's rule of thumb chose"
            .to_string(),
        Reason::Forced => "the caller named it".to_string(),
    };
    let tuned = Stage::new(
        "The tuned choice",
        &format!(
            "For this call Kiln's selector picks {}{}: {why}. {} reports from many devices are \
             merged into that table, so each class of device gets the variant measured fastest \
             on it.",
            race.picked.variant.name,
            if stored {
                " for a device with WebGPU's guaranteed limits"
            } else {
                ""
            },
            if stored {
                "A race on a real device shows whether it is the fastest there;"
            } else {
                "The race shows whether it is the fastest here;"
            }
        ),
        Some(Code::kernel_for(target, &race.picked)?),
    );
    Ok(vec![census, ceilings_stage, racing, tuned])
}

/// The variants kiln's selector picks on this device for a few common calls (the race's
/// matmul, a softmax, a layernorm, a broadcast add, the ceilings' copy and FMA chain), for
/// the page's kernel-source view.
pub fn selector_picks(gpu: &Gpu, race: &Race, ceilings: &[Choice]) -> Result<Vec<Choice>> {
    // Sizes shrink on a CPU running the GPU's work (lavapipe, SwiftShader).
    let rows = if gpu.profile().is_software() {
        256
    } else {
        1024
    };
    let sel = gpu.selector();
    let f32 = DType::F32;
    let mut picks = vec![race.picked.clone()];
    picks.push(sel.choose(&ops::softmax::call(f32, rows, false), None)?);
    picks.push(sel.choose(&ops::layernorm::call(f32, rows, false), None)?);
    picks.push(sel.choose(&ops::add::call(f32, &[rows, rows], &[rows])?, None)?);
    picks.extend(ceilings.iter().cloned());
    Ok(picks)
}
