//! The template registry: loads each family's template and contract, enumerates its variants,
//! filters them by a device profile, renders WGSL and validates it with naga.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use minijinja::{Environment, UndefinedBehavior, Value};
use serde::Serialize;

use crate::contract::{Contract, Param};
use crate::device::{DeviceProfile, Tier};
use crate::error::{Error, Result};
use crate::tensor::DType;

// `FAMILIES`, `PARTIALS` and `STORAGE`, discovered under `families/` by the build script.
include!(concat!(env!("OUT_DIR"), "/families.rs"));

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

    /// Whether the variant has exactly these values (a call's dtype, causal mask, head dim…).
    pub fn takes(&self, fixed: &[(&str, Param)]) -> bool {
        fixed
            .iter()
            .all(|(name, value)| self.get(name) == Some(value))
    }

    fn context(&self, profile: &DeviceProfile) -> Value {
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

/// A run of rendered WGSL: template text, or the value of a template expression.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Piece {
    pub text: String,
    /// Whether the text came from a template expression.
    pub marked: bool,
}

// Private-use characters bracket expression output while rendering; no template contains them.
const MARK_OPEN: char = '\u{E000}';
const MARK_CLOSE: char = '\u{E001}';

/// Renders `variant`'s family template in `env` with the variant's values.
fn render_in(env: &Environment<'_>, variant: &Variant, profile: &DeviceProfile) -> Result<String> {
    let template = env
        .get_template(&variant.family)
        .map_err(|e| template_error(&variant.family, &variant.name, &e))?;
    template
        .render(variant.context(profile))
        .map_err(|e| template_error(&variant.family, &variant.name, &e))
}

/// The marked environment's formatter: a template value between the marks.
fn mark_values(
    out: &mut minijinja::Output<'_>,
    state: &mut minijinja::State<'_, '_>,
    value: &Value,
) -> std::result::Result<(), minijinja::Error> {
    // A macro's output is rendered template text (lines, with its own marks inside), not a value.
    if value.is_safe()
        || value
            .as_str()
            .is_some_and(|s| s.contains(MARK_OPEN) || s.contains('\n'))
    {
        return minijinja::escape_formatter(out, state, value);
    }
    out.write_char(MARK_OPEN)?;
    minijinja::escape_formatter(out, state, value)?;
    out.write_char(MARK_CLOSE)?;
    Ok(())
}

