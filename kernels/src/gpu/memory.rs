//! GPU memory. Every tensor's buffer comes from a pool and goes back to it when the last tensor
//! (or recorded launch) holding it is dropped, so work that repeats its shapes — a forward pass,
//! a training step, a frame — creates no buffers after its first run. Sizes are rounded up to
//! classes (within an eighth) so that nearby shapes share buffers too; a tensor binds exactly its
//! own bytes, never the whole buffer.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

/// What a pooled buffer is for: its usage flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// Tensors: storage, copy source and destination.
    Storage,
    /// Staging for copies back to the CPU.
    Readback,
}

impl Kind {
    pub fn usage(self) -> wgpu::BufferUsages {
        match self {
            Kind::Storage => {
                wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST
            }
            Kind::Readback => wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        }
    }
}

/// One pooled buffer. Dropping the last handle returns it to its pool.
#[derive(Debug)]
pub(crate) struct Block {
    /// Unique per device: bind groups are cached by it.
    pub id: u64,
    pub raw: wgpu::Buffer,
    kind: Kind,
    /// When the pool handed it out, in the pool's order of hand-outs.
    taken: u64,
    /// The recording that last bound it (see `Gpu::write_bytes`).
    pub used_in: AtomicU64,
    home: Weak<Pool>,
}

impl Drop for Block {
    fn drop(&mut self) {
        if let Some(pool) = self.home.upgrade() {
            pool.give_back(self.id, self.taken, self.raw.clone(), self.kind);
        }
    }
}

/// A byte range of a block: what a tensor is, and what a launch binds.
#[derive(Clone, Debug)]
pub(crate) struct Slice {
    pub block: Arc<Block>,
    pub offset: u64,
    pub size: u64,
}

impl Slice {
    pub fn binding(&self) -> wgpu::BufferBinding<'_> {
        wgpu::BufferBinding {
            buffer: &self.block.raw,
            offset: self.offset,
            size: wgpu::BufferSize::new(self.size),
        }
    }

    /// The key a bind group is cached under.
    pub fn key(&self) -> (u64, u64, u64) {
        (self.block.id, self.offset, self.size)
    }

    /// Whether two slices share bytes.
    pub fn overlaps(&self, other: &Slice) -> bool {
        self.block.id == other.block.id
            && self.offset < other.offset + other.size
            && other.offset < self.offset + self.size
    }
}

/// The size class a request of `bytes` is served from: a multiple of 256 up to 4 KiB, then
/// the next multiple of an eighth of the power of two below (at most 12.5 % unused).
pub(crate) fn size_class(bytes: u64) -> u64 {
    let b = bytes.max(4).next_multiple_of(4);
    if b <= 4096 {
        return b.next_multiple_of(256);
    }
    // An eighth of the power of two at or below: the rounding stays under an eighth of b.
    let step = (1u64 << (63 - b.leading_zeros())) / 8;
    b.next_multiple_of(step)
}

/// Free buffers by (class, kind), each list ordered by when its buffers were last handed out,
/// and the order they came back in (the oldest go first when the pool holds more than its cap).
/// A list serves the buffer handed out earliest first: work that repeats — a training step, a
/// forward pass — gets each buffer in the same place of its sequence as last time, whatever
/// order it gave them back in, so its bind groups repeat too.
#[derive(Debug, Default)]
struct Free {
    lists: HashMap<(u64, Kind), BTreeMap<u64, (u64, wgpu::Buffer)>>,
    order: VecDeque<(u64, u64, u64, Kind)>,
    bytes: u64,
}

/// The pool of one device.
#[derive(Debug)]
pub(crate) struct Pool {
    free: Mutex<Free>,
    /// Most bytes kept in free buffers.
    cap: u64,
    next_id: AtomicU64,
    /// The hand-out clock.
    next_take: AtomicU64,
    /// Ids of buffers the pool let go of, for the bind-group cache to forget.
    evicted: Mutex<Vec<u64>>,
}

impl Pool {
    pub fn new(cap: u64) -> Pool {
        Pool {
            free: Mutex::default(),
            cap,
            next_id: AtomicU64::new(1),
            next_take: AtomicU64::new(1),
            evicted: Mutex::default(),
        }
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A free buffer of exactly `class` bytes and this kind, if the pool has one.
    pub fn take(self: &Arc<Self>, class: u64, kind: Kind) -> Option<Arc<Block>> {
        let mut free = lock(&self.free);
        let (_, (id, raw)) = free.lists.get_mut(&(class, kind))?.pop_first()?;
        free.bytes -= class;
        if let Some(at) = free.order.iter().position(|(i, ..)| *i == id) {
            free.order.remove(at);
        }
        Some(self.wrap(id, raw, kind))
    }

    /// Wraps a buffer (new, or from the free lists) as a block of this pool.
    pub fn wrap(self: &Arc<Self>, id: u64, raw: wgpu::Buffer, kind: Kind) -> Arc<Block> {
        // wgpu's buffers are Send + Sync natively; on wasm32 everything is one thread.
        #[allow(clippy::arc_with_non_send_sync)]
        Arc::new(Block {
            id,
            raw,
            kind,
            taken: self.next_take.fetch_add(1, Ordering::Relaxed),
            used_in: AtomicU64::new(0),
            home: Arc::downgrade(self),
        })
    }

    fn give_back(&self, id: u64, taken: u64, raw: wgpu::Buffer, kind: Kind) {
        let class = raw.size();
        let mut free = lock(&self.free);
        free.lists
            .entry((class, kind))
            .or_default()
            .insert(taken, (id, raw));
        free.order.push_back((id, taken, class, kind));
        free.bytes += class;
        let mut dropped = Vec::new();
        while free.bytes > self.cap {
            let Some((old, taken, class, kind)) = free.order.pop_front() else {
                break;
            };
            if let Some(list) = free.lists.get_mut(&(class, kind))
                && list.remove(&taken).is_some()
            {
                free.bytes -= class;
                dropped.push(old);
            }
        }
        drop(free);
        if !dropped.is_empty() {
            lock(&self.evicted).extend(dropped);
        }
    }

    /// The buffers let go of since the last call.
    pub fn take_evicted(&self) -> Vec<u64> {
        std::mem::take(&mut *lock(&self.evicted))
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn classes_round_up_by_at_most_an_eighth() {
        assert_eq!(size_class(1), 256);
        assert_eq!(size_class(4096), 4096);
        assert_eq!(size_class(4097), 4096 + 512);
        for bytes in [5000u64, 65_537, 1_000_000, 123_456_789] {
            let c = size_class(bytes);
            assert!(c >= bytes && (c - bytes) * 8 <= c, "{bytes} -> {c}");
        }
    }
}
