//! The contract of a kernel family (`families/<family>/<family>.toml`): its bindings, the variables a
//! variant assigns with their allowed values, what each value requires of the device, values
//! derived from the variables, and the rules a variant must satisfy.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The value of one template variable.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Param {
    Bool(bool),
    Int(i64),
    Str(String),
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Param::Bool(b) => write!(f, "{b}"),
            Param::Int(i) => write!(f, "{i}"),
            Param::Str(s) => write!(f, "{s}"),
        }
    }
}

/// One buffer a kernel binds, in binding order.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    pub name: String,
    /// `read`, `read_write` or `uniform`.
    pub access: String,
    /// The shape, in the contract's notation (`[batch, m, k]`).
    pub shape: String,
}

/// One template variable and the values a variant may give it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variable {
    pub name: String,
    pub values: Vec<Param>,
    pub doc: String,
    /// Device features needed by particular values, keyed by the value as text.
    #[serde(default)]
    pub requires: BTreeMap<String, Vec<String>>,
}

/// A family's contract, as stored beside its template.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contract {
    pub family: String,
    pub summary: String,
    /// An elementwise family's op ([`ElementwiseSpec`]): the rest of its contract — name,
    /// shapes, bindings, variables, derived values — is every elementwise family's, filled in by
    /// [`Contract::parse`], and its template is the shared `_elementwise.wgsl.jinja`.
    #[serde(default)]
    pub elementwise: Option<ElementwiseSpec>,
    /// Pattern the variant names are rendered from.
    #[serde(default)]
    pub name: String,
    /// Shape rules of a call, in words.
    #[serde(default)]
    pub shapes: String,
    #[serde(default)]
    pub bindings: Vec<Binding>,
    #[serde(default)]
    pub variables: Vec<Variable>,
    /// `[name, expression]` pairs evaluated in order over the variables (and earlier derived
    /// values). `workgroup_size` is required: it is checked against the device limits, and the
    /// template uses the same numbers. (The workgroup memory is not declared: it is naga's
    /// layout of the rendered WGSL, `families/<family>/workgroup_storage.txt`.)
    #[serde(default)]
    pub derived: Vec<(String, String)>,
    /// Boolean expressions every variant must satisfy.
    #[serde(default)]
    pub rules: Vec<String>,
    /// Designs kept out of the headline: valid, validated and proven like every variant, but
    /// not the rule's candidates nor the campaign's default set on the tiers where `when` holds.
    #[serde(default)]
    pub experimental: Vec<ExperimentalSet>,
}

/// What a variant needs of the device and of a call beyond features and limits: the derived
/// values of these names, each optional, that the registry and the launchers read themselves.
/// They are declared here, not by convention: a contract that derives one with another type is
/// refused when the registry loads, and [`Needs::NAMES`] lists them for the contract's reader.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Needs {
    /// `min_subgroup_size`: the fewest lanes the kernel's shuffles span (0: no need).
    pub min_subgroup_size: u32,
    /// `subgroup_size`: the one subgroup size the kernel's layout assumes (0: any).
    pub subgroup_size: u32,
    /// `hardware_only`: bodies unrolled for hardware GPUs, which a software adapter's compiler
    /// takes minutes on.
    pub hardware_only: bool,
    /// `coop_config`: the cooperative-matrix configuration the kernel multiplies with, as
    /// `kiln::device::CoopConfig::name` writes it ("": none).
    pub coop_config: String,
    /// `multiple`: every size a call fixes must be a multiple of this (whole cooperative
    /// fragments, vec4 reads); 1 for any size.
    pub multiple: u32,
}

impl Needs {
    /// The derived names the registry reads, with their types.
    pub const NAMES: [(&'static str, &'static str); 5] = [
        ("min_subgroup_size", "integer"),
        ("subgroup_size", "integer"),
        ("hardware_only", "boolean"),
        ("coop_config", "string"),
        ("multiple", "integer"),
    ];

