//! greedy_next's cases: the hand-over launched more times than the log has rows, so that every
//! row is written, on logits whose largest value appears twice (the later one must win).
use crate::cases::POISON_WORD;
use crate::cases::prelude::*;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`: the kernel copies and compares, exactly, but a report's
/// tolerance must be positive (as `copy`'s).
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-7;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("greedy_next");
    let (vocab, _) = z.vocab;
    // Rows of logits, rows of the log, launches: more launches than log rows, neither a power
    // of two.
    let (rows, cap, launches) = (3, 5, 7);
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        let mut data = inputs.data(rows * vocab, dtype);
        // The last row's largest value again at a later id: the tie goes to the later one.
        let last = (rows - 1) * vocab;
        let top = super::cpu::greedy_pick(&data[last..]).unwrap_or(0) as usize;
        let twin = vocab - 1 - (vocab - 1 - top) / 2;
        data[last + twin] = data[last + top];
        let logits = Tensor::from_slice(gpu, &[rows, vocab], &data, dtype)?;
        let logits_a = Array::new(&[rows, vocab], data)?;
        // The check poisons the u32 outputs with POISON_WORD, so the counters start there.
        let mut log_a = Array::new(&[cap, vocab + 1], vec![0.0; cap * (vocab + 1)])?;
        let (mut position, mut length, mut token) = (POISON_WORD, POISON_WORD, 0);
        for _ in 0..launches {
            [token, position, length] =
                super::cpu::greedy_next(&logits_a, position, length, &mut log_a)?;
        }
        let words = |v: u32| Tensor::from_u32(gpu, &[1], &[v]);
        let (tok, pos, len) = (words(0)?, words(0)?, words(0)?);
        let log = Tensor::uninit(gpu, &[cap, vocab + 1], DType::F32)?;
        let outputs = vec![
            Output::words(&tok, vec![token]).named("token"),
            Output::words(&pos, vec![position]).named("position"),
            Output::words(&len, vec![length]).named("length"),
            values(&log, &log_a.data).named("log"),
        ];
        cases.push(Case {
            family: "greedy_next",
            fixed: vec![dtype_is(dtype)],
            name: format!(
                "greedy_next {rows}x{vocab} x{launches} into {cap} {}",
                dtype.wgsl()
            ),
            // Exact in a proof, f16 too (the log holds the f16 inputs widened): an id or a
            // counter off by one moves the words' bytes by less than f16's usual 3e-3.
            tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [0.0, 0.0]),
            flops: 0.0,
            bytes: vocab as f64 * dtype.size() as f64 + ((vocab + 1) * 4) as f64,
            outputs,
            launch: Box::new(move |name| {
                let launch = || super::launch(&logits, &tok, &pos, &len, &log, name);
                let (first, choice) = launch()?;
                let mut all = vec![first];
                for _ in 1..launches {
                    all.push(launch()?.0);
                }
                Ok(Launches {
                    all,
                    timed: vec![launches - 1],
                    choice,
                })
            }),
        });
    }
    Ok(cases)
}
