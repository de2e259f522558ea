//! Kiln's kernel crate: WGSL compute kernels kept as Jinja templates, rendered at run time for
//! the adapter in hand, each with a plain CPU reference it is tested against.
//!
//! ```no_run
//! # async fn demo() -> kiln::Result<()> {
//! use kiln::{DType, Gpu, GpuOptions, Tensor};
//! let gpu = Gpu::new(&GpuOptions::default()).await?;
//! let a = Tensor::from_slice(&gpu, &[2, 3], &[1., 2., 3., 4., 5., 6.], DType::F32)?;
//! let b = Tensor::from_slice(&gpu, &[3, 1], &[1., 1., 1.], DType::F32)?;
//! let c = a.matmul(&b)?.softmax(false, 1.0)?;
//! println!("{:?}", c.read().await?);
//! # Ok(()) }
//! ```

pub mod backend;
pub mod bench;
pub mod cases;
pub mod choices;
pub mod contract;
pub mod cpu;
pub mod device;
pub mod dtype;
pub mod elementwise;
pub mod error;
pub mod explain;
pub mod families;
pub mod fusion;
pub mod gpu;
pub mod launch;
pub mod ops;
pub mod optim;
mod platform;
pub mod registry;
pub mod select;
pub mod shape;
pub mod tensor;
mod trace;

pub use backend::{Backend, CpuBackend, GpuBackend};
pub use choices::ChoiceBackend;
pub use device::DeviceProfile;
pub use dtype::DType;
pub use elementwise::ElementOp;
pub use error::{Error, Result};
pub use gpu::{Dispatch, Gpu, GpuOptions, Plan};
pub use registry::{Piece, Registry, Variant};
pub use select::{Choice, Reason, TunedEntry, TunedTable};
pub use tensor::Tensor;