    /// Reads a variant's needs from its derived values; a need it does not derive takes the
    /// default, one of another type is an error naming it.
    pub fn read(derived: &[(String, Param)]) -> std::result::Result<Needs, String> {
        let get = |name: &str| derived.iter().find(|(n, _)| n == name).map(|(_, v)| v);
        let wrong = |name: &str, v: &Param| {
            let want = Self::NAMES
                .iter()
                .find(|(n, _)| *n == name)
                .map_or("?", |(_, t)| *t);
            format!("derived `{name}` is {v}, not {want}")
        };
        let count = |name: &str, default: u32| match get(name) {
            None => Ok(default),
            Some(Param::Int(i)) => u32::try_from(*i).map_err(|_| wrong(name, &Param::Int(*i))),
            Some(v) => Err(wrong(name, v)),
        };
        Ok(Needs {
            min_subgroup_size: count("min_subgroup_size", 0)?,
            subgroup_size: count("subgroup_size", 0)?,
            hardware_only: match get("hardware_only") {
                None => false,
                Some(Param::Bool(b)) => *b,
                Some(v) => return Err(wrong("hardware_only", v)),
            },
            coop_config: match get("coop_config") {
                None => String::new(),
                Some(Param::Str(s)) => s.clone(),
                Some(v) => return Err(wrong("coop_config", v)),
            },
            multiple: count("multiple", 1)?.max(1),
        })
    }
}

/// An elementwise op over operands of one shape: one line of WGSL and one CPU function (the
/// family folder's `cpu.rs`), the launcher, cases and CPU loop being every elementwise family's
/// (`kiln::elementwise`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElementwiseSpec {
    /// The operands' names in binding order (one to three), read as f32.
    pub operands: Vec<String>,
    /// The output's name (bound after the operands).
    pub output: String,
    /// One element of the output, as a WGSL f32 expression over the operands' names.
    pub value: String,
    /// A partial whose `functions()` macro `value` calls (`_gelu.wgsl.jinja`), if any.
    #[serde(default)]
    pub functions: Option<String>,
    /// Floating-point operations per element, for the campaign's rates.
    pub flops: f64,
    /// The relative L2 error against the CPU reference a proof set allows, in f32 and in f16
    /// (at most 10× the worst measured); a campaign's in f32 (100× that in f16).
    pub tolerance: [f64; 2],
    pub campaign_tolerance: f64,
}

impl ElementwiseSpec {
    /// The most operands an elementwise family takes (`kiln::elementwise::Scalar`'s arities).
    pub const MAX_OPERANDS: usize = 3;

    /// The contract every elementwise family shares, for this op: `{dtype}_wg{wg}` variants of
    /// f32 and f16 (with `shader_f16`) at 64 and 256 threads, the operands bound in order, then
    /// the output and the element count; the op's strings as derived values the shared
    /// template reads.
    fn fill(&self, c: &mut Contract, file: &str) -> Result<()> {
        let refuse = |detail: String| Error::Parse {
            what: file.to_string(),
            detail,
        };
        if !(1..=Self::MAX_OPERANDS).contains(&self.operands.len()) {
            return Err(refuse(format!(
                "an elementwise op takes 1 to {} operands, not {}",
                Self::MAX_OPERANDS,
                self.operands.len()
            )));
        }
        let mut names: Vec<&str> = self.operands.iter().map(String::as_str).collect();
        names.push(&self.output);
        for name in &names {
            let ident = name.starts_with(|ch: char| ch.is_ascii_alphabetic())
                && name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
            if !ident || matches!(*name, "p" | "i" | "main" | "element") {
                return Err(refuse(format!("`{name}` cannot name an operand")));
            }
        }
        let strings = [Some(&self.value), self.functions.as_ref()];
        if strings
            .into_iter()
            .flatten()
            .any(|s| s.contains(['"', '\\', '\n']))
        {
            return Err(refuse(
                "the value and the partial's name hold no quote, backslash or line break".into(),
            ));
        }
        let filled = !c.name.is_empty()
            || !c.shapes.is_empty()
            || !c.bindings.is_empty()
            || !c.variables.is_empty()
            || !c.derived.is_empty();
        if filled {
            return Err(refuse(
                "an elementwise contract states only its op: its name, shapes, bindings, variables and derived values are every elementwise family's".into(),
            ));
        }
        let first = &self.operands[0];
        c.name = "{{ dtype }}_wg{{ wg }}".into();
        c.shapes = format!(
            "{} of one shape → {} of that shape and dtype; arithmetic is f32.",
            self.operands.join(", "),
            self.output
        );
        let binding = |name: &str, access: &str, shape: String| Binding {
            name: name.into(),
            access: access.into(),
            shape,
        };
        c.bindings = self
            .operands
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let shape = if i == 0 {
                    "any".into()
                } else {
                    format!("as {first}")
                };
                binding(name, "read", shape)
            })
            .collect();
        c.bindings
            .push(binding(&self.output, "read_write", format!("as {first}")));
        c.bindings.push(binding("params", "uniform", "n".into()));
        c.variables = vec![
            Variable {
                name: "dtype".into(),
                values: vec![Param::Str("f32".into()), Param::Str("f16".into())],
                doc: "element type of the operands and the output".into(),
                requires: BTreeMap::from([("f16".into(), vec!["shader_f16".into()])]),
            },
            Variable {
                name: "wg".into(),
                values: vec![Param::Int(64), Param::Int(256)],
                doc: "threads per workgroup, one element each".into(),
                requires: BTreeMap::new(),
            },
        ];
        let text = |s: &str| format!("\"{s}\"");
        c.derived = vec![
            ("workgroup_size".into(), "[wg]".into()),
            ("operands".into(), text(&self.operands.join(","))),
            ("output".into(), text(&self.output)),
            ("value".into(), text(&self.value)),
            (
                "functions".into(),
                text(self.functions.as_deref().unwrap_or("")),
            ),
        ];
        Ok(())
    }
}