/// Splits text bracketed by the marks into pieces (adjacent pieces of one kind merged).
fn pieces(text: &str) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    let mut push = |text: &str, marked: bool| {
        if text.is_empty() {
            return;
        }
        match out.last_mut() {
            Some(last) if last.marked == marked => last.text.push_str(text),
            _ => out.push(Piece {
                text: text.to_string(),
                marked,
            }),
        }
    };
    let mut rest = text;
    while let Some(open) = rest.find(MARK_OPEN) {
        push(&rest[..open], false);
        let after = &rest[open + MARK_OPEN.len_utf8()..];
        let close = after.find(MARK_CLOSE).unwrap_or(after.len());
        push(&after[..close], true);
        rest = after.get(close + MARK_CLOSE.len_utf8()..).unwrap_or("");
    }
    push(rest, false);
    out
}

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
        let tier = profile.tier();
        Ok(self
            .supported(family, profile)?
            .filter(move |v| v.experimental_on(tier).is_none()))
    }

    /// The variants of a family that `profile` can run but its tier keeps out of the headline
    /// (the contract's experimental sets): run when named, by the every-variant proof, and by
    /// the campaign when asked.
    pub fn experimental<'a>(
        &'a self,
        family: &str,
        profile: &'a DeviceProfile,
    ) -> Result<impl Iterator<Item = &'a Variant> + 'a> {
        let tier = profile.tier();
        Ok(self
            .supported(family, profile)?
            .filter(move |v| v.experimental_on(tier).is_some()))
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

/// Checks what the contract says of a variant against naga's module of its WGSL: one compute
/// entry point `main` with the variant's workgroup size, and workgroup memory (as naga lays it
/// out) equal to the family's table (the device limit is checked against the table before
/// anything is rendered).
pub fn check_shape(variant: &Variant, module: &naga::Module) -> Result<()> {
    let fail = |detail: String| Error::ShaderValidation {
        family: variant.family.clone(),
        variant: variant.name.clone(),
        line: None,
        detail,
    };
    let entry = match module.entry_points.as_slice() {
        [e] if e.name == "main" && e.stage == naga::ShaderStage::Compute => e,
        other => {
            let names: Vec<&str> = other.iter().map(|e| e.name.as_str()).collect();
            return Err(fail(format!(
                "expected one compute entry point `main`, found {names:?}"
            )));
        }
    };
    if entry.workgroup_size != variant.workgroup_size {
        return Err(fail(format!(
            "the shader's workgroup is {:?}, the contract says {:?}",
            entry.workgroup_size, variant.workgroup_size
        )));
    }
    let used = workgroup_bytes(module).map_err(fail)?;
    if used != u64::from(variant.workgroup_storage) {
        return Err(fail(format!(
            "the shader declares {used} B of workgroup memory, families/{}/workgroup_storage.txt says {} B (KILN_UPDATE_SNAPSHOTS=1 cargo test -p kiln --test templates regenerates it)",
            variant.family, variant.workgroup_storage
        )));
    }
    Ok(())
}

/// Checks the shader's group-0 bindings against the contract's list: bindings 0..n in order
/// (a variant may leave out trailing ones, as matmul's bias without an epilogue), each a storage
/// buffer of the contract's name and access (`read`, `read_write`) or the uniform block.
pub fn check_bindings(contract: &Contract, variant: &Variant, module: &naga::Module) -> Result<()> {
    let fail = |detail: String| Error::ShaderValidation {
        family: variant.family.clone(),
        variant: variant.name.clone(),
        line: None,
        detail,
    };
    let mut bound: Vec<(u32, &naga::GlobalVariable)> = module
        .global_variables
        .iter()
        .filter_map(|(_, g)| g.binding.as_ref().map(|b| (b.binding, g)))
        .collect();
    bound.sort_by_key(|(index, _)| *index);
    for (i, (index, global)) in bound.iter().enumerate() {
        let Some(want) = contract.bindings.get(i).filter(|_| *index as usize == i) else {
            return Err(fail(format!(
                "binding {index} is not in the contract's list of {} (in order from 0)",
                contract.bindings.len()
            )));
        };
        let name = global.name.as_deref().unwrap_or("");
        let access = match global.space {
            naga::AddressSpace::Storage { access }
                if access.contains(naga::StorageAccess::STORE) =>
            {
                "read_write"
            }
            naga::AddressSpace::Storage { .. } => "read",
            naga::AddressSpace::Uniform => "uniform",
            _ => "neither a buffer nor a uniform",
        };
        let same_name = access == "uniform" || name == want.name;
        if access != want.access || !same_name {
            return Err(fail(format!(
                "binding {index} is `{name}` ({access}), the contract says `{}` ({})",
                want.name, want.access
            )));
        }
    }
    Ok(())
}

/// Bytes of workgroup memory a module declares, as naga lays its variables out.
pub fn workgroup_bytes(module: &naga::Module) -> std::result::Result<u64, String> {
    let mut layouter = naga::proc::Layouter::default();
    layouter
        .update(module.to_ctx())
        .map_err(|e| format!("naga cannot lay out the types: {e}"))?;
    let mut total = 0u64;
    for (_, var) in module.global_variables.iter() {
        if var.space == naga::AddressSpace::WorkGroup {
            let layout = layouter[var.ty];
            total = total.next_multiple_of(u64::from(layout.alignment.round_up(1)));
            total += u64::from(layout.size);
        }
    }
    Ok(total)
}

/// Why `profile` cannot run `variant`, or `None` when it can.
pub fn unsupported_reason(variant: &Variant, profile: &DeviceProfile) -> Option<String> {
    for feature in &variant.requires {
        if profile.features.has(feature) != Some(true) {
            return Some(format!("needs the {feature} feature"));
        }
    }
    // A contract may ask for a smallest subgroup size (kernels that shuffle across N lanes).
    // These names are optional: a contract without them has no such need.
    let optional_int = |name: &str| match variant.get(name) {
        Some(Param::Int(i)) => *i,
        _ => 0,
    };
    let lanes = optional_int("min_subgroup_size");
    if lanes > 0 && i64::from(profile.subgroup_min_size) < lanes {
        {
            return Some(format!(
                "needs subgroups of at least {lanes} invocations (the adapter's can be {})",
                profile.subgroup_min_size
            ));
        }
    }
    // Bodies unrolled for hardware GPUs: a software adapter's compiler takes minutes on them.
    let hardware_only = variant.get("hardware_only") == Some(&Param::Bool(true));
    if hardware_only && profile.is_software() {
        return Some("is unrolled for hardware GPUs, not offered on a software adapter".into());
    }
    // Kernels that lay their work out by subgroup need that exact size.
    let size = optional_int("subgroup_size");
    if size > 0
        && (i64::from(profile.subgroup_min_size) != size
            || i64::from(profile.subgroup_max_size) != size)
    {
        return Some(format!(
            "needs subgroups of exactly {size} invocations (the adapter's are {}..{})",
            profile.subgroup_min_size, profile.subgroup_max_size
        ));
    }
    // Cooperative-matrix kernels need their shape and types among the adapter's configurations.
    let coop = match variant.get("coop_config") {
        Some(Param::Str(s)) => s.as_str(),
        _ => "",
    };
    if !coop.is_empty() && !profile.cooperative_matrix.iter().any(|c| c.name() == coop) {
        return Some(format!(
            "needs the cooperative matrix configuration {coop}, which the adapter does not offer"
        ));
    }
    let l = &profile.limits;
    let [x, y, z] = variant.workgroup_size;
    let checks = [
        (
            "max_compute_invocations_per_workgroup",
            u64::from(x) * u64::from(y) * u64::from(z),
            u64::from(l.max_compute_invocations_per_workgroup),
        ),
        (
            "max_compute_workgroup_size_x",
            u64::from(x),
            u64::from(l.max_compute_workgroup_size_x),
        ),
        (
            "max_compute_workgroup_size_y",
            u64::from(y),
            u64::from(l.max_compute_workgroup_size_y),
        ),
        (
            "max_compute_workgroup_size_z",
            u64::from(z),
            u64::from(l.max_compute_workgroup_size_z),
        ),
        (
            "max_compute_workgroup_storage_size",
            u64::from(variant.workgroup_storage),
            u64::from(l.max_compute_workgroup_storage_size),
        ),
    ];
    checks
        .iter()
        .find(|(_, needed, allowed)| needed > allowed)
        .map(|(limit, needed, allowed)| format!("{limit}: needs {needed}, allows {allowed}"))
}

/// Parses and validates WGSL with naga for the capabilities of `profile`.
pub fn validate_wgsl(
    family: &str,
    variant: &str,
    source: &str,
    profile: &DeviceProfile,
) -> Result<naga::Module> {
    use naga::valid::{Capabilities, ShaderStages, SubgroupOperationSet, ValidationFlags};
    // Browsers require `enable subgroups;`, naga rejects it (it allows subgroup built-ins
    // through capabilities instead). Blank it out, keeping line numbers.
    let source = source.replace("enable subgroups;", "                  ");
    let shader_error = |line: Option<u32>, detail: String| Error::ShaderValidation {
        family: family.to_string(),
        variant: variant.to_string(),
        line: line.map(|l| l as usize),
        detail,
    };
    let module = naga::front::wgsl::parse_str(&source).map_err(|e| {
        shader_error(
            e.location(&source).map(|l| l.line_number),
            e.emit_to_string(&source),
        )
    })?;
    let mut caps = Capabilities::empty();
    if profile.features.shader_f16 {
        caps |= Capabilities::SHADER_FLOAT16;
    }
    if profile.features.subgroup {
        caps |= Capabilities::SUBGROUP | Capabilities::SUBGROUP_BARRIER;
    }
    if profile.features.cooperative_matrix {
        caps |= Capabilities::COOPERATIVE_MATRIX;
    }
    if profile.features.float32_atomic {
        caps |= Capabilities::SHADER_FLOAT32_ATOMIC;
    }
    let mut validator = naga::valid::Validator::new(ValidationFlags::all(), caps);
    if profile.features.subgroup {
        validator
            .subgroup_stages(ShaderStages::COMPUTE)
            .subgroup_operations(SubgroupOperationSet::all());
    }
    validator.validate(&module).map_err(|e| {
        shader_error(
            e.location(&source).map(|l| l.line_number),
            e.emit_to_string(&source),
        )
    })?;
    Ok(module)
}

/// The bytes of workgroup memory per variant name, from a family's `workgroup_storage.txt`
/// (`variant bytes` per line; `#` starts a comment).
fn parse_storage<'a>(family: &str, text: &'a str) -> Result<BTreeMap<&'a str, u32>> {
    let mut table = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let parsed = line
            .split_once(' ')
            .and_then(|(name, bytes)| Some((name, bytes.trim().parse::<u32>().ok()?)));
        let Some((name, bytes)) = parsed else {
            return Err(Error::Parse {
                what: format!("families/{family}/workgroup_storage.txt"),
                detail: format!("line {}: expected `variant bytes`, got {line:?}", i + 1),
            });
        };
        table.insert(name, bytes);
    }
    Ok(table)
}

