//! The template registry: loads each family's template and contract, enumerates its variants
//! (`enumerate.rs`, each a `Variant`: `variant.rs`), filters them by a device profile
//! (`support.rs`), renders WGSL (`render.rs`) and validates it with naga (`check.rs`). This file
//! holds the `Registry` and names what the others offer; none of them imports it back.

mod check;
mod enumerate;
mod render;
mod support;
mod variant;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use minijinja::{Environment, UndefinedBehavior, Value};

pub use check::{check_bindings, check_shape, validate_wgsl, workgroup_bytes};
pub use render::Piece;
pub use support::{support_key, unsupported_reason};
pub use variant::{Scope, Variant};

use crate::contract::Contract;
use crate::device::DeviceProfile;
use crate::error::{Error, Result};
use check::{measure_storage, parse_storage};
use enumerate::enumerate;
use render::{mark_values, pieces, render_in, template_error};
use variant::param_value;

// `FAMILIES`, `PARTIALS` and `STORAGE`, discovered under `families/` by the build script.
include!(concat!(env!("OUT_DIR"), "/families.rs"));

/// The loaded families with a minijinja environment in strict-undefined mode.
#[derive(Debug)]
pub struct Registry {
    env: Environment<'static>,
    /// The same templates with template values marked in the output (the kernel-source view).
    marked: Environment<'static>,
    families: Vec<(Contract, Vec<Variant>)>,
}

impl Registry {
    /// The families built into Kiln.
    pub fn builtin() -> Result<Self> {
        Self::load(FAMILIES, PARTIALS, STORAGE)
    }

    /// [`builtin`](Self::builtin), loaded once per process and shared by every [`Gpu`](crate::Gpu)
    /// made in it (loading enumerates and names every family's variants: a test binary or a
    /// page that opens several devices pays it once).
    pub fn shared() -> Result<Arc<Self>> {
        static BUILTIN: OnceLock<Arc<Registry>> = OnceLock::new();
        if let Some(registry) = BUILTIN.get() {
            return Ok(registry.clone());
        }
        let loaded = Arc::new(Self::builtin()?);
        Ok(BUILTIN.get_or_init(|| loaded).clone())
    }

