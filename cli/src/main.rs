//! `kiln`: the kernel crate's command line — the adapter profile, the kernel variants, their
//! WGSL, and GPU-vs-CPU benchmarks.

/// `println!` for the command's output. A reader that stops reading early (`kiln info | head
/// -1`, `grep -q`) closes the pipe: the command then ends quietly and successfully, as Unix tools
/// do, instead of panicking with "failed printing to stdout: Broken pipe".
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_out(format_args!($($arg)*), true)
    };
}

/// `print!` for the command's output, with [`out!`]'s handling of a closed pipe.
macro_rules! out_part {
    ($($arg:tt)*) => {
        $crate::write_out(format_args!($($arg)*), false)
    };
}

mod attention;
mod decode;
mod matmul;
mod mlp;
mod replay;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use serde_json::json;

use kiln::registry::unsupported_reason;
use kiln::select::Selector;
use kiln::{DeviceProfile, Error, Gpu, GpuOptions, Registry, Result, TunedTable};

#[derive(Parser)]
#[command(
    name = "kiln",
    version,
    about = "Kiln's WGSL kernels: profile, variants, benchmarks"
)]
struct Cli {
    /// Do not request this device feature even if the adapter has it (repeatable; cooperative
    /// matrices are `coop`, f32 atomics in storage buffers `atomic`).
    #[arg(long, global = true, value_parser = feature_names())]
    without: Vec<String>,
    /// Build the kernels with wgpu's runtime checks (index clamping, loop bounding, integer
    /// division guards, workgroup memory zeroed): off by default, on to compare or debug.
    #[arg(long, global = true)]
    runtime_checks: bool,
    #[command(subcommand)]
    command: Command,
}

/// `--without`'s choices: the kernel crate's table, shared with the pages' `?without=`.
fn feature_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(kiln::gpu::OPTIONAL_FEATURES.map(|(name, _)| name))
}

#[derive(Subcommand)]
enum Command {
    /// Print the adapter's profile: what the kernels are rendered for.
    Info {
        #[arg(long)]
        json: bool,
    },
    /// List every family and variant valid for the adapter (or a stored profile), validated.
    Kernels(KernelsArgs),
    /// Time an op on the GPU and on the plain CPU path, and compare their results.
    Bench {
        #[command(subcommand)]
        op: BenchOp,
    },
}

#[derive(Args)]
struct KernelsArgs {
    /// A stored profile name (lavapipe, chromium-swiftshader, webgpu-defaults, nvidia-h200, dawn-nvidia-h200) or
    /// a profile JSON file, instead of the adapter in hand.
    #[arg(long)]
    profile: Option<String>,
    /// Only this family.
    #[arg(long)]
    family: Option<String>,
    /// Print the rendered WGSL of one variant: `--render FAMILY VARIANT`.
    #[arg(long, num_args = 2, value_names = ["FAMILY", "VARIANT"])]
    render: Option<Vec<String>>,
    /// Also build every variant's pipeline on the device (catches driver rejections).
    #[arg(long)]
    compile: bool,
    /// Show which variant the selector picks for sample shapes, and why.
    #[arg(long)]
    explain: bool,
    #[arg(long)]
    json: bool,
    /// With --json: include each valid variant's rendered WGSL.
    #[arg(long, requires = "json")]
    wgsl: bool,
}

#[derive(Subcommand)]
enum BenchOp {
    /// C = A · B with A [batch, m, k] and B [batch, k, n].
    Matmul(matmul::MatmulArgs),
    /// Attention on Q, K, V [b, h, n, d]: the flash kernels, the naive GPU path and the CPU path.
    Attention(attention::AttentionArgs),
    /// Decoding attention: Q [b, hq, nq, d] against a key/value cache [b, hkv, n, d].
    Decode(decode::DecodeArgs),
    /// A feed-forward block, gelu(x · W1 + b1) · W2 + b2: the two products, and `mlp`'s slices.
    Mlp(mlp::MlpArgs),
    /// What a replayed plan costs the host: wgpu's encoding and queue.submit, alone and behind
    /// a busy GPU.
    Replay(replay::ReplayArgs),
}

