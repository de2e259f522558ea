//! Bad input gives a clear error naming the op, the shapes or the limit — never a panic (the
//! `kiln` command's own bad-input tests are in cli/tests/cli.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{gpu, random};
use kiln::{DType, Error, Gpu, GpuOptions, Tensor, ops};

fn t(shape: &[usize]) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_slice(gpu(), shape, &random(1, n), DType::F32).unwrap()
}

fn message(r: kiln::Result<impl std::fmt::Debug>) -> (Error, String) {
    let e = r.expect_err("expected an error");
    let m = e.to_string();
    (e, m)
}

#[test]
fn matmul_shape_mismatches() {
    let (e, m) = message(ops::matmul(&t(&[4, 5]), &t(&[6, 3])));
    assert!(matches!(e, Error::Shape { op: "matmul", .. }));
    assert!(m.contains("inner dimensions differ (5 vs 6)"), "{m}");
    let (_, m) = message(ops::matmul(&t(&[2, 4, 5]), &t(&[3, 5, 3])));
    assert!(m.contains("batch sizes 2 and 3 differ"), "{m}");
    let (_, m) = message(ops::matmul(&t(&[2, 2, 4, 5]), &t(&[5, 3])));
    assert!(m.contains("expected rank 2 or 3"), "{m}");
    let (_, m) = message(ops::matmul_into(
        &t(&[4, 5]),
        &t(&[5, 3]),
        &t(&[4, 4]),
        None,
    ));
    assert!(
        m.contains("output has shape [4, 4], the op makes [4, 3]"),
        "{m}"
    );
}

#[test]
fn other_ops_shape_and_argument_errors() {
    let (_, m) = message(ops::add(&t(&[2, 3]), &t(&[4])));
    assert!(
        m.starts_with("add: bad shape") && m.contains("do not broadcast: 3 vs 4"),
        "{m}"
    );
    let (_, m) = message(ops::add(&t(&[1, 1, 1, 1, 2]), &t(&[2])));
    assert!(m.contains("rank above 4"), "{m}");
    let (_, m) = message(ops::layernorm(&t(&[3, 4]), &t(&[5]), &t(&[4]), 1e-5));
    assert!(m.contains("gamma has shape [5], expected [4]"), "{m}");
    let (e, m) = message(ops::layernorm(&t(&[3, 4]), &t(&[4]), &t(&[4]), f32::NAN));
    assert!(
        matches!(e, Error::InvalidArgument { .. }) && m.contains("eps"),
        "{m}"
    );
    let (_, m) = message(ops::softmax(&t(&[3, 4]), false, f32::INFINITY));
    assert!(m.contains("scale must be finite"), "{m}");
}

#[test]
fn sinusoid_and_rgba8_errors() {
    let (_, m) = message(ops::sinusoid(&t(&[3]), &t(&[4]), 8, 0.0, 1.0, DType::F32));
    assert!(m.contains("freq [3] and phase [4] differ"), "{m}");
    let (_, m) = message(ops::sinusoid(
        &t(&[3]),
        &t(&[3]),
        8,
        f32::NAN,
        1.0,
        DType::F32,
    ));
    assert!(m.contains("must be finite"), "{m}");
    let (_, m) = message(ops::rgba8(&t(&[3, 2, 2]), 1.0, 0.0));
    assert!(m.contains("expected [4, H, W]"), "{m}");
    let (_, m) = message(pollster::block_on(t(&[2]).read_u32()));
    assert!(m.contains("not u32"), "{m}");
}

#[test]
fn outputs_may_not_alias_inputs_and_absurd_shapes_are_refused() {
    let x = t(&[3, 4]);
    let (e, m) = message(ops::softmax_into(&x, &x, false, 1.0, None));
    assert!(
        matches!(e, Error::InvalidArgument { .. }) && m.contains("shares its buffer"),
        "{m}"
    );
    let (_, m) = message(ops::add_into(&x, &t(&[3, 4]), &x, None));
    assert!(m.contains("shares its buffer"), "{m}");
    // 2^32 · 2^32 elements: refused by the limits, never wrapped to a small size.
    let (e, _) = message(Tensor::full(gpu(), &[1 << 32, 1 << 32], 0.0, DType::F32));
    assert!(matches!(e, Error::OverLimit { .. }), "{e}");
}

