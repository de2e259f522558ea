//! The walkthrough's five stages: what each says, and the code it shows (the kernels rendered
//! for the device, or for a stored profile where there is none).

use kiln_app::kiln::Choice;
use kiln_app::talk::{Code, Stage, Target};

use crate::model::{BIAS, Model, SCALE};

/// The walkthrough's stages, 0-based, in the order `stages()` lists them.
pub(crate) const PARAMETERS: usize = 0;
pub(crate) const FACTORS: usize = 1;
pub(crate) const PRODUCT: usize = 2;
pub(crate) const COLOUR: usize = 3;
pub(crate) const RATES: usize = 4;

/// The walkthrough for `m`, its kernels (`choices`: the frame's three launches) rendered for
/// `target`. Without a device (`Target::Stored`) the pictures come from the CPU path and the
/// words say so.
pub(crate) fn walkthrough(m: &Model, target: Target<'_>, choices: &[Choice]) -> Vec<Stage> {
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
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::frame::frame_choices;
    use kiln_app::talk::{self, Stored};

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
