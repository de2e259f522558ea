//! Every variant of every family rendered for every stored profile and validated with naga —
//! no GPU needed — plus the registry's error reporting.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashSet;

use kiln::device::stored_profiles;
use kiln::registry::unsupported_reason;
use kiln::select::TunedTable;
use kiln::{DeviceProfile, Error, Registry};

#[test]
fn every_variant_renders_and_validates_on_every_stored_profile() {
    let registry = Registry::builtin().unwrap();
    let mut grand_total = 0;
    for (name, profile) in stored_profiles().unwrap() {
        let mut valid = 0;
        let mut per_family = Vec::new();
        for contract in registry.contracts() {
            let mut n = 0;
            for v in registry.variants(&contract.family).unwrap() {
                match unsupported_reason(v, &profile) {
                    None => {
                        let wgsl = registry
                            .render_validated(v, &profile)
                            .unwrap_or_else(|e| panic!("{name}: {e}"));
                        assert!(wgsl.contains("fn main"), "{}/{}", v.family, v.name);
                        n += 1;
                    }
                    Some(_) => {
                        // Not offered on this profile: rendering it must be refused, not tried.
                        let err = registry.render_validated(v, &profile).unwrap_err();
                        assert!(matches!(err, Error::Unsupported { .. }), "{err}");
                    }
                }
            }
            per_family.push(format!("{} {n}", contract.family));
            valid += n;
        }
        println!(
            "profile {name}: {valid} variants rendered and validated by naga ({})",
            per_family.join(", ")
        );
        assert!(valid > 0, "{name} offers no variant");
        grand_total += valid;
    }
    println!("{grand_total} (profile, variant) pairs validated in all");
}

/// The number of variants each stored profile is offered of each family, pinned in the
/// family's `snapshot.txt` (`[offered]`): a change to a contract's matrix or its `when` rules
/// shows up as a diff to review (every offered variant is rendered and validated by the test
/// above). Per stored profile (and so per tier): the variants its tier offers outright (the
/// headline: the rule's candidates and the campaign's default set) and the experimental designs
/// it can also run.
#[test]
fn offered_counts_per_profile_are_as_pinned() {
    let registry = Registry::builtin().unwrap();
    let profiles = stored_profiles().unwrap();
    for contract in registry.contracts() {
        let all = registry.variants(&contract.family).unwrap();
        let mut now = String::new();
        for (name, profile) in &profiles {
            let fits: Vec<_> = all
                .iter()
                .filter(|v| unsupported_reason(v, profile).is_none())
                .collect();
            let experimental = fits
                .iter()
                .filter(|v| v.experimental_on(profile.tier()).is_some())
                .count();
            now.push_str(&format!(
                "{name} ({}): {} + {experimental} experimental of {}\n",
                profile.tier(),
                fits.len() - experimental,
                all.len()
            ));
        }
        common::check_family_snapshot(&contract.family, "offered", &now);
    }
}

#[test]
fn experimental_sets_keep_out_what_they_name_on_their_tiers_only() {
    // The H200's tier (native_coop) keeps the staged cooperative matmul experimental; lavapipe's
    // (native) has no such variant, and offers every rolled vec4 matmul outright.
    let registry = Registry::builtin().unwrap();
    let profiles = stored_profiles().unwrap();
    let profile = |name: &str| &profiles.iter().find(|(n, _)| *n == name).unwrap().1;
    let h200 = profile("nvidia-h200");
    let lavapipe = profile("lavapipe");
    assert_eq!(h200.tier(), kiln::device::Tier::NativeCoop);
    assert_eq!(lavapipe.tier(), kiln::device::Tier::Native);
    let staged = registry.variant("matmul", "f16_coop_f2_k32").unwrap();
    assert_eq!(staged.experimental_on(h200.tier()), Some("staged_coop"));
    assert!(
        registry
            .core("matmul", h200)
            .unwrap()
            .all(|v| v.name != staged.name)
    );
    assert!(
        registry
            .experimental("matmul", h200)
            .unwrap()
            .any(|v| v.name == staged.name)
    );
    let rolled = registry.variant("matmul", "f32_wg16_r4_k16_vec4").unwrap();
    assert_eq!(rolled.experimental_on(lavapipe.tier()), None);
    assert!(
        registry
            .core("matmul", lavapipe)
            .unwrap()
            .any(|v| v.name == rolled.name)
    );
    assert_eq!(rolled.experimental_on(h200.tier()), Some("rolled_vec4"));
    // Named, an experimental design still runs; the rule never picks one.
    let tuned = kiln::TunedTable::default();
    let selector = kiln::select::Selector::new(&registry, h200, &tuned);
    let call = kiln::ops::matmul::Call::new(kiln::DType::F16, 1, 64, 64, 64);
    let named = kiln::ops::matmul::choose(&selector, &call, Some(&staged.name)).unwrap();
    assert_eq!(named.variant.name, staged.name);
    let picked = kiln::ops::matmul::choose(&selector, &call, None).unwrap();
    assert!(picked.variant.experimental_on(h200.tier()).is_none());
}