/// How a benchmark runs and reports, shared by every `kiln bench` op.
#[derive(Args, Debug)]
pub struct RunArgs {
    #[arg(long, default_value_t = 3)]
    pub warmup: usize,
    #[arg(long, default_value_t = 10)]
    pub repeats: usize,
    /// Seconds the CPU path may spend on its measured runs (it stops early, after one run).
    #[arg(long, default_value_t = 10.0)]
    pub cpu_budget: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub json: bool,
}

/// Writes to standard output (a line when `newline`); a closed pipe ends the command with
/// success, any other failure to write with a message and failure.
fn write_out(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(args).and_then(|()| {
        if newline {
            stdout.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            eprintln!("kiln: cannot write the output: {e}");
            std::process::exit(1)
        }
    }
}

fn main() -> ExitCode {
    env_logger::init();
    let cli = Cli::parse();
    match pollster::block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kiln: error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<()> {
    let options = GpuOptions {
        runtime_checks: cli.runtime_checks,
        ..GpuOptions::default()
    }
    .without_named(&cli.without.join(","))?;
    match cli.command {
        Command::Info { json } => {
            let gpu = Gpu::new(&options).await?;
            print_profile(gpu.profile(), json);
            Ok(())
        }
        Command::Kernels(args) => kernels(&options, args).await,
        Command::Bench {
            op: BenchOp::Matmul(args),
        } => matmul::bench_matmul(&options, args).await,
        Command::Bench {
            op: BenchOp::Attention(args),
        } => attention::bench_attention(&options, args).await,
        Command::Bench {
            op: BenchOp::Decode(args),
        } => decode::bench_decode(&options, args).await,
        Command::Bench {
            op: BenchOp::Mlp(args),
        } => mlp::bench_mlp(&options, args).await,
        Command::Bench {
            op: BenchOp::Replay(args),
        } => replay::bench_replay(&options, args).await,
    }
}

fn print_profile(p: &DeviceProfile, json: bool) {
    if json {
        out!("{}", p.to_json());
        return;
    }
    out!("adapter      {}", p.name);
    out!("backend      {} ({})", p.backend, p.device_type);
    out!("vendor/dev   {:#06x} / {:#06x}", p.vendor, p.device);
    out!("driver       {} {}", p.driver, p.driver_info);
    let f = &p.features;
    out!(
        "features     shader_f16={} subgroup={} (sizes {}..{}) timestamp_query={} cooperative_matrix={} float32_atomic={}",
        f.shader_f16,
        f.subgroup,
        p.subgroup_min_size,
        p.subgroup_max_size,
        f.timestamp_query,
        f.cooperative_matrix,
        f.float32_atomic
    );
    for c in &p.cooperative_matrix {
        out!("coop matrix  {}x{}x{} {}→{}", c.m, c.n, c.k, c.ab, c.cr);
    }
    let l = &p.limits;
    out!(
        "limits       workgroup storage {} B, {} invocations, size {}x{}x{}, {} groups/dim",
        l.max_compute_workgroup_storage_size,
        l.max_compute_invocations_per_workgroup,
        l.max_compute_workgroup_size_x,
        l.max_compute_workgroup_size_y,
        l.max_compute_workgroup_size_z,
        l.max_compute_workgroups_per_dimension
    );
    out!(
        "             storage binding {} B, buffer {} B, {} storage buffers/stage",
        l.max_storage_buffer_binding_size,
        l.max_buffer_size,
        l.max_storage_buffers_per_shader_stage
    );
}

async fn kernels(options: &GpuOptions, args: KernelsArgs) -> Result<()> {
    let registry = Registry::builtin()?;
    let tuned = TunedTable::builtin()?;
    let (gpu, profile) = match &args.profile {
        Some(name) => (None, load_profile(name)?),
        None => {
            let gpu = Gpu::new(options).await?;
            let profile = gpu.profile().clone();
            (Some(gpu), profile)
        }
    };
    if let Some(rv) = &args.render {
        let variant = registry.variant(&rv[0], &rv[1])?;
        out_part!("{}", registry.render_validated(variant, &profile)?);
        return Ok(());
    }
    if args.compile && gpu.is_none() {
        return Err(Error::InvalidArgument {
            op: "kernels",
            detail: "--compile needs the adapter in hand, not --profile".into(),
        });
    }
    if let Some(family) = &args.family {
        registry.contract(family)?;
    }

    let mut listed = Vec::new();
    let (mut total, mut valid, mut experimental) = (0usize, 0usize, 0usize);
    let tier = profile.tier();
    for contract in registry.contracts() {
        if args.family.as_ref().is_some_and(|f| f != &contract.family) {
            continue;
        }
        if !args.json {
            out!("{} — {}", contract.family, contract.summary);
        }
        for v in registry.variants(&contract.family)? {
            total += 1;
            let status = match unsupported_reason(v, &profile) {
                Some(why) => Err(format!("not offered: {why}")),
                None => match (&gpu, registry.render_validated(v, &profile)) {
                    (_, Err(e)) => Err(e.to_string()),
                    (Some(g), Ok(source)) if args.compile => {
                        g.pipeline(v).map(|_| source).map_err(|e| e.to_string())
                    }
                    (_, Ok(source)) => Ok(source),
                },
            };
            let set = v.experimental_on(tier);
            if status.is_ok() {
                valid += 1;
                experimental += usize::from(set.is_some());
            }
            if args.json {
                let values: serde_json::Map<String, serde_json::Value> = v
                    .values
                    .iter()
                    .map(|(k, p)| (k.clone(), json!(p.to_string())))
                    .collect();
                listed.push(json!({
                    "family": v.family, "variant": v.name, "values": values,
                    "workgroup_size": v.workgroup_size,
                    "workgroup_storage": v.workgroup_storage,
                    "valid": status.is_ok(), "error": status.as_ref().err(),
                    "experimental": set,
                    "wgsl": status.as_ref().ok().filter(|_| args.wgsl),
                }));
            } else {
                match &status {
                    Ok(_) => out!(
                        "  {:<28} workgroup {:?}, {} B shared{}",
                        v.name,
                        v.workgroup_size,
                        v.workgroup_storage,
                        set.map(|s| format!(" (experimental on {tier}: {s})"))
                            .unwrap_or_default()
                    ),
                    Err(why) if why.starts_with("not offered") => {}
                    Err(why) => out!("  {:<28} INVALID: {why}", v.name),
                }
            }
        }
    }
    let check = if args.compile {
        "validated by naga and compiled"
    } else {
        "validated by naga"
    };
    if args.json {
        let explained = if args.explain {
            match &gpu {
                Some(g) => explain(&g.selector()),
                None => explain(&Selector::new(&registry, &profile, &tuned)),
            }
        } else {
            json!(null)
        };
        out!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "profile": profile, "tier": tier, "valid": valid,
                "experimental": experimental, "total": total,
                "variants": listed, "explain": explained,
            }))
            .unwrap_or_default()
        );
    } else {
        out!(
            "{valid} variants {check} for {} (tier {tier}: {} offered, {experimental} experimental; {} not offered on it, {} in all)",
            profile.name,
            valid - experimental,
            total - valid,
            total
        );
        if args.explain {
            let picks = match &gpu {
                Some(g) => kiln::explain::sample_picks(&g.selector()),
                None => kiln::explain::sample_picks(&Selector::new(&registry, &profile, &tuned)),
            };
            for p in picks {
                out!("choice  {}", p.line());
                if !p.reason.is_empty() {
                    out!("        {}", p.reason);
                }
            }
        }
    }
    if valid == 0 {
        return Err(Error::Unsupported {
            op: "kernels",
            adapter: profile.name.clone(),
            detail: "no variant is valid".into(),
        });
    }
    Ok(())
}

fn load_profile(name: &str) -> Result<DeviceProfile> {
    if let Some((_, p)) = kiln::device::stored_profiles()?
        .into_iter()
        .find(|(n, _)| *n == name)
    {
        return Ok(p);
    }
    let text = std::fs::read_to_string(name).map_err(|e| Error::Parse {
        what: name.to_string(),
        detail: format!("not a stored profile name, and not a readable file: {e}"),
    })?;
    DeviceProfile::from_json(name, &text)
}

/// The selector's choices for the sample calls (`kiln::explain`), for the device in hand or a
/// stored profile.
fn explain(sel: &Selector<'_>) -> serde_json::Value {
    json!(
        kiln::explain::sample_picks(sel)
            .into_iter()
            .map(|p| json!({
                "family": p.family, "call": p.call,
                "variant": p.outcome.as_ref().ok(), "error": p.outcome.as_ref().err(),
                "by": p.by, "reason": p.reason,
            }))
            .collect::<Vec<_>>()
    )
}
