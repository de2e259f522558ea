//! Enumerating a family's variants from its contract: every assignment of its variables, with
//! the derived values evaluated, the rules applied and the workgroup memory looked up or measured.

use std::collections::BTreeMap;

use minijinja::{Environment, Value};

use super::check::measure_storage;
use super::variant::{Variant, param_value};
use crate::contract::{Contract, Needs, Param};
use crate::device::Tier;
use crate::error::{Error, Result};

pub(super) fn enumerate<'a>(
    env: &'a Environment<'static>,
    contract: &'a Contract,
    storage: &BTreeMap<&str, u32>,
) -> Result<Vec<Variant>> {
    // Each expression compiled once for the family, not once per assignment: compiling was
    // most of the registry's load time (~4.5 s of a debug test's start, every Gpu::new).
    let family_error = |what: String, e: minijinja::Error| Error::Template {
        family: contract.family.clone(),
        variant: "*".into(),
        line: None,
        detail: format!("{what}: {e}"),
    };
    let compile = |what: String, expr: &'a str| {
        env.compile_expression(expr)
            .map_err(|e| family_error(what, e))
    };
    let derived_exprs = contract
        .derived
        .iter()
        .map(|(name, expr)| Ok((name, compile(format!("derived `{name}`"), expr)?)))
        .collect::<Result<Vec<_>>>()?;
    let rule_exprs = contract
        .rules
        .iter()
        .map(|rule| Ok((rule, compile(format!("rule `{rule}`"), rule)?)))
        .collect::<Result<Vec<_>>>()?;
    let experimental_exprs = contract
        .experimental
        .iter()
        .map(|set| {
            let what = format!("experimental set `{}`", set.name);
            Ok((&set.name, compile(what, &set.when)?))
        })
        .collect::<Result<Vec<_>>>()?;
    let name_template = env
        .template_from_str(&contract.name)
        .map_err(|e| family_error("name pattern".into(), e))?;
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
        for (name, expr) in &derived_exprs {
            let value = expr
                .eval(Value::from(ctx.clone()))
                .map_err(|e| fail(format!("derived `{name}`: {e}")))?;
            ctx.insert((*name).clone(), value.clone());
            derived.push(((*name).clone(), value));
        }
        let scope = Value::from(ctx.clone());
        let mut keep = true;
        for (rule, expr) in &rule_exprs {
            let value = expr
                .eval(scope.clone())
                .map_err(|e| fail(format!("rule `{rule}`: {e}")))?;
            keep &= value.is_true();
        }
        if !keep {
            continue;
        }
        let name = name_template
            .render(scope)
            .map_err(|e| fail(format!("name pattern: {e}")))?;
        let workgroup_size = workgroup_dims(ctx.get("workgroup_size"))
            .ok_or_else(|| fail("`workgroup_size` must be a list of 1 to 3 integers".into()))?;
        // The generated table, or (a variant it does not list yet) naga's layout measured now.
        let workgroup_storage = match storage.get(name.as_str()) {
            Some(&bytes) => bytes,
            None => measure_storage(env, &contract.family, &name, &ctx)?,
        };
        let mut experimental = Vec::new();
        for tier in Tier::ALL {
            ctx.insert("tier".into(), Value::from(tier.name()));
            let scope = Value::from(ctx.clone());
            for (set, expr) in &experimental_exprs {
                let value = expr
                    .eval(scope.clone())
                    .map_err(|e| fail(format!("experimental set `{set}`: {e}")))?;
                if value.is_true() {
                    experimental.push((tier, (*set).clone()));
                    break;
                }
            }
        }
        ctx.remove("tier");
        let derived: Vec<(String, Param)> = derived
            .into_iter()
            .filter_map(|(k, v)| value_param(&v).map(|p| (k, p)))
            .collect();
        let needs = Needs::read(&derived).map_err(fail)?;
        variants.push(Variant {
            family: contract.family.clone(),
            name,
            needs,
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

fn workgroup_dims(value: Option<&Value>) -> Option<[u32; 3]> {
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
