//! One frame on either path: the GPU's three prepared launches (sinusoid table → matmul →
//! RGBA8), the same on the CPU path in plain loops, and the kernels the selector chooses for them.

use kiln_app::kiln::cpu::{self, Array};
use kiln_app::kiln::{self, Choice, DType, DeviceProfile, Dispatch, Gpu, Tensor, ops};
use kiln_app::talk::Target;

use crate::model::{BIAS, Model, SCALE};

/// The GPU path for one model: tensors and the three prepared launches of a frame
/// (sinusoid table → matmul → RGBA8), reused every frame; only the phases change.
pub(crate) struct GpuFrame {
    phase: Tensor,
    /// The factors and the product, kept for presenter mode's pictures.
    pub(crate) left: Tensor,
    pub(crate) right: Tensor,
    pub(crate) planes: Tensor,
    pub(crate) pixels: Tensor,
    dispatches: Vec<Dispatch>,
    /// The selector's choices for the three launches, in order.
    pub(crate) choices: Vec<Choice>,
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
    pub(crate) fn new(gpu: &Gpu, m: &Model) -> kiln::Result<GpuFrame> {
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
        let (table, _) = ops::sinusoid::launch(&freq, &phase, &right, 0.0, m.step(), name(0))?;
        let (product, _) = ops::matmul::launch(&left, &right, &planes, name(1))?;
        let planes = planes.reshape(&[4, res, res])?;
        let (pack, _) = ops::rgba8::launch(&planes, &pixels, SCALE, BIAS, name(2))?;
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
    pub(crate) fn variants(&self) -> Vec<String> {
        self.choices
            .iter()
            .map(|c| format!("{} {}", c.variant.family, c.variant.name))
            .collect()
    }

    pub(crate) fn launches(&self) -> Vec<&Dispatch> {
        self.dispatches.iter().collect()
    }

    /// Computes the frame at time `t` on the GPU; the pixels stay there.
    pub(crate) fn compute(&self, gpu: &Gpu, m: &Model, t: f32) -> kiln::Result<()> {
        self.phase.write(&m.phases(t))?;
        gpu.record(&self.launches())
    }
}

/// The same frame on the CPU path (plain loops): sinusoid table, matmul, RGBA8.
pub(crate) fn cpu_frame(m: &Model, left: &Array, t: f32) -> kiln::Result<Vec<u32>> {
    let right = cpu::sinusoid(&m.freq(), &m.phases(t), m.res, 0.0, m.step())?;
    let planes = cpu::matmul(left, &right)?;
    let planes = Array::new(&[4, m.res, m.res], planes.data)?;
    cpu::rgba8(&planes, SCALE, BIAS)
}

/// The selector's choices for a frame's three launches on `target`, from the shapes alone: what
/// `GpuFrame::new` runs, and what the page without a WebGPU adapter shows, rendered for a
/// stored profile.
pub(crate) fn frame_choices(target: Target<'_>, m: &Model) -> kiln::Result<Vec<Choice>> {
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
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

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
                ops::sinusoid::launch(&freq, &f.phase, &f.right, 0.0, m.step(), None)
                    .unwrap()
                    .1,
                ops::matmul::launch(
                    &f.left,
                    &f.right,
                    &f.planes.reshape(&[4 * res, res]).unwrap(),
                    None,
                )
                .unwrap()
                .1,
                ops::rgba8::launch(&f.planes, &f.pixels, SCALE, BIAS, None)
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
}