#[test]
fn empty_and_mismatched_tensors() {
    let (_, m) = message(Tensor::from_slice(gpu(), &[3, 0], &[], DType::F32));
    assert!(m.contains("shape [3, 0] is empty"), "{m}");
    let (_, m) = message(Tensor::from_slice(gpu(), &[2, 2], &[1.0; 3], DType::F32));
    assert!(m.contains("holds 4 elements, data has 3"), "{m}");
    let (_, m) = message(t(&[2, 3]).reshape(&[4, 2]));
    assert!(m.contains("[2, 3] cannot become [4, 2]"), "{m}");
}

#[test]
fn buffer_over_the_device_limit_is_refused_before_allocation() {
    let limit = gpu().profile().limits.max_storage_buffer_binding_size;
    let n = (limit / 4 + 1) as usize;
    let (e, m) = message(Tensor::uninit(gpu(), &[n], DType::F32));
    assert!(
        matches!(
            e,
            Error::OverLimit {
                limit: "max_storage_buffer_binding_size",
                ..
            }
        ),
        "{m}"
    );
    assert!(m.contains(&format!("allows {limit}")), "{m}");
}

#[test]
fn f16_without_shader_f16_is_unsupported() {
    let options = GpuOptions {
        without: wgpu::Features::SHADER_F16,
        ..Default::default()
    };
    let plain = pollster::block_on(Gpu::new(&options)).unwrap();
    assert!(!plain.profile().features.shader_f16);
    let (e, m) = message(Tensor::from_slice(&plain, &[2], &[1.0, 2.0], DType::F16));
    assert!(matches!(e, Error::Unsupported { .. }), "{m}");
    assert!(
        m.contains("SHADER_F16") && m.contains(&plain.profile().name),
        "{m}"
    );
    // Naming an f16 variant on that device is refused too.
    let a = Tensor::from_slice(&plain, &[2, 2], &[1.0; 4], DType::F32).unwrap();
    let c = Tensor::from_slice(&plain, &[2, 2], &[0.0; 4], DType::F32).unwrap();
    let (_, m) = message(ops::matmul_into(&a, &a, &c, Some("f16_wg8_r1_k8")));
    assert!(m.contains("needs the shader_f16 feature"), "{m}");
}

#[test]
fn named_variants_are_checked() {
    let (a, b, c) = (t(&[4, 4]), t(&[4, 4]), t(&[4, 4]));
    let (e, _) = message(ops::matmul_into(&a, &b, &c, Some("no_such_variant")));
    assert!(matches!(e, Error::UnknownKernel(_)));
    let (_, m) = message(ops::matmul_into(&a, &b, &c, Some("f16_wg8_r1_k8")));
    assert!(
        m.contains("does not take this call (dtype=f32, epilogue=none)"),
        "{m}"
    );
    let (_, m) = message(ops::add_into(
        &t(&[3]),
        &t(&[3]),
        &t(&[3]),
        Some("f32_wg64_vec4"),
    ));
    assert!(
        m.contains("variant f32_wg64_vec4 does not take this call"),
        "{m}"
    );
}

#[test]
fn mixed_dtypes_are_refused() {
    let h = Tensor::from_slice(gpu(), &[2, 2], &[1.0; 4], DType::F16).unwrap();
    let (_, m) = message(ops::add(&t(&[2, 2]), &h));
    assert!(m.contains("different dtypes: f32 and f16"), "{m}");
}

#[test]
fn wgsl_that_does_not_compile_is_an_error_with_its_line() {
    let (e, _) = message(gpu().compile(
        "probe",
        "broken",
        "@compute @workgroup_size(1)\nfn main() {\n  let x: u32 = 1.5;\n}\n",
    ));
    match e {
        Error::ShaderValidation { line, .. } => assert_eq!(line, Some(3)),
        other => panic!("expected ShaderValidation, got {other}"),
    }
}