#[test]
fn every_variant_reads_into_its_familys_design() {
    // Each family's launcher reads a variant through its typed `Design`: a value it reads that
    // the contract lacks, or of another type, fails here for every variant, not at a launch.
    let registry = Registry::builtin().unwrap();
    for contract in registry.contracts() {
        for v in registry.variants(&contract.family).unwrap() {
            kiln::families::parse_design(v)
                .unwrap_or_else(|e| panic!("{}/{}: {e}", v.family, v.name));
        }
    }
    // A gelu contract without its `wg` (and a text where a count belongs) fails, naming it.
    let gelu = CONTRACT
        .replace("\"probe\"", "\"gelu\"")
        .replace("name = \"width\"", "name = \"dtype\"")
        .replace("values = [64]", "values = [\"f32\"]")
        .replace("v{{ width }}", "{{ dtype }}")
        .replace("[width]", "[64]");
    let template = "@compute @workgroup_size(64)\nfn main() {}\n";
    let gelu: &'static str = Box::leak(gelu.into_boxed_str());
    let registry = Registry::from_sources(&[("gelu", template, gelu)], &[]).unwrap();
    let v = registry.variant("gelu", "f32").unwrap();
    let err = kiln::families::parse_design(v).unwrap_err().to_string();
    assert!(err.contains("`wg`"), "{err}");
}

#[test]
fn variant_names_are_unique_and_values_allowed() {
    let registry = Registry::builtin().unwrap();
    for contract in registry.contracts() {
        let variants = registry.variants(&contract.family).unwrap();
        let names: HashSet<_> = variants.iter().map(|v| &v.name).collect();
        assert_eq!(
            names.len(),
            variants.len(),
            "{}: duplicate names",
            contract.family
        );
        for v in variants {
            for (var, value) in &v.values {
                let decl = contract.variables.iter().find(|d| &d.name == var).unwrap();
                assert!(decl.values.contains(value), "{}: {var}={value}", v.name);
            }
        }
    }
}

#[test]
fn f16_and_subgroup_variants_need_their_features() {
    let registry = Registry::builtin().unwrap();
    let profiles = stored_profiles().unwrap();
    let webgpu = &profiles
        .iter()
        .find(|(n, _)| *n == "webgpu-defaults")
        .unwrap()
        .1;
    for contract in registry.contracts() {
        for v in registry.supported(&contract.family, webgpu).unwrap() {
            assert_ne!(
                v.text("dtype").unwrap(),
                "f16",
                "{} offered without SHADER_F16",
                v.name
            );
            assert_ne!(
                v.get("reduce"),
                Some(&kiln::contract::Param::Str("subgroup".into())),
                "{} offered without SUBGROUP",
                v.name
            );
            assert!(v.workgroup_storage <= webgpu.limits.max_compute_workgroup_storage_size);
        }
    }
}