/// A named set of experimental designs.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentalSet {
    pub name: String,
    /// Why the set is kept out, with what was measured.
    pub why: String,
    /// A boolean expression over the variables, derived values and `tier` (the tier's name,
    /// as `kiln::device::Tier::name` writes it).
    pub when: String,
}

impl Contract {
    /// Parses a contract, checking the parts every family must have.
    pub fn parse(file: &str, text: &str) -> Result<Self> {
        let mut contract: Contract = toml::from_str(text).map_err(|e| Error::Parse {
            what: file.to_string(),
            detail: e.to_string(),
        })?;
        if let Some(spec) = contract.elementwise.clone() {
            spec.fill(&mut contract, file)?;
        }
        let missing: Vec<&str> = [
            ("name", contract.name.is_empty()),
            ("shapes", contract.shapes.is_empty()),
            ("bindings", contract.bindings.is_empty()),
            ("variables", contract.variables.is_empty()),
        ]
        .into_iter()
        .filter_map(|(field, empty)| empty.then_some(field))
        .collect();
        if !missing.is_empty() {
            return Err(Error::Parse {
                what: file.to_string(),
                detail: format!(
                    "missing {} (or an [elementwise] table, which fills them in)",
                    missing.join(", ")
                ),
            });
        }
        for required in ["workgroup_size"] {
            if !contract.derived.iter().any(|(name, _)| name == required) {
                return Err(Error::Parse {
                    what: file.to_string(),
                    detail: format!("`derived` must define `{required}`"),
                });
            }
        }
        // A misspelt feature would hide its variants on every device: refuse it here.
        let known = crate::device::ProfileFeatures::default();
        for var in &contract.variables {
            for feature in var.requires.values().flatten() {
                if known.has(feature).is_none() {
                    return Err(Error::Parse {
                        what: file.to_string(),
                        detail: format!(
                            "variable `{}` requires unknown feature `{feature}`",
                            var.name
                        ),
                    });
                }
            }
        }
        if contract.variables.iter().any(|v| v.values.is_empty()) {
            return Err(Error::Parse {
                what: file.to_string(),
                detail: "every variable needs at least one value".to_string(),
            });
        }
        Ok(contract)
    }

    /// Every assignment of the variables, in declaration order (last variable fastest).
    pub fn assignments(&self) -> Vec<Vec<(String, Param)>> {
        let mut all: Vec<Vec<(String, Param)>> = vec![Vec::new()];
        for var in &self.variables {
            all = all
                .into_iter()
                .flat_map(|prefix| {
                    var.values.iter().map(move |value| {
                        let mut next = prefix.clone();
                        next.push((var.name.clone(), value.clone()));
                        next
                    })
                })
                .collect();
        }
        all
    }

    /// The device features an assignment needs.
    pub fn requirements(&self, values: &[(String, Param)]) -> Vec<String> {
        let mut needs = Vec::new();
        for (name, value) in values {
            let Some(var) = self.variables.iter().find(|v| &v.name == name) else {
                continue;
            };
            if let Some(features) = var.requires.get(&value.to_string()) {
                needs.extend(features.iter().cloned());
            }
        }
        needs.sort();
        needs.dedup();
        needs
    }
}
