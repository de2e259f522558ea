//! `Variant`: one assignment of a family's variables, with typed accessors for launchers.

use std::collections::BTreeMap;

use minijinja::Value;
use serde::Serialize;

use crate::contract::{Needs, Param};
use crate::device::{DeviceProfile, Tier};
use crate::dtype::DType;
use crate::error::{Error, Result};

/// One assignment of a family's variables: a kernel that can be rendered.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Variant {
    pub family: String,
    pub name: String,
    /// The variables, in the contract's order.
    pub values: Vec<(String, Param)>,
    /// Derived values (tile sizes, workgroup size, storage), in the contract's order.
    pub derived: Vec<(String, Param)>,
    pub workgroup_size: [u32; 3],
    /// Bytes of workgroup memory the kernel declares.
    pub workgroup_storage: u32,
    /// Device features the variant needs.
    pub requires: Vec<String>,
    /// What else it needs of the device and of a call (subgroup sizes, a cooperative-matrix
    /// configuration, size multiples), read once from its derived values.
    #[serde(skip)]
    pub needs: Needs,
    /// The tiers on which it is experimental, with the contract's name for the set.
    pub experimental: Vec<(Tier, String)>,
}

impl Variant {
    /// The value of a variable or derived value.
    pub fn get(&self, name: &str) -> Option<&Param> {
        self.values
            .iter()
            .chain(self.derived.iter())
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// An integer variable or derived value; absent or of another type is an error (a name the
    /// code asks for that the contract does not have).
    pub fn int(&self, name: &str) -> Result<i64> {
        match self.get(name) {
            Some(Param::Int(i)) => Ok(*i),
            other => Err(self.missing(name, "an integer", other)),
        }
    }

    /// A text variable or derived value; absent or of another type is an error.
    pub fn text(&self, name: &str) -> Result<&str> {
        match self.get(name) {
            Some(Param::Str(s)) => Ok(s),
            other => Err(self.missing(name, "a text", other)),
        }
    }

    /// A boolean variable or derived value; absent or of another type is an error.
    pub fn flag(&self, name: &str) -> Result<bool> {
        match self.get(name) {
            Some(Param::Bool(b)) => Ok(*b),
            other => Err(self.missing(name, "a boolean", other)),
        }
    }

    /// A non-negative integer that fits in 32 bits (a workgroup width, a tile, a block).
    pub fn count(&self, name: &str) -> Result<u32> {
        let i = self.int(name)?;
        u32::try_from(i).map_err(|_| self.missing(name, "a count", Some(&Param::Int(i))))
    }

    /// The element type, `dtype`.
    pub fn dtype(&self) -> Result<DType> {
        self.one_of(
            "dtype",
            &[
                ("f32", DType::F32),
                ("f16", DType::F16),
                ("u32", DType::U32),
            ],
        )
    }

    /// A text value read as one of `options` (a route, a reduction, an epilogue).
    pub fn one_of<T: Copy>(&self, name: &str, options: &[(&str, T)]) -> Result<T> {
        let text = self.text(name)?;
        options
            .iter()
            .find(|(o, _)| *o == text)
            .map(|(_, t)| *t)
            .ok_or_else(|| {
                let names: Vec<&str> = options.iter().map(|(o, _)| *o).collect();
                self.missing(
                    name,
                    &format!("one of {names:?}"),
                    Some(&Param::Str(text.to_string())),
                )
            })
    }

    fn missing(&self, name: &str, what: &str, found: Option<&Param>) -> Error {
        Error::Template {
            family: self.family.clone(),
            variant: self.name.clone(),
            line: None,
            detail: match found {
                None => format!("no value `{name}` (the code asks for {what})"),
                Some(p) => format!("`{name}` is {p}, the code asks for {what}"),
            },
        }
    }

    /// The experimental set the variant belongs to on `tier`, if any: such a variant is not a
    /// candidate of the rule nor of the campaign's default set there (it runs when named).
    pub fn experimental_on(&self, tier: Tier) -> Option<&str> {
        self.experimental
            .iter()
            .find(|(t, _)| *t == tier)
            .map(|(_, set)| set.as_str())
    }

    /// The values a call fixes that a tuned entry cannot leave open: the dtype, and whether the
    /// variant is causal. The fleet merge keeps one pick per scope of a bucket.
    pub fn scope(&self) -> Result<Scope> {
        Ok(Scope {
            dtype: self.dtype()?,
            causal: match self.get("causal") {
                None => false,
                Some(_) => self.flag("causal")?,
            },
        })
    }

    /// Whether the variant has exactly these values (a call's dtype, causal mask, head dim…).
    pub fn takes(&self, fixed: &[(&str, Param)]) -> bool {
        fixed
            .iter()
            .all(|(name, value)| self.get(name) == Some(value))
    }

    pub(super) fn context(&self, profile: &DeviceProfile) -> Value {
        let mut map: BTreeMap<String, Value> = self
            .values
            .iter()
            .chain(self.derived.iter())
            .map(|(k, v)| (k.clone(), param_value(v)))
            .collect();
        map.insert(
            "enable_subgroups".into(),
            Value::from(profile.wgsl_needs_subgroup_enable()),
        );
        Value::from(map)
    }
}

/// A variable's value as the template sees it.
pub(super) fn param_value(p: &Param) -> Value {
    match p {
        Param::Bool(b) => Value::from(*b),
        Param::Int(i) => Value::from(*i),
        Param::Str(s) => Value::from(s.as_str()),
    }
}

/// A variant's scope (see [`Variant::scope`]): written `f32`, or `f16 causal`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Scope {
    pub dtype: DType,
    pub causal: bool,
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.dtype.wgsl())?;
        if self.causal {
            f.write_str(" causal")?;
        }
        Ok(())
    }
}
