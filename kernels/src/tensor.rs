//! `Tensor`: a GPU buffer with a shape and a dtype. Ops read and write tensors on the GPU;
//! only `read` copies back to the CPU.

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::platform;
use crate::shape;

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F16,
    /// Packed data such as RGBA8 pixels; read with `read_u32`.
    U32,
}

impl DType {
    /// The WGSL type name, also the `dtype` value in template contracts.
    pub fn wgsl(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::U32 => "u32",
        }
    }

    pub fn size(self) -> u64 {
        match self {
            DType::F32 | DType::U32 => 4,
            DType::F16 => 2,
        }
    }

    /// Parses `f32` or `f16`.
    pub fn parse(s: &str) -> Result<DType> {
        match s {
            "f32" => Ok(DType::F32),
            "f16" => Ok(DType::F16),
            "u32" => Ok(DType::U32),
            other => Err(Error::Parse {
                what: "dtype".into(),
                detail: format!("`{other}` is not a dtype (f32, f16, u32)"),
            }),
        }
    }
}

/// A tensor on the GPU. Clones share the buffer.
#[derive(Clone, Debug)]
pub struct Tensor {
    gpu: Gpu,
    /// wgpu buffers are reference-counted handles: clones share the allocation.
    buffer: wgpu::Buffer,
    shape: Vec<usize>,
    dtype: DType,
}

impl Tensor {
    /// Uploads f32 data, converted to `dtype`.
    pub fn from_slice(gpu: &Gpu, shape: &[usize], data: &[f32], dtype: DType) -> Result<Tensor> {
        shape::check_len("tensor", shape, data.len())?;
        let t = Tensor::uninit(gpu, shape, dtype)?;
        t.write(data)?;
        Ok(t)
    }

    /// A tensor with every element set to `value` (NaN poisons an output in tests).
    pub fn full(gpu: &Gpu, shape: &[usize], value: f32, dtype: DType) -> Result<Tensor> {
        // The device limits are checked before any host memory is taken.
        let t = Tensor::uninit(gpu, shape, dtype)?;
        t.write(&vec![value; shape::numel(shape)])?;
        Ok(t)
    }

    /// A tensor whose contents are unspecified until an op writes it (wgpu zeroes new buffers).
    pub fn uninit(gpu: &Gpu, shape: &[usize], dtype: DType) -> Result<Tensor> {
        shape::non_empty("tensor", shape)?;
        if dtype == DType::F16 && !gpu.profile().features.shader_f16 {
            return Err(gpu.unsupported("tensor", "f16 tensors need the SHADER_F16 feature"));
        }
        let bytes = (shape::numel(shape) as u64).saturating_mul(dtype.size());
        let what = format!("a {} tensor of shape {shape:?}", dtype.wgsl());
        let buffer = gpu.storage_buffer(
            "tensor",
            &what,
            bytes,
            wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        )?;
        Ok(Tensor {
            gpu: gpu.clone(),
            buffer,
            shape: shape.to_vec(),
            dtype,
        })
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn numel(&self) -> usize {
        shape::numel(&self.shape)
    }

    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// The same data seen with another shape of the same element count (no copy).
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        shape::non_empty("reshape", shape)?;
        if shape::numel(shape) != self.numel() {
            return Err(Error::shape(
                "reshape",
                format!("{:?} cannot become {shape:?}", self.shape),
            ));
        }
        Ok(Tensor {
            shape: shape.to_vec(),
            ..self.clone()
        })
    }

    /// Uploads u32 data (packed pixels, indices) as a `U32` tensor.
    pub fn from_u32(gpu: &Gpu, shape: &[usize], data: &[u32]) -> Result<Tensor> {
        shape::check_len("tensor", shape, data.len())?;
        let t = Tensor::uninit(gpu, shape, DType::U32)?;
        gpu.queue()
            .write_buffer(&t.buffer, 0, bytemuck::cast_slice(data));
        Ok(t)
    }

