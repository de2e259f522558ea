//! `Tensor`: a GPU buffer with a shape and a dtype. Ops read and write tensors on the GPU;
//! only `read` copies back to the CPU.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::memory::{Kind, Slice};
use crate::gpu::readback::{read_slice, start_read_slice};
use crate::gpu::{Bindable, Gpu};
use crate::shape;

/// A tensor on the GPU: a byte range of a pooled buffer. Clones and views share the buffer,
/// which goes back to the device's pool when the last of them (and of the launches recorded
/// with it) is gone.
#[derive(Clone, Debug)]
pub struct Tensor {
    gpu: Gpu,
    slice: Slice,
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

    /// A tensor whose contents are unspecified until an op writes it: a buffer from the pool
    /// holds whatever it held last.
    pub fn uninit(gpu: &Gpu, shape: &[usize], dtype: DType) -> Result<Tensor> {
        shape::non_empty("tensor", shape)?;
        if dtype == DType::F16 && !gpu.profile().features.shader_f16 {
            return Err(gpu.unsupported("tensor", "f16 tensors need the SHADER_F16 feature"));
        }
        let bytes = byte_len(shape::numel(shape), dtype);
        let what = || format!("a {} tensor of shape {shape:?}", dtype.wgsl());
        let block = gpu.pooled_block("tensor", what, bytes, Kind::Storage)?;
        Ok(Tensor {
            gpu: gpu.clone(),
            slice: Slice {
                block,
                offset: 0,
                size: bytes,
            },
            shape: shape.to_vec(),
            dtype,
        })
    }

    /// Tensors of the given shapes packed into one buffer: views of it, each starting at an
    /// offset the device can bind, in the order given. One launch can then update them all (an
    /// optimiser step over a model's parameters, `ops::adamw_table`). Contents are unspecified
    /// until written, as with [`uninit`](Self::uninit).
    pub fn packed(gpu: &Gpu, shapes: &[&[usize]], dtype: DType) -> Result<Vec<Tensor>> {
        let (whole, offsets) = Self::packed_whole(gpu, shapes, dtype)?;
        Ok(whole.views(shapes, &offsets))
    }

    /// [`packed`](Self::packed) with each tensor's f32 data uploaded (converted to `dtype`) in
    /// one write.
    pub fn packed_from(
        gpu: &Gpu,
        parts: &[(&[usize], &[f32])],
        dtype: DType,
    ) -> Result<Vec<Tensor>> {
        let shapes: Vec<&[usize]> = parts.iter().map(|(s, _)| *s).collect();
        for (shape, data) in parts {
            shape::check_len("packed", shape, data.len())?;
        }
        let (whole, offsets) = Self::packed_whole(gpu, &shapes, dtype)?;
        let mut bytes = vec![0u8; whole.slice.size as usize];
        for ((_, data), at) in parts.iter().zip(&offsets) {
            let encoded = encode(data, dtype);
            bytes[*at as usize..][..encoded.len()].copy_from_slice(&encoded);
        }
        gpu.write_bytes(&whole.slice, &bytes)?;
        Ok(whole.views(&shapes, &offsets))
    }

    /// One buffer for `shapes` and each shape's byte offset in it, aligned for binding.
    fn packed_whole(gpu: &Gpu, shapes: &[&[usize]], dtype: DType) -> Result<(Tensor, Vec<u64>)> {
        if shapes.is_empty() {
            return Err(Error::shape("packed", "no tensors to pack"));
        }
        let align = gpu.storage_align();
        let mut offsets = Vec::with_capacity(shapes.len());
        let mut end = 0u64;
        for s in shapes {
            shape::non_empty("packed", s)?;
            let at = end.next_multiple_of(align);
            offsets.push(at);
            end = at + byte_len(shape::numel(s), dtype);
        }
        // Whole elements: the buffer seen as one flat tensor of its dtype.
        let elements = (end / dtype.size()) as usize;
        Ok((Tensor::uninit(gpu, &[elements], dtype)?, offsets))
    }

    /// Views of this tensor's bytes: `shapes[i]` at byte offset `offsets[i]` from its start.
    fn views(&self, shapes: &[&[usize]], offsets: &[u64]) -> Vec<Tensor> {
        shapes
            .iter()
            .zip(offsets)
            .map(|(s, &at)| Tensor {
                gpu: self.gpu.clone(),
                slice: Slice {
                    block: self.slice.block.clone(),
                    offset: self.slice.offset + at,
                    size: byte_len(shape::numel(s), self.dtype),
                },
                shape: s.to_vec(),
                dtype: self.dtype,
            })
            .collect()
    }

