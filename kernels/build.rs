//! Discovers the kernel families: every folder under `families/` that holds `<folder>.toml` (the
//! contract) and `<folder>.wgsl.jinja` (the template) is a family, and every `_*.wgsl.jinja`
//! anywhere under `families/` is a partial that templates may import by its file name. A folder
//! with a `cases.rs` contributes the family's case table to `kiln::cases`. Writes the tables to
//! `$OUT_DIR/families.rs`, which the registry and `cases` include.

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

    let (mut families, mut partials, mut cases) = (Vec::new(), Vec::new(), Vec::new());
    for folder in &folders {
        println!("cargo::rerun-if-changed={}", folder.display());
        let name = file_name(folder)?;
        let contract = folder.join(format!("{name}.toml"));
        let template = folder.join(format!("{name}.wgsl.jinja"));
        match (contract.is_file(), template.is_file()) {
            (true, true) => families.push((name.clone(), template, contract)),
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
            } else if file == "cases.rs" {
                cases.push((name.clone(), f));
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

    let mut tables = String::new();
    for (name, path) in &cases {
        writeln!(
            tables,
            "#[path = {:?}]\nmod {name};",
            path.display().to_string()
        )?;
    }
    writeln!(tables, "/// Each family's case table, by family name.")?;
    writeln!(
        tables,
        "const TABLES: &[(&str, Table); {}] = &[",
        cases.len()
    )?;
    for (name, _) in &cases {
        writeln!(tables, "    ({name:?}, {name}::cases),")?;
    }
    writeln!(tables, "];")?;
    fs::write(
        PathBuf::from(env::var("OUT_DIR")?).join("case_tables.rs"),
        tables,
    )?;
    Ok(())
}

fn file_name(p: &Path) -> Result<String, String> {
    p.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| format!("{}: not a UTF-8 file name", p.display()))
}
