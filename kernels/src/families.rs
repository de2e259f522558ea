//! The kernel families, one folder each under `families/`, found by the build script: the
//! contract and template(s), `mod.rs` (the launcher, and `Design`: the family's variant values
//! read into a typed struct), `cpu.rs` (the CPU reference) and `cases.rs` (the case table).
//! `kiln::ops` and `kiln::cpu` re-export what models call; an op that chains several families
//! (the attention backward, naive attention) lives in `ops` with its CPU reference in `cpu`.

/// A family's typed reading of a variant, its result dropped (`DESIGNS`).
type ReadDesign = fn(&crate::Variant) -> crate::Result<()>;

// One module per family folder, `TABLES` (the case tables) and `DESIGNS` (each family's typed
// reading of a variant), written by the build script.
include!(concat!(env!("OUT_DIR"), "/family_modules.rs"));

/// Reads `variant` with its family's `Design`: an error names the value that is missing or of
/// another type. Every variant of every family is read this way in the tests, so a launcher
/// never meets a value it cannot read.
pub fn parse_design(variant: &crate::Variant) -> crate::Result<()> {
    let parse = DESIGNS
        .iter()
        .find(|(f, _)| *f == variant.family)
        .map(|(_, p)| p)
        .ok_or_else(|| crate::Error::UnknownKernel(variant.family.clone()))?;
    parse(variant)
}