    /// The flat tensor spanning `parts`, views of one buffer (as [`packed`](Self::packed) makes
    /// them), and each part's first element in it; `None` where they are not all views of one
    /// buffer with one dtype, on element boundaries, the first at a bindable offset.
    pub fn span(parts: &[&Tensor]) -> Option<(Tensor, Vec<usize>)> {
        let first = parts.first()?;
        let size = first.dtype.size();
        let start = parts.iter().map(|t| t.slice.offset).min()?;
        let end = parts.iter().map(|t| t.slice.offset + t.slice.size).max()?;
        let alike = parts.iter().all(|t| {
            t.slice.block.id == first.slice.block.id
                && t.dtype == first.dtype
                && (t.slice.offset - start).is_multiple_of(size)
        });
        if !alike || !start.is_multiple_of(first.gpu.storage_align()) {
            return None;
        }
        let whole = Tensor {
            gpu: first.gpu.clone(),
            slice: Slice {
                block: first.slice.block.clone(),
                offset: start,
                size: end - start,
            },
            shape: vec![((end - start) / size) as usize],
            dtype: first.dtype,
        };
        let at = parts
            .iter()
            .map(|t| ((t.slice.offset - start) / size) as usize)
            .collect();
        Some((whole, at))
    }

    /// Zeros of this shape from the buffer the device keeps for read-only operands (an absent
    /// bias): no upload per call. Only for inputs: nothing may write it.
    pub(crate) fn kept_zeros(gpu: &Gpu, shape: &[usize], dtype: DType) -> Result<Tensor> {
        shape::non_empty("zeros", shape)?;
        Ok(Tensor {
            gpu: gpu.clone(),
            slice: gpu.zero_bytes(byte_len(shape::numel(shape), dtype))?,
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

    /// Whether two tensors share bytes (views of one buffer may not).
    pub(crate) fn overlaps(&self, other: &Tensor) -> bool {
        self.slice.overlaps(&other.slice)
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

    /// The `index`-th of the equal parts the first axis splits into, as a view of the same
    /// bytes (an op may write it); an error where the device's offset alignment does not allow
    /// a view there.
    pub fn part_view(&self, index: usize) -> Result<Tensor> {
        let (per, size) = self.part_bytes(index)?;
        let offset = self.slice.offset + index as u64 * per;
        let align = self.gpu.storage_align();
        if !offset.is_multiple_of(align) || (index + 1 < self.shape[0] && per != size) {
            return Err(Error::InvalidArgument {
                op: "part_view",
                detail: format!(
                    "part {index} of {:?} starts at byte {offset}, not a multiple of the device's {align}-byte storage offset alignment",
                    self.shape
                ),
            });
        }
        Ok(Tensor {
            gpu: self.gpu.clone(),
            slice: Slice {
                block: self.slice.block.clone(),
                offset,
                size,
            },
            shape: self.shape[1..].to_vec(),
            dtype: self.dtype,
        })
    }

    /// Bytes per part along the first axis, and the bytes a part binds (rounded up to a word).
    fn part_bytes(&self, index: usize) -> Result<(u64, u64)> {
        match self.shape.split_first() {
            Some((&n, rest)) if index < n && !rest.is_empty() => Ok((
                shape::numel(rest) as u64 * self.dtype.size(),
                byte_len(shape::numel(rest), self.dtype),
            )),
            _ => Err(Error::shape(
                "part",
                format!(
                    "part {index} of a tensor of shape {:?}: expected rank ≥ 2 and an index below the first extent",
                    self.shape
                ),
            )),
        }
    }

    /// Rows `start .. start + count` of the first axis ([B·3H, T, d] → K's [H, T, d]), as a
    /// tensor of its own: a view of the same bytes where the device's offset alignment allows
    /// it (an op may write it), else a copy recorded into a new tensor.
    pub fn rows(&self, start: usize, count: usize) -> Result<Tensor> {
        let (offset, size, exact) = self.row_bytes("rows", start, count)?;
        let last = start + count == self.shape[0];
        let mut shape = self.shape.clone();
        shape[0] = count;
        if offset.is_multiple_of(self.gpu.storage_align()) && (last || exact == size) {
            return Ok(Tensor {
                gpu: self.gpu.clone(),
                slice: Slice {
                    block: self.slice.block.clone(),
                    offset,
                    size,
                },
                shape,
                dtype: self.dtype,
            });
        }
        let out = Tensor::uninit(&self.gpu, &shape, self.dtype)?;
        out.copy_rows(0, self, start, count)?;
        Ok(out)
    }

    /// Records a copy of `src`'s rows `from .. from + count` (first axis) into this tensor's
    /// rows `to ..`: same dtype and row shape, whole 4-byte words (a GPU copy's unit).
    pub fn copy_rows(&self, to: usize, src: &Tensor, from: usize, count: usize) -> Result<()> {
        if src.dtype != self.dtype
            || src.shape.get(1..) != self.shape.get(1..)
            || !src.gpu.same_device(&self.gpu)
        {
            return Err(Error::shape(
                "copy_rows",
                format!(
                    "rows of {} {:?} into {} {:?}",
                    src.dtype.wgsl(),
                    src.shape,
                    self.dtype.wgsl(),
                    self.shape
                ),
            ));
        }
        let (src_at, _, size) = src.row_bytes("copy_rows", from, count)?;
        let (dst_at, _, _) = self.row_bytes("copy_rows", to, count)?;
        if !(src_at.is_multiple_of(4) && dst_at.is_multiple_of(4) && size.is_multiple_of(4)) {
            return Err(Error::shape(
                "copy_rows",
                format!("{count} rows of {:?} are not whole 4-byte words", src.shape),
            ));
        }
        let at = |t: &Tensor, offset| Slice {
            block: t.slice.block.clone(),
            offset,
            size,
        };
        self.gpu.record_copy(&at(src, src_at), &at(self, dst_at))
    }

    /// Rows `start .. start + count` of the first axis: their byte offset, the bytes they bind
    /// (rounded up to a word) and their exact bytes.
    fn row_bytes(&self, op: &'static str, start: usize, count: usize) -> Result<(u64, u64, u64)> {
        match self.shape.split_first() {
            Some((&n, rest)) if count > 0 && start + count <= n => {
                let per = shape::numel(rest) as u64 * self.dtype.size();
                let exact = count as u64 * per;
                Ok((
                    self.slice.offset + start as u64 * per,
                    byte_len(count * shape::numel(rest), self.dtype),
                    exact,
                ))
            }
            _ => Err(Error::shape(
                op,
                format!(
                    "rows {start}..{} of a tensor of shape {:?}",
                    start + count,
                    self.shape
                ),
            )),
        }
    }

    /// Tensors of one shape and dtype stacked along a new first axis: copies recorded into a
    /// new tensor.
    pub fn stack(parts: &[&Tensor]) -> Result<Tensor> {
        let first = parts
            .first()
            .ok_or_else(|| Error::shape("stack", "nothing to stack"))?;
        for p in parts {
            if p.shape != first.shape || p.dtype != first.dtype || !p.gpu.same_device(&first.gpu) {
                return Err(Error::shape(
                    "stack",
                    format!(
                        "parts differ: {} {:?} and {} {:?}",
                        first.dtype.wgsl(),
                        first.shape,
                        p.dtype.wgsl(),
                        p.shape
                    ),
                ));
            }
        }
        let per = first.numel() as u64 * first.dtype.size();
        if !per.is_multiple_of(4) {
            return Err(Error::shape(
                "stack",
                format!("parts of {per} bytes are not whole 4-byte words"),
            ));
        }
        let mut shape = vec![parts.len()];
        shape.extend_from_slice(&first.shape);
        let out = Tensor::uninit(&first.gpu, &shape, first.dtype)?;
        for (i, p) in parts.iter().enumerate() {
            let dst = Slice {
                block: out.slice.block.clone(),
                offset: out.slice.offset + i as u64 * per,
                size: per,
            };
            let src = Slice {
                size: per,
                ..p.slice.clone()
            };
            first.gpu.record_copy(&src, &dst)?;
        }
        Ok(out)
    }

    /// The `index`-th of the equal parts the first axis splits into, as a tensor of its own
    /// ([3, H, N, d] → part 1 is K's [H, N, d]). A view of the same buffer where the device's
    /// offset alignment allows it, else a copy recorded into a new tensor.
    pub fn part(&self, index: usize) -> Result<Tensor> {
        if let Ok(view) = self.part_view(index) {
            return Ok(view);
        }
        self.part_copy(index)
    }

    fn part_copy(&self, index: usize) -> Result<Tensor> {
        let (per, size) = self.part_bytes(index)?;
        let offset = self.slice.offset + index as u64 * per;
        if !offset.is_multiple_of(4) || !per.is_multiple_of(4) {
            return Err(Error::shape(
                "part",
                format!(
                    "parts of {per} bytes are not whole 4-byte words ({} {:?})",
                    self.dtype.wgsl(),
                    self.shape
                ),
            ));
        }
        let out = Tensor::uninit(&self.gpu, &self.shape[1..], self.dtype)?;
        let src = Slice {
            block: self.slice.block.clone(),
            offset,
            size,
        };
        self.gpu.record_copy(&src, &out.slice)?;
        Ok(out)
    }

    /// Uploads u32 data (packed pixels, indices) as a `U32` tensor.
    pub fn from_u32(gpu: &Gpu, shape: &[usize], data: &[u32]) -> Result<Tensor> {
        shape::check_len("tensor", shape, data.len())?;
        let t = Tensor::uninit(gpu, shape, DType::U32)?;
        gpu.write_bytes(&t.slice, bytemuck::cast_slice(data))?;
        Ok(t)
    }

    /// Overwrites the tensor with f32 data (converted to its dtype), keeping shape and buffer.
    /// Work recorded before the write sees the old values.
    pub fn write(&self, data: &[f32]) -> Result<()> {
        shape::check_len("write", &self.shape, data.len())?;
        // Writes must be whole 4-byte words: pad an odd count of f16 values.
        let mut bytes = encode(data, self.dtype);
        bytes.resize(self.slice.size as usize, 0);
        self.gpu.write_bytes(&self.slice, &bytes)
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
            .write_bytes(&self.slice, bytemuck::cast_slice(data))
    }

    /// Copies the tensor back to the CPU as f32. Natively this waits for the GPU; in the
    /// browser it yields to the event loop until the copy has landed.
    pub async fn read(&self) -> Result<Vec<f32>> {
        self.start_read()?.await
    }

    /// [`read`](Self::read), started now: the copy is submitted behind the work recorded so
    /// far and the map asked for before this returns; the future gives the values. What is
    /// recorded meanwhile runs while the read comes back, and is not part of it (a double
    /// buffer: step k's losses read while step k + 1 runs, though it rewrites them).
    pub fn start_read(&self) -> Result<impl Future<Output = Result<Vec<f32>>> + 'static> {
        if self.dtype == DType::U32 {
            return Err(Error::InvalidArgument {
                op: "read",
                detail: "a u32 tensor is read with read_u32".into(),
            });
        }
        let bytes = start_read_slice(&self.gpu, &self.slice)?;
        let (dtype, numel) = (self.dtype, self.numel());
        Ok(async move { Ok(decode(&bytes.await?, dtype, numel)) })
    }

    /// Copies a `U32` tensor back to the CPU.
    pub async fn read_u32(&self) -> Result<Vec<u32>> {
        if self.dtype != DType::U32 {
            return Err(Error::InvalidArgument {
                op: "read_u32",
                detail: format!("the tensor is {}, not u32", self.dtype.wgsl()),
            });
        }
        let bytes = read_slice(&self.gpu, &self.slice).await?;
        Ok(bytes
            .chunks_exact(4)
            .take(self.numel())
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// The tensor's bytes as a binding, for code that draws from it (a display pass binding
    /// the pixels). The binding holds the buffer only while the tensor lives.
    pub fn binding(&self) -> wgpu::BufferBinding<'_> {
        self.slice.binding()
    }
}

impl Tensor {
    /// A tensor over bytes a launch bound (a launch taken back from the recording, its
    /// buffers reused by the launch that replaces it).
    pub(crate) fn over(gpu: &Gpu, slice: Slice, shape: &[usize], dtype: DType) -> Tensor {
        Tensor {
            gpu: gpu.clone(),
            slice,
            shape: shape.to_vec(),
            dtype,
        }
    }
}

/// A tensor binds the bytes it is.
impl Bindable for Tensor {
    fn slice(&self) -> &Slice {
        &self.slice
    }
}

/// Bytes of `n` elements, rounded up to whole 4-byte words (an odd count of f16 values).
fn byte_len(n: usize, dtype: DType) -> u64 {
    (n as u64)
        .saturating_mul(dtype.size())
        .checked_next_multiple_of(4)
        .unwrap_or(u64::MAX)
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
