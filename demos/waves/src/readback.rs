//! GPU tensors copied back for presenter mode's pictures, one copy in flight at a time.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use kiln_app::kiln::{self, Tensor};

/// GPU tensors copied back for a stage's picture. One copy is in flight at a time: natively it
/// lands before `request` returns; in the browser it lands a frame or two later, and the picture
/// shows the latest copy made for its stage.
#[derive(Default)]
pub(crate) struct Readback {
    landed: Rc<RefCell<Option<Landed>>>,
    busy: Rc<Cell<bool>>,
}

pub(crate) struct Landed {
    pub(crate) stage: usize,
    pub(crate) floats: Vec<Vec<f32>>,
    pub(crate) pixels: Vec<u32>,
}

impl Readback {
    /// Copies `floats` (and `pixels`) back for `stage`, unless a copy is already on its way.
    pub(crate) fn request(&self, stage: usize, floats: Vec<Tensor>, pixels: Option<Tensor>) {
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
    pub(crate) fn with<R>(&self, stage: usize, draw: impl FnOnce(&Landed) -> R) -> Option<R> {
        self.landed
            .borrow()
            .as_ref()
            .filter(|l| l.stage == stage)
            .map(draw)
    }
}