/// Bytes of workgroup memory a variant's WGSL declares, as naga lays it out: rendered with
/// `ctx`, its values (the layout does not depend on the device).
fn measure_storage(
    env: &Environment<'static>,
    family: &str,
    variant: &str,
    ctx: &BTreeMap<String, Value>,
) -> Result<u32> {
    let mut ctx = ctx.clone();
    ctx.insert("enable_subgroups".into(), Value::from(false));
    let source = env
        .get_template(family)
        .and_then(|t| t.render(Value::from(ctx)))
        .map_err(|e| template_error(family, variant, &e))?;
    let fail = |detail: String| Error::ShaderValidation {
        family: family.to_string(),
        variant: variant.to_string(),
        line: None,
        detail,
    };
    let module = naga::front::wgsl::parse_str(&source).map_err(|e| {
        let line = e.location(&source).map(|l| l.line_number as usize);
        Error::ShaderValidation {
            family: family.to_string(),
            variant: variant.to_string(),
            line,
            detail: e.emit_to_string(&source),
        }
    })?;
    let bytes = workgroup_bytes(&module).map_err(fail)?;
    u32::try_from(bytes).map_err(|_| fail(format!("{bytes} bytes of workgroup memory")))
}

fn enumerate(
    env: &Environment<'static>,
    contract: &Contract,
    storage: &BTreeMap<&str, u32>,
) -> Result<Vec<Variant>> {
    let mut variants = Vec::new();
    for values in contract.assignments() {
        let mut ctx: BTreeMap<String, Value> = values
            .iter()
            .map(|(k, v)| (k.clone(), param_value(v)))
            .collect();
        let label = values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let fail = |detail: String| Error::Template {
            family: contract.family.clone(),
            variant: label.clone(),
            line: None,
            detail,
        };
        let mut derived = Vec::new();
        for (name, expr) in &contract.derived {
            let value =
                eval(env, expr, &ctx).map_err(|e| fail(format!("derived `{name}`: {e}")))?;
            ctx.insert(name.clone(), value.clone());
            derived.push((name.clone(), value));
        }
        let mut keep = true;
        for rule in &contract.rules {
            let value = eval(env, rule, &ctx).map_err(|e| fail(format!("rule `{rule}`: {e}")))?;
            keep &= value.is_true();
        }
        if !keep {
            continue;
        }
        let name = env
            .render_str(&contract.name, Value::from(ctx.clone()))
            .map_err(|e| fail(format!("name pattern: {e}")))?;
        let workgroup_size = workgroup_size(ctx.get("workgroup_size"))
            .ok_or_else(|| fail("`workgroup_size` must be a list of 1 to 3 integers".into()))?;
        // The generated table, or (a variant it does not list yet) naga's layout measured now.
        let workgroup_storage = match storage.get(name.as_str()) {
            Some(&bytes) => bytes,
            None => measure_storage(env, &contract.family, &name, &ctx)?,
        };
        let mut experimental = Vec::new();
        for tier in Tier::ALL {
            ctx.insert("tier".into(), Value::from(tier.name()));
            for set in &contract.experimental {
                let value = eval(env, &set.when, &ctx)
                    .map_err(|e| fail(format!("experimental set `{}`: {e}", set.name)))?;
                if value.is_true() {
                    experimental.push((tier, set.name.clone()));
                    break;
                }
            }
        }
        ctx.remove("tier");
        let derived = derived
            .into_iter()
            .filter_map(|(k, v)| value_param(&v).map(|p| (k, p)))
            .collect();
        variants.push(Variant {
            family: contract.family.clone(),
            name,
            requires: contract.requirements(&values),
            values,
            derived,
            workgroup_size,
            workgroup_storage,
            experimental,
        });
    }
    Ok(variants)
}