    /// A registry of the given families `(name, template, contract)` and partials
    /// `(file name, source)` that templates may import; each variant's workgroup memory is
    /// measured from its rendered WGSL.
    pub fn from_sources(
        families: &[(&'static str, &'static str, &'static str)],
        partials: &[(&'static str, &'static str)],
    ) -> Result<Self> {
        Self::load(families, partials, &[])
    }

    /// [`from_sources`](Self::from_sources), with tables of workgroup memory per variant
    /// `(family, text)` (`families/<family>/workgroup_storage.txt`) for the variants they list.
    fn load(
        families: &[(&'static str, &'static str, &'static str)],
        partials: &[(&'static str, &'static str)],
        storage: &[(&'static str, &'static str)],
    ) -> Result<Self> {
        let mut env = Environment::new();
        // An unknown or missing variable is an error, never silently empty text.
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()
            .map_err(|e| template_error("*", "*", &e))?;
        env.set_syntax(syntax);
        for (name, source) in partials {
            env.add_template(name, source)
                .map_err(|e| template_error(name, "*", &e))?;
        }
        let mut loaded = Vec::new();
        for (family, template, contract_text) in families {
            env.add_template(family, template)
                .map_err(|e| template_error(family, "*", &e))?;
            let contract = Contract::parse(&format!("{family}.toml"), contract_text)?;
            let table = match storage.iter().find(|(f, _)| f == family) {
                Some((_, text)) => parse_storage(family, text)?,
                None => BTreeMap::new(),
            };
            let variants = enumerate(&env, &contract, &table)?;
            loaded.push((contract, variants));
        }
        let mut marked = env.clone();
        marked.set_formatter(mark_values);
        Ok(Registry {
            env,
            marked,
            families: loaded,
        })
    }

    /// The family contracts, in registry order.
    pub fn contracts(&self) -> impl Iterator<Item = &Contract> {
        self.families.iter().map(|(c, _)| c)
    }

    /// A family's contract.
    pub fn contract(&self, family: &str) -> Result<&Contract> {
        self.families
            .iter()
            .find(|(c, _)| c.family == family)
            .map(|(c, _)| c)
            .ok_or_else(|| Error::UnknownKernel(family.to_string()))
    }

    /// Every variant of a family, whatever the device.
    pub fn variants(&self, family: &str) -> Result<&[Variant]> {
        self.families
            .iter()
            .find(|(c, _)| c.family == family)
            .map(|(_, v)| v.as_slice())
            .ok_or_else(|| Error::UnknownKernel(family.to_string()))
    }

    /// One variant by name.
    pub fn variant(&self, family: &str, name: &str) -> Result<&Variant> {
        self.variants(family)?
            .iter()
            .find(|v| v.name == name)
            .ok_or_else(|| Error::UnknownKernel(format!("{family}/{name}")))
    }

    /// The variant of `family` with the values `set` gives and `like`'s for every other one of
    /// its variables (each must be one of the two: none is left to chance): a sibling of `like`
    /// in its own family (another epilogue), or its design in a family that folds its launch
    /// into another's (a norm's threads and reduction).
    pub fn like(
        &self,
        family: &str,
        like: &Variant,
        set: &[(&str, crate::contract::Param)],
    ) -> Result<&Variant> {
        self.variants(family)?
            .iter()
            .find(|v| {
                v.values
                    .iter()
                    .all(|(name, value)| match set.iter().find(|(n, _)| n == name) {
                        Some((_, wanted)) => value == wanted,
                        None => like.get(name) == Some(value),
                    })
            })
            .ok_or_else(|| {
                Error::UnknownKernel(format!("{family}: none like {}/{}", like.family, like.name))
            })
    }

    /// The variants of a family that `profile` can run.
    pub fn supported<'a>(
        &'a self,
        family: &str,
        profile: &'a DeviceProfile,
    ) -> Result<impl Iterator<Item = &'a Variant> + 'a> {
        Ok(self
            .variants(family)?
            .iter()
            .filter(move |v| unsupported_reason(v, profile).is_none()))
    }

    /// The variants of a family that `profile` can run and its tier offers outright: the rule's
    /// candidates, the campaign's default set, the headline count. The rest of
    /// [`supported`](Self::supported) are [`experimental`](Self::experimental).
    pub fn core<'a>(
        &'a self,
        family: &str,
        profile: &'a DeviceProfile,
    ) -> Result<impl Iterator<Item = &'a Variant> + 'a> {
        self.on_tier(family, profile, false)
    }

    /// The variants of a family that `profile` can run but its tier keeps out of the headline
    /// (the contract's experimental sets): run when named, by the every-variant proof, and by
    /// the campaign when asked.
    pub fn experimental<'a>(
        &'a self,
        family: &str,
        profile: &'a DeviceProfile,
    ) -> Result<impl Iterator<Item = &'a Variant> + 'a> {
        self.on_tier(family, profile, true)
    }

    /// The supported variants that `profile`'s tier keeps experimental, or those it does not.
    fn on_tier<'a>(
        &'a self,
        family: &str,
        profile: &'a DeviceProfile,
        experimental: bool,
    ) -> Result<impl Iterator<Item = &'a Variant> + 'a> {
        let tier = profile.tier();
        Ok(self
            .supported(family, profile)?
            .filter(move |v| v.experimental_on(tier).is_some() == experimental))
    }

    /// Renders a variant's WGSL for `profile`.
    pub fn render(&self, variant: &Variant, profile: &DeviceProfile) -> Result<String> {
        render_in(&self.env, variant, profile)
    }

    /// Renders a variant's WGSL for `profile` as [`render`](Self::render) does, split into pieces
    /// that say which text came out of a template expression (`{{ … }}`: a variable, or a value
    /// computed from them) — what a reader needs to see to tell the template from the device.
    pub fn render_marked(&self, variant: &Variant, profile: &DeviceProfile) -> Result<Vec<Piece>> {
        Ok(pieces(&render_in(&self.marked, variant, profile)?))
    }

    /// The bytes of workgroup memory `variant`'s WGSL declares, as naga lays it out (what its
    /// family's `workgroup_storage.txt` records).
    pub fn measure_storage(&self, variant: &Variant) -> Result<u32> {
        let ctx: BTreeMap<String, Value> = variant
            .values
            .iter()
            .chain(variant.derived.iter())
            .map(|(k, v)| (k.clone(), param_value(v)))
            .collect();
        measure_storage(&self.env, &variant.family, &variant.name, &ctx)
    }

    /// Renders and validates with naga: the checks wgpu would make, without a GPU.
    pub fn render_validated(&self, variant: &Variant, profile: &DeviceProfile) -> Result<String> {
        if let Some(why) = unsupported_reason(variant, profile) {
            return Err(Error::Unsupported {
                op: "render",
                adapter: profile.name.clone(),
                detail: format!("{}/{}: {why}", variant.family, variant.name),
            });
        }
        let source = self.render(variant, profile)?;
        let module = validate_wgsl(&variant.family, &variant.name, &source, profile)?;
        check_shape(variant, &module)?;
        check_bindings(self.contract(&variant.family)?, variant, &module)?;
        Ok(source)
    }
}
