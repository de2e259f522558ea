//! Whether a device profile can run a variant: the features, subgroup sizes, cooperative-matrix
//! configurations and limits it needs.

use super::variant::Variant;
use crate::device::DeviceProfile;

/// Everything of `profile` that [`unsupported_reason`] reads, as one string: two profiles with
/// the same key are offered the same variants (the crowd merge remembers its offered sets by
/// it). `None` only if the profile would not serialise, which plain data cannot do.
pub fn support_key(profile: &DeviceProfile) -> Option<String> {
    serde_json::to_string(&(
        &profile.features,
        profile.subgroup_min_size,
        profile.subgroup_max_size,
        profile.is_software(),
        &profile.cooperative_matrix,
        &profile.limits,
    ))
    .ok()
}

/// Why `profile` cannot run `variant`, or `None` when it can.
pub fn unsupported_reason(variant: &Variant, profile: &DeviceProfile) -> Option<String> {
    for feature in &variant.requires {
        if profile.features.has(feature) != Some(true) {
            return Some(format!("needs the {feature} feature"));
        }
    }
    let needs = &variant.needs;
    // Kernels that shuffle across N lanes need subgroups of at least N.
    let lanes = needs.min_subgroup_size;
    if lanes > 0 && profile.subgroup_min_size < lanes {
        return Some(format!(
            "needs subgroups of at least {lanes} invocations (the adapter's can be {})",
            profile.subgroup_min_size
        ));
    }
    // Bodies unrolled for hardware GPUs: a software adapter's compiler takes minutes on them.
    if needs.hardware_only && profile.is_software() {
        return Some("is unrolled for hardware GPUs, not offered on a software adapter".into());
    }
    // Kernels that lay their work out by subgroup need that exact size.
    let size = needs.subgroup_size;
    if size > 0 && (profile.subgroup_min_size != size || profile.subgroup_max_size != size) {
        return Some(format!(
            "needs subgroups of exactly {size} invocations (the adapter's are {}..{})",
            profile.subgroup_min_size, profile.subgroup_max_size
        ));
    }
    // Cooperative-matrix kernels need their shape and types among the adapter's configurations.
    let coop = needs.coop_config.as_str();
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