    /// Overwrites the tensor with f32 data (converted to its dtype), keeping shape and buffer.
    pub fn write(&self, data: &[f32]) -> Result<()> {
        shape::check_len("write", &self.shape, data.len())?;
        // Writes must be whole 4-byte words: pad an odd count of f16 values.
        let mut bytes = encode(data, self.dtype);
        bytes.resize(self.buffer.size() as usize, 0);
        self.gpu.queue().write_buffer(&self.buffer, 0, &bytes);
        Ok(())
    }

    /// Overwrites a `U32` tensor with u32 data.
    pub fn write_u32(&self, data: &[u32]) -> Result<()> {
        shape::check_len("write_u32", &self.shape, data.len())?;
        if self.dtype != DType::U32 {
            return Err(Error::InvalidArgument {
                op: "write_u32",
                detail: format!("the tensor is {}, not u32", self.dtype.wgsl()),
            });
        }
        self.gpu
            .queue()
            .write_buffer(&self.buffer, 0, bytemuck::cast_slice(data));
        Ok(())
    }

    /// Copies the tensor back to the CPU as f32. Natively this waits for the GPU; in the
    /// browser it yields to the event loop until the copy has landed.
    pub async fn read(&self) -> Result<Vec<f32>> {
        if self.dtype == DType::U32 {
            return Err(Error::InvalidArgument {
                op: "read",
                detail: "a u32 tensor is read with read_u32".into(),
            });
        }
        let bytes = read_buffer(&self.gpu, &self.buffer).await?;
        Ok(decode(&bytes, self.dtype, self.numel()))
    }

    /// Copies a `U32` tensor back to the CPU.
    pub async fn read_u32(&self) -> Result<Vec<u32>> {
        if self.dtype != DType::U32 {
            return Err(Error::InvalidArgument {
                op: "read_u32",
                detail: format!("the tensor is {}, not u32", self.dtype.wgsl()),
            });
        }
        let bytes = read_buffer(&self.gpu, &self.buffer).await?;
        Ok(bytes
            .chunks_exact(4)
            .take(self.numel())
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// The buffer, for code that draws from it (a display pass binding the pixels).
    pub fn raw_buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

/// Copies a whole buffer back to the CPU, then reports any error wgpu raised on the way.
pub(crate) async fn read_buffer(gpu: &Gpu, buffer: &wgpu::Buffer) -> Result<Vec<u8>> {
    let device = gpu.device();
    let size = buffer.size();
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("kiln readback"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("kiln readback"),
    });
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
    gpu.queue().submit([encoder.finish()]);

    let (tx, rx) = futures_channel::oneshot::channel();
    staging.map_async(wgpu::MapMode::Read, .., move |result| {
        // The receiver only disappears if the caller gave up on the read.
        let _ = tx.send(result);
    });
    platform::drive(device)?;
    gpu.check()?;
    rx.await
        .map_err(|_| Error::Readback("the device dropped the map request".into()))?
        .map_err(|e| Error::Readback(e.to_string()))?;
    let bytes = staging
        .get_mapped_range(..)
        .map_err(|e| Error::Readback(e.to_string()))?
        .to_vec();
    staging.unmap();
    Ok(bytes)
}

fn encode(data: &[f32], dtype: DType) -> Vec<u8> {
    match dtype {
        DType::F32 => bytemuck::cast_slice(data).to_vec(),
        DType::U32 => data
            .iter()
            .flat_map(|&v| (v as u32).to_le_bytes())
            .collect(),
        DType::F16 => data
            .iter()
            .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
            .collect(),
    }
}

fn decode(bytes: &[u8], dtype: DType, n: usize) -> Vec<f32> {
    match dtype {
        DType::F32 => bytes
            .chunks_exact(4)
            .take(n)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        DType::U32 => bytes
            .chunks_exact(4)
            .take(n)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32)
            .collect(),
        DType::F16 => bytes
            .chunks_exact(2)
            .take(n)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
    }
}

/// Rounds each value to f16 and back: the CPU reference for f16 inputs sees what the GPU sees.
pub fn round_to_f16(data: &[f32]) -> Vec<f32> {
    data.iter()
        .map(|&v| half::f16::from_f32(v).to_f32())
        .collect()
}
