//! Discovers the kernel families: every folder under `families/` that holds `<folder>.toml` (the
//! contract) and `<folder>.wgsl.jinja` (the template) is a family, and every `_*.wgsl.jinja`
//! anywhere under `families/` is a partial that templates may import by its file name. A family
//! folder is also a Rust module (`mod.rs`: the launcher and the typed `Design` of its variants,
//! with `cpu.rs`, the CPU reference, and `cases.rs`, the case table, beside it). Writes
//! `$OUT_DIR/families.rs` (the sources, for the registry) and `$OUT_DIR/family_modules.rs` (the
//! modules, their case tables and designs, for `kiln::families`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?).join("families");
    println!("cargo::rerun-if-changed={}", root.display());
    let mut folders: Vec<PathBuf> = fs::read_dir(&root)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    folders.retain(|p| p.is_dir());
    folders.sort();

    let (mut families, mut partials) = (Vec::new(), Vec::new());
    for folder in &folders {
        println!("cargo::rerun-if-changed={}", folder.display());
        let name = file_name(folder)?;
        let contract = folder.join(format!("{name}.toml"));
        let template = folder.join(format!("{name}.wgsl.jinja"));
        match (contract.is_file(), template.is_file()) {
            (true, true) => {
                for needed in ["mod.rs", "cases.rs"] {
                    if !folder.join(needed).is_file() {
                        return Err(format!(
                            "{}: a family folder needs {needed} (mod.rs: the launcher and its Design; cases.rs: the case table)",
                            folder.display()
                        )
                        .into());
                    }
                }
                families.push((name.clone(), template, contract));
            }
            (false, false) => {}
            _ => {
                return Err(format!(
                    "{}: a family folder needs both {name}.toml and {name}.wgsl.jinja",
                    folder.display()
                )
                .into());
            }
        }
        let mut files: Vec<PathBuf> = fs::read_dir(folder)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        files.sort();
        for f in files {
            let file = file_name(&f)?;
            if file.starts_with('_') && file.ends_with(".wgsl.jinja") {
                partials.push((file, f));
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (file, path) in &partials {
        if !seen.insert(file) {
            return Err(format!("two partials are named {file} ({})", path.display()).into());
        }
    }

    let mut out = String::new();
    writeln!(
        out,
        "/// The families built into Kiln: `(family, template, contract)`."
    )?;
    writeln!(
        out,
        "pub(crate) const FAMILIES: &[(&str, &str, &str); {}] = &[",
        families.len()
    )?;
    for (name, template, contract) in &families {
        writeln!(
            out,
            "    ({name:?}, include_str!({:?}), include_str!({:?})),",
            template.display().to_string(),
            contract.display().to_string()
        )?;
    }
    writeln!(out, "];")?;
    writeln!(
        out,
        "/// Pieces shared by several templates, imported with `{{% import %}}`."
    )?;
    writeln!(
        out,
        "pub(crate) const PARTIALS: &[(&str, &str); {}] = &[",
        partials.len()
    )?;
    for (file, path) in &partials {
        writeln!(
            out,
            "    ({file:?}, include_str!({:?})),",
            path.display().to_string()
        )?;
    }
    writeln!(out, "];")?;
    fs::write(PathBuf::from(env::var("OUT_DIR")?).join("families.rs"), out)?;

    let mut modules = String::new();
    for (name, template, _) in &families {
        let folder = template.parent().ok_or("a template without a folder")?;
        writeln!(
            modules,
            "#[path = {:?}]\npub mod {name};",
            folder.join("mod.rs").display().to_string()
        )?;
    }
    let n = families.len();
    writeln!(modules, "/// Each family's case table, by family name.")?;
    writeln!(
        modules,
        "pub(crate) const TABLES: &[(&str, crate::cases::Table); {n}] = &["
    )?;
    for (name, _, _) in &families {
        writeln!(modules, "    ({name:?}, {name}::cases::cases),")?;
    }
    writeln!(modules, "];")?;
    writeln!(
        modules,
        "/// Each family's campaign tolerance for f32 (its case table's `CAMPAIGN_TOLERANCE`), by family name."
    )?;
    writeln!(
        modules,
        "pub(crate) const CAMPAIGN_TOLERANCES: &[(&str, f64); {n}] = &["
    )?;
    for (name, _, _) in &families {
        writeln!(
            modules,
            "    ({name:?}, {name}::cases::CAMPAIGN_TOLERANCE),"
        )?;
    }
    writeln!(modules, "];")?;
    writeln!(
        modules,
        "/// Each family's typed reading of a variant (`Design::parse`), by family name."
    )?;
    writeln!(
        modules,
        "pub(crate) const DESIGNS: &[(&str, ReadDesign); {n}] = &["
    )?;
    for (name, _, _) in &families {
        writeln!(
            modules,
            "    ({name:?}, |v| {name}::Design::parse(v).map(drop)),"
        )?;
    }
    writeln!(modules, "];")?;
    fs::write(
        PathBuf::from(env::var("OUT_DIR")?).join("family_modules.rs"),
        modules,
    )?;
    Ok(())
}

fn file_name(p: &Path) -> Result<String, String> {
    p.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| format!("{}: not a UTF-8 file name", p.display()))
}