#[test]
fn every_head_dim_has_flash_kernels_that_fit_every_stored_profile() {
    // The flash families offer, on each profile, an f32 variant of every head dimension that
    // fits its workgroup storage (16 KiB on WebGPU defaults), so no supported head dimension
    // is refused for want of a small enough tile; the selector picks among them.
    let registry = Registry::builtin().unwrap();
    for (name, profile) in stored_profiles().unwrap() {
        for family in ["flash_fwd", "flash_bwd_dq", "flash_bwd_dkdv"] {
            for d in kiln::ops::attention::HEAD_DIMS {
                for causal in [false, true] {
                    let fits: Vec<_> = registry
                        .supported(family, &profile)
                        .unwrap()
                        .filter(|v| {
                            v.int("head_dim").unwrap() == d as i64
                                && v.text("dtype").unwrap() == "f32"
                                && v.flag("causal").unwrap() == causal
                        })
                        .collect();
                    assert!(
                        !fits.is_empty(),
                        "{name}: no {family} f32 d{d} causal={causal}"
                    );
                    for v in fits {
                        assert!(
                            v.workgroup_storage
                                <= profile.limits.max_compute_workgroup_storage_size
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn workgroup_storage_tables_are_nagas_layout_of_every_variant() {
    // The device limit is checked against each family's table (families/<family>/
    // workgroup_storage.txt) before anything is rendered, so the table must be what the shader
    // allocates: every variant rendered and laid out by naga, the table regenerated from that
    // with KILN_UPDATE_SNAPSHOTS=1 and compared on every run.
    let registry = Registry::builtin().unwrap();
    for contract in registry.contracts() {
        let mut now = format!(
            "# {}: bytes of workgroup memory each variant's WGSL declares, as naga lays it out.\n\
             # Generated by tests/templates.rs (KILN_UPDATE_SNAPSHOTS=1 rewrites it); the registry\n\
             # checks the device's limit against it.\n",
            contract.family
        );
        for v in registry.variants(&contract.family).unwrap() {
            let bytes = registry
                .measure_storage(v)
                .unwrap_or_else(|e| panic!("{}/{}: {e}", v.family, v.name));
            now.push_str(&format!("{} {bytes}\n", v.name));
        }
        common::check_file(
            &format!("families/{}/workgroup_storage.txt", contract.family),
            &now,
        );
    }
    // The largest blocks at head dim 64 fill the H200's 48 KiB exactly.
    for (family, variant) in [
        ("flash_fwd", "f32_d64_q64_k64_subgroup_outer4x4_u"),
        ("flash_bwd_dq", "f32_d64_q32_k64_outer4x4_u"),
        ("flash_bwd_dq", "f32_d64_q64_k32_outer4x4_u"),
        ("flash_bwd_dkdv", "f32_d64_k64_q16_outer4x4_u"),
        ("flash_bwd_dkdv", "f32_d64_k64_q64_stream_u"),
        ("flash_bwd_dq", "f32_d64_q64_k64_stream_u"),
        ("flash_bwd_fused", "f32_d64_k64_q64_fused_u"),
    ] {
        let v = registry.variant(family, variant).unwrap();
        assert_eq!(v.workgroup_storage, 48 * 1024, "{variant}");
    }
}

#[test]
fn stored_profiles_round_trip_through_json() {
    for (name, profile) in stored_profiles().unwrap() {
        let again = DeviceProfile::from_json(name, &profile.to_json()).unwrap();
        assert_eq!(again, profile, "{name}");
    }
    let err = DeviceProfile::from_json("broken.json", "{\"name\": 3}").unwrap_err();
    assert!(err.to_string().contains("broken.json"), "{err}");
}

const CONTRACT: &str = r#"
family = "probe"
summary = "test family"
name = "v{{ width }}"
shapes = "none"
derived = [["workgroup_size", "[width]"]]

[[bindings]]
name = "out"
access = "read_write"
shape = "[n]"

[[variables]]
name = "width"
values = [64]
doc = "threads"
"#;

#[test]
fn rendering_is_strict_about_undefined_variables() {
    // `{{ missing }}` on line 3 must be an error naming family, variant and line (the probe has
    // no storage table, so the registry renders it as it loads).
    let template =
        "// probe\n@compute @workgroup_size({{ width }})\nfn main() { let x = {{ missing }}; }\n";
    match Registry::from_sources(&[("probe", template, CONTRACT)], &[]).unwrap_err() {
        Error::Template {
            family,
            variant,
            line,
            detail,
        } => {
            assert_eq!(
                (family.as_str(), variant.as_str(), line),
                ("probe", "v64", Some(3))
            );
            assert!(detail.contains("undefined"), "{detail}");
        }
        other => panic!("expected a template error, got {other}"),
    }
}

#[test]
fn invalid_wgsl_is_reported_with_its_line() {
    // Line 4 adds a float to a bool: naga must reject it and say where.
    let template = "@group(0) @binding(0) var<storage, read_write> out: array<f32>;\n@compute @workgroup_size({{ width }})\nfn main() {\n    out[0] = 1.0 + true;\n}\n";
    let registry = Registry::from_sources(&[("probe", template, CONTRACT)], &[]).unwrap();
    let profile = &stored_profiles().unwrap()[0].1;
    let v = registry.variant("probe", "v64").unwrap();
    match registry.render_validated(v, profile).unwrap_err() {
        Error::ShaderValidation { family, line, .. } => {
            assert_eq!(family, "probe");
            assert_eq!(line, Some(4));
        }
        other => panic!("expected a shader validation error, got {other}"),
    }
}

#[test]
fn contracts_without_limit_values_are_refused() {
    let broken = CONTRACT.replace(
        r#"derived = [["workgroup_size", "[width]"]]"#,
        "derived = []",
    );
    let err = Registry::from_sources(&[("probe", "", Box::leak(broken.into_boxed_str()))], &[])
        .unwrap_err();
    assert!(err.to_string().contains("workgroup_size"), "{err}");
}

#[test]
fn needs_of_another_type_are_refused_and_read_typed_otherwise() {
    // `hardware_only` is one of the names the registry reads (`contract::Needs`): a number
    // there would otherwise be read as "no need" and offer the variant where it cannot run.
    let template = "@compute @workgroup_size({{ width }})\nfn main() {}\n";
    let with = |derived: &str| {
        CONTRACT.replace(
            r#"derived = [["workgroup_size", "[width]"]]"#,
            &format!(r#"derived = [["workgroup_size", "[width]"], {derived}]"#),
        )
    };
    let broken = with(r#"["hardware_only", "1"]"#);
    let err = Registry::from_sources(
        &[("probe", template, Box::leak(broken.into_boxed_str()))],
        &[],
    )
    .unwrap_err();
    assert!(err.to_string().contains("hardware_only"), "{err}");
    let typed = with(r#"["hardware_only", "width > 32"], ["multiple", "16"]"#);
    let registry = Registry::from_sources(
        &[("probe", template, Box::leak(typed.into_boxed_str()))],
        &[],
    )
    .unwrap();
    let needs = &registry.variant("probe", "v64").unwrap().needs;
    assert!(needs.hardware_only);
    assert_eq!(needs.multiple, 16);
    assert_eq!(needs.subgroup_size, 0);
}

#[test]
fn a_variant_the_storage_table_does_not_list_is_measured_by_naga() {
    // The probe has no table: its variant's workgroup memory is laid out by naga at load.
    let template = "var<workgroup> tile: array<vec4<f32>, {{ width }}>;\n@compute @workgroup_size({{ width }})\nfn main() { tile[0] = vec4<f32>(0.0); }\n";
    let registry = Registry::from_sources(&[("probe", template, CONTRACT)], &[]).unwrap();
    assert_eq!(
        registry.variant("probe", "v64").unwrap().workgroup_storage,
        64 * 16
    );
}

#[test]
fn contracts_with_unknown_features_are_refused() {
    let broken = CONTRACT.replace(
        r#"doc = "threads""#,
        "doc = \"threads\"\nrequires = { 64 = [\"shader_f61\"] }",
    );
    let err = Registry::from_sources(&[("probe", "", Box::leak(broken.into_boxed_str()))], &[])
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown feature `shader_f61`"),
        "{err}"
    );
}

#[test]
fn tuned_table_loads_and_rejects_other_versions() {
    // Every checked-in entry names a variant its family has: a typo would never be chosen.
    let registry = Registry::builtin().unwrap();
    for e in TunedTable::builtin().unwrap().entries {
        registry
            .variant(&e.family, &e.variant)
            .unwrap_or_else(|err| panic!("tuned entry {e:?}: {err}"));
    }
    let err = TunedTable::from_json("t.json", r#"{"version": 99, "entries": []}"#).unwrap_err();
    assert!(err.to_string().contains("version 99"), "{err}");
    let err = TunedTable::from_json("t.json", r#"{"version": 1}"#).unwrap_err();
    assert!(err.to_string().contains("entries"), "{err}");
}

/// The kernel-source view's marked rendering: the same text as the plain rendering, with the
/// output of template expressions (and only that) marked.
#[test]
fn marked_rendering_is_the_rendering_with_template_values_marked() {
    let registry = Registry::builtin().unwrap();
    let profiles = stored_profiles().unwrap();
    let (_, profile) = profiles.iter().find(|(n, _)| *n == "lavapipe").unwrap();
    let mut checked = 0;
    for contract in registry.contracts() {
        for v in registry.supported(&contract.family, profile).unwrap() {
            let plain = registry.render(v, profile).unwrap();
            let pieces = registry.render_marked(v, profile).unwrap();
            let joined: String = pieces.iter().map(|p| p.text.as_str()).collect();
            assert_eq!(joined, plain, "{}/{}", v.family, v.name);
            assert!(
                pieces.iter().any(|p| p.marked),
                "{}/{}: no template value marked",
                v.family,
                v.name
            );
            // Marks never swallow the shader's structure: a marked piece is a value.
            for p in pieces.iter().filter(|p| p.marked) {
                assert!(
                    !p.text.contains("fn ") && !p.text.contains('\u{E000}'),
                    "{}/{}: marked {:?}",
                    v.family,
                    v.name,
                    p.text
                );
            }
            checked += 1;
        }
    }
    // A workgroup size that comes from the contract is among the marked values.
    let v = registry
        .supported("flash_fwd", profile)
        .unwrap()
        .next()
        .unwrap();
    let size = v.workgroup_size[0].to_string();
    let pieces = registry.render_marked(v, profile).unwrap();
    assert!(
        pieces.iter().any(|p| p.marked && p.text == size),
        "flash_fwd/{}: workgroup size {size} not marked",
        v.name
    );
    println!("{checked} variants rendered with their template values marked");
}
