//! Checkpoints: the model's shape, vocabulary and step, its parameters and AdamW moments, in
//! one file that a run resumes from and `flash sample` reads.
//!
//! Layout: `KILNCKPT`, version (u32 LE), header length (u32 LE), the header as JSON, then
//! params, m and v as f32 LE in the order of [`model::layout`], then a CRC-32 of everything
//! before it. Loading checks each part and refuses a file that is truncated, altered, or made
//! for another shape.

use kiln_app::kiln::cpu::Array;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::{self, Params, State};
use crate::preset::{Config, Hyper};

const MAGIC: &[u8; 8] = b"KILNCKPT";
const VERSION: u32 = 2;
const MAX_HEADER: usize = 1 << 20;

/// What a checkpoint says about itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub preset: String,
    pub config: Config,
    pub hyper: Hyper,
    pub step: u32,
    /// Token i is character i of this string.
    pub alphabet: String,
    pub data: String,
    /// Name and shape of every tensor, in storage order.
    pub tensors: Vec<(String, Vec<usize>)>,
}

/// The file's bytes.
pub fn encode(header: &Header, state: &State<Array>) -> Result<Vec<u8>> {
    let json = serde_json::to_vec(header)
        .map_err(|e| Error::Config(format!("cannot encode the checkpoint header: {e}")))?;
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    for p in [&state.params, &state.m, &state.v] {
        for t in &p.tensors {
            for x in &t.data {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Writes a checkpoint beside `path` first and renames it into place, so an interrupted save
/// never leaves a half-written file where a good one was.
pub fn save(path: &str, header: &Header, state: &State<Array>) -> Result<()> {
    let bytes = encode(header, state)?;
    let tmp = format!("{path}.partial");
    let io = |source| Error::Io {
        path: path.to_string(),
        source,
    };
    std::fs::write(&tmp, &bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// Reads and checks a checkpoint file.
pub fn load(path: &str) -> Result<(Header, State<Array>)> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_string(),
        source,
    })?;
    decode(path, &bytes)
}

/// Checks and decodes a checkpoint's bytes; `name` is for the errors.
pub fn decode(name: &str, bytes: &[u8]) -> Result<(Header, State<Array>)> {
    let bad = |detail: String| Error::Checkpoint {
        path: name.to_string(),
        detail,
    };
    if bytes.len() < 8 || &bytes[..8] != MAGIC {
        return Err(bad("not a Kiln checkpoint (no KILNCKPT signature)".into()));
    }
    if bytes.len() < 20 {
        return Err(bad(format!("truncated: {} bytes", bytes.len())));
    }
    let u32_at =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let version = u32_at(8);
    if version != VERSION {
        return Err(bad(format!(
            "format version {version}; this build reads version {VERSION}"
        )));
    }
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    if crc32fast::hash(body) != stored {
        return Err(bad(
            "checksum mismatch: the file is truncated or was altered".into(),
        ));
    }
    let header_len = u32_at(12) as usize;
    if header_len > MAX_HEADER || 16 + header_len > body.len() {
        return Err(bad(format!(
            "header length {header_len} does not fit the file"
        )));
    }
    let mut header: Header = serde_json::from_slice(&body[16..16 + header_len])
        .map_err(|e| bad(format!("header: {e}")))?;
    // Written before grouped heads: one key/value head per query head.
    if header.config.kv_heads == 0 {
        header.config.kv_heads = header.config.heads;
    }
    header.config.check()?;
    if header.alphabet.chars().count() != header.config.vocab {
        return Err(bad(format!(
            "the alphabet has {} characters but the model {} tokens",
            header.alphabet.chars().count(),
            header.config.vocab
        )));
    }
    let layout = model::layout(&header.config);
    if header.tensors != layout {
        return Err(bad(
            "its tensors do not match the model its header describes".into(),
        ));
    }
    let floats: usize = layout
        .iter()
        .map(|(_, s)| s.iter().product::<usize>())
        .sum();
    let data = &body[16 + header_len..];
    if data.len() != 3 * floats * 4 {
        return Err(bad(format!(
            "{} bytes of weights; the model needs {}",
            data.len(),
            3 * floats * 4
        )));
    }
    let mut values = data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let mut read = || -> Result<Params<Array>> {
        let mut tensors = Vec::new();
        for (name, shape) in &layout {
            let v: Vec<f32> = values.by_ref().take(shape.iter().product()).collect();
            if v.iter().any(|x| !x.is_finite()) {
                return Err(bad(format!("{name} holds non-finite values")));
            }
            tensors.push(Array::new(shape, v)?);
        }
        Ok(Params { tensors })
    };
    let state = State {
        params: read()?,
        m: read()?,
        v: read()?,
        step: header.step,
    };
    Ok((header, state))
}