fn eval(
    env: &Environment<'static>,
    expr: &str,
    ctx: &BTreeMap<String, Value>,
) -> Result<Value, minijinja::Error> {
    env.compile_expression(expr)?.eval(Value::from(ctx.clone()))
}

fn workgroup_size(value: Option<&Value>) -> Option<[u32; 3]> {
    let items: Vec<u32> = value?
        .try_iter()
        .ok()?
        .map(|v| v.as_i64().and_then(|i| u32::try_from(i).ok()))
        .collect::<Option<_>>()?;
    match items.as_slice() {
        [x] => Some([*x, 1, 1]),
        [x, y] => Some([*x, *y, 1]),
        [x, y, z] => Some([*x, *y, *z]),
        _ => None,
    }
}

fn param_value(p: &Param) -> Value {
    match p {
        Param::Bool(b) => Value::from(*b),
        Param::Int(i) => Value::from(*i),
        Param::Str(s) => Value::from(s.as_str()),
    }
}

/// Scalars become parameters; lists (such as the workgroup size) stay template-only.
fn value_param(v: &Value) -> Option<Param> {
    use minijinja::value::ValueKind;
    match v.kind() {
        ValueKind::Bool => Some(Param::Bool(v.is_true())),
        ValueKind::Number => v.as_i64().map(Param::Int),
        ValueKind::String => v.as_str().map(|s| Param::Str(s.to_string())),
        _ => None,
    }
}

fn template_error(family: &str, variant: &str, e: &minijinja::Error) -> Error {
    Error::Template {
        family: family.to_string(),
        variant: variant.to_string(),
        line: e.line(),
        detail: e.to_string(),
    }
}
