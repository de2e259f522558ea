//! Validation with naga: a variant's WGSL parsed and validated for a profile's capabilities,
//! its entry point, workgroup size and memory, and its bindings checked against the contract.

use std::collections::BTreeMap;

use minijinja::{Environment, Value};

use super::render::template_error;
use super::variant::Variant;
use crate::contract::Contract;
use crate::device::DeviceProfile;
use crate::error::{Error, Result};

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
        // unpack2x16float and its kin: wgpu allows them wherever f16 is (lavapipe needs f16 for
        // them; other Vulkan drivers do not).
        caps |= Capabilities::SHADER_FLOAT16 | Capabilities::SHADER_FLOAT16_IN_FLOAT32;
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
pub(super) fn parse_storage<'a>(family: &str, text: &'a str) -> Result<BTreeMap<&'a str, u32>> {
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
pub(super) fn measure_storage(
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
