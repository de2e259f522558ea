//! The flags of `kiln bench attention`: the shape, the pass, and which paths and variants run.

use clap::Args;

#[derive(Args)]
pub struct AttentionArgs {
    /// Batch.
    #[arg(long, default_value_t = 1)]
    pub(super) b: usize,
    /// Heads (query heads).
    #[arg(long, default_value_t = 8)]
    pub(super) h: usize,
    /// Key/value heads, dividing the query heads (grouped-query attention; 0: as many as the
    /// query heads). Grouped runs skip the naive path, which has no grouping.
    #[arg(long, default_value_t = 0)]
    pub(super) kv_heads: usize,
    /// Sequence length (queries and keys).
    #[arg(long, default_value_t = 512)]
    pub(super) n: usize,
    /// Head dimension.
    #[arg(long, default_value_t = 64)]
    pub(super) d: usize,
    #[arg(long)]
    pub(super) causal: bool,
    /// Time forward + backward instead of the forward pass alone.
    #[arg(long)]
    pub(super) backward: bool,
    #[arg(long, default_value = "f32")]
    pub(super) dtype: String,
    /// Also time every offered flash variant for this shape (each checked first).
    #[arg(long)]
    pub(super) sweep: bool,
    /// Also time these flash variants (comma-separated names, as `kiln kernels --family
    /// flash_fwd`, `flash_bwd_dkdv`, `flash_bwd_dq` or `flash_bwd_fused` lists them; the backward ones with
    /// `--backward`), each checked first: each kernel alone beside the selector's choice for
    /// its family (reported with the sweep's rows), and the whole pass with the first named
    /// variant of each family forced and the selector's for the others (the path `named`).
    #[arg(long, value_delimiter = ',')]
    pub(super) variant: Vec<String>,
    /// Skip the naive GPU path (its N×N tensors may not fit the device).
    #[arg(long)]
    pub(super) no_naive: bool,
    /// Batch × head slices the CPU path runs (0 = all); its time is scaled to all of them.
    #[arg(long, default_value_t = 0)]
    pub(super) cpu_slices: usize,
    #[command(flatten)]
    pub(super) run: crate::RunArgs,
}
