//! The native command line.

use clap::{Parser, Subcommand};
use flash::backend::{Backend, CpuBackend, GpuBackend};
use flash::checkpoint;
use flash::data::Corpus;
use flash::generate::Way;
use flash::preset::Preset;
use flash::run::{self, Setup};
use flash::sweep;
use flash::{Error, Result, generate, model};
use kiln_app::kiln::{Gpu, GpuOptions, bench};

#[derive(Parser)]
#[command(
    about = "Kiln's flash demo: FlashAttention-2 and a transformer trained on kiln's kernels"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Headless: train the preset on the GPU and on the CPU path, print the comparison.
    #[arg(long)]
    bench: bool,
    /// small, medium, large or mega (`flash presets` lists them).
    #[arg(long, default_value = "small")]
    preset: String,
    /// Training steps per path.
    #[arg(long, default_value_t = 50)]
    steps: usize,
    /// Print the comparison as JSON.
    #[arg(long)]
    json: bool,
    /// Threads of the CPU path (default: every core; 1 is the plain single-threaded path).
    #[arg(long)]
    threads: Option<usize>,
    /// Train on this UTF-8 text file instead of the generated corpus.
    #[arg(long)]
    data: Option<String>,
    /// Start from this checkpoint (it must match the preset and the data's vocabulary).
    #[arg(long)]
    resume: Option<String>,
    /// Save the GPU path's trained state here.
    #[arg(long)]
    save: Option<String>,
    /// Fail when the loss drift between the paths exceeds this fraction: by default about 10×
    /// the largest measured (5.8e-7, the Mega step on the H100; 7.7e-8 to 4.2e-7 elsewhere).
    #[arg(long, default_value_t = 5e-6)]
    max_drift: f64,
    /// Leave out the kernel-level sweep (flash, naive GPU, CPU over sequence lengths).
    #[arg(long)]
    no_sweep: bool,
    /// Also train the GPU path recording every step as it comes instead of replaying the
    /// captured first step (the two must give the same losses).
    #[arg(long)]
    each_call: bool,
    /// Close the window after this many displayed frames (window tests).
    #[arg(long)]
    exit_after: Option<u64>,
    /// Presenter mode: the walkthrough of the algorithm, a stage at a time (→/space next,
    /// ← back, Home, End, F full screen, 1-4 jump).
    #[arg(long)]
    talk: bool,
    /// Start the walkthrough at this stage (1-based; implies --talk).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    stage: Option<u32>,
}

#[derive(Subcommand)]
enum Command {
    /// Print every preset's shape and parameter count.
    Presets,
    /// Continue a prompt with a trained checkpoint: on the GPU (a key/value cache, the prompt
    /// through flash attention, then flash-decoding per token) and on the CPU path with its own
    /// cache, with tokens per second on each and the two texts compared.
    Sample {
        #[arg(long)]
        checkpoint: String,
        #[arg(long, default_value = "")]
        prompt: String,
        /// Tokens to generate.
        #[arg(long, default_value_t = 120)]
        tokens: usize,
        /// 0 picks the likeliest token; above 0 samples.
        #[arg(long, default_value_t = 0.0)]
        temperature: f32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// gpu, cpu or both (the GPU's text is printed).
        #[arg(long, default_value = "both")]
        path: String,
        /// Also time the GPU's slower ways on the same work: the captured pass replayed one
        /// token at a time (at temperature 0, where the fastest way is greedy runs) and every
        /// one-token pass recorded as it comes (all must pick the same tokens).
        #[arg(long)]
        each_call: bool,
    },
}

pub fn main() {
    let _ = env_logger::try_init();
    let cli = Cli::parse();
    let result = match &cli.command {
        Some(Command::Presets) => presets(),
        Some(Command::Sample {
            checkpoint,
            prompt,
            tokens,
            temperature,
            seed,
            path,
            each_call,
        }) => pollster::block_on(sample(
            checkpoint,
            prompt,
            *tokens,
            (*temperature, *seed),
            path,
            *each_call,
        )),
        None if cli.bench => pollster::block_on(bench(&cli)),
        None => {
            kiln_app::run_with::<flash::page::FlashPage>(kiln_app::Options {
                exit_after: cli.exit_after,
                preset: Some(cli.preset.clone()),
                talk: cli.talk || cli.stage.is_some(),
                stage: cli.stage.map(|s| s as usize),
                ..Default::default()
            });
            Ok(())
        }
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn presets() -> Result<()> {
    let vocab = Corpus::synthetic(1, 10).vocab();
    println!(
        "preset   d_model heads kv heads layers  T    B   parameters  score traffic/layer/step"
    );
    for p in Preset::ALL {
        let c = p.config(vocab);
        println!(
            "{:<8} {:>7} {:>5} {:>8} {:>6} {:>4} {:>4} {:>12} {:>10.1} MB",
            p.name(),
            c.d_model,
            c.heads,
            c.kv_heads,
            c.layers,
            c.seq,
            c.batch,
            c.parameters(),
            c.score_traffic_bytes() as f64 / 1e6
        );
    }
    println!("(parameters for the generated corpus's {vocab}-token vocabulary)");
    Ok(())
}

async fn sample(
    file: &str,
    prompt: &str,
    count: usize,
    (temperature, seed): (f32, u64),
    path: &str,
    each_call: bool,
) -> Result<()> {
    let (on_gpu, on_cpu) = match path {
        "gpu" => (true, false),
        "cpu" => (false, true),
        "both" => (true, true),
        other => {
            return Err(Error::Config(format!(
                "--path {other}: choose gpu, cpu or both"
            )));
        }
    };
    let (header, state) = checkpoint::load(file)?;
    let alphabet: Vec<char> = header.alphabet.chars().collect();
    let corpus = Corpus {
        alphabet,
        tokens: Vec::new(),
        source: header.data.clone(),
    };
    let ids = corpus.encode(prompt)?;
    let c = &header.config;
    let mut runs = Vec::new();
    if on_gpu {
        let b = GpuBackend {
            gpu: Gpu::new(&GpuOptions::default()).await?,
        };
        let p = model::upload_params(&b, &state.params)?;
        // A few tokens first, so that the timed run finds its pipelines built; and the clocks
        // brought up before each timed run (a decoding loop leaves the GPU idle between its
        // short passes, so it does not raise them itself).
        generate::generate(&b, c, &p, &ids, count.min(4), temperature, seed).await?;
        bench::warm_up_clocks(&b.gpu, 500.0).await?;
        let run = generate::generate(&b, c, &p, &ids, count, temperature, seed).await?;
        if each_call {
            // The slower ways on the same work: what replaying one pass per token (at
            // temperature 0; above it that is the fastest way already), and what recording each
            // pass, cost.
            let ways: &[Way] = if temperature == 0.0 {
                &[Way::OneByOne, Way::Recorded]
            } else {
                &[Way::Recorded]
            };
            let mut rates = Vec::new();
            for &way in ways {
                bench::warm_up_clocks(&b.gpu, 500.0).await?;
                let other =
                    generate::generate_as(&b, c, &p, &ids, count, temperature, seed, way).await?;
                if other.tokens != run.tokens {
                    return Err(Error::Config(format!(
                        "the GPU's passes made the {way:?} way picked other tokens than the fastest way's"
                    )));
                }
                rates.push(format!("{way:?} {:.1}", other.tokens_per_s()));
            }
            eprintln!(
                "GPU tokens/s by way: Fastest {:.1}, {}; the same tokens",
                run.tokens_per_s(),
                rates.join(", ")
            );
        }
        runs.push((Backend::name(&b), run));
    }
    if on_cpu {
        let b = CpuBackend::all_cores();
        let run = generate::generate(&b, c, &state.params, &ids, count, temperature, seed).await?;
        runs.push((Backend::name(&b), run));
    }
    for (name, run) in &runs {
        eprintln!(
            "{name}: {} tokens after a {}-token prompt; prompt pass {:.1} ms, then {:.1} tokens/s{}",
            run.tokens.len(),
            ids.len().max(1),
            1e3 * run.prefill_s,
            run.tokens_per_s(),
            if run.refills > 0 {
                format!(" ({} refills of a full context)", run.refills)
            } else {
                String::new()
            }
        );
    }
    if let [(_, gpu_run), (_, cpu_run)] = runs.as_slice() {
        eprintln!(
            "GPU {:.1}× the CPU path's tokens/s",
            gpu_run.tokens_per_s() / cpu_run.tokens_per_s().max(f64::MIN_POSITIVE)
        );
        match generate::first_divergence(gpu_run, cpu_run) {
            None => eprintln!(
                "the two paths generated the same {} tokens (largest logit difference {:.2e})",
                gpu_run.tokens.len(),
                generate::logit_difference(gpu_run, cpu_run)
            ),
            Some(d) if temperature > 0.0 || d.explained() => eprintln!(
                "the paths first differ at token {}: the GPU's pick led by {:.2e}, within twice their logit difference there ({:.2e})",
                d.step, d.margin, d.logit_difference
            ),
            Some(d) => {
                return Err(Error::Config(format!(
                    "the GPU and CPU paths differ at token {}, where the GPU's pick led by {:.2e}, more than twice their logit difference ({:.2e})",
                    d.step, d.margin, d.logit_difference
                )));
            }
        }
    }
    if let Some((_, run)) = runs.first() {
        println!("{prompt}{}", corpus.decode(&run.tokens));
    }
    Ok(())
}

async fn bench(cli: &Cli) -> Result<()> {
    if cli.steps == 0 {
        return Err(Error::Config("--steps must be at least 1".into()));
    }
    let preset = Preset::parse(&cli.preset)?;
    let setup = Setup::new(preset, cli.data.as_deref(), cli.resume.as_deref())?;
    let gpu = Gpu::new(&GpuOptions::default()).await?;
    let cpu = match cli.threads {
        Some(0) => return Err(Error::Config("--threads must be at least 1".into())),
        Some(n) => CpuBackend { threads: n },
        None => CpuBackend::all_cores(),
    };
    let c = &setup.config;
    eprintln!(
        "flash --bench: preset {} ({} parameters: d_model {}, {} heads over {} key/value heads, {} layers, T {}, B {}, vocabulary {}) on {} and {}",
        preset.name(),
        c.parameters(),
        c.d_model,
        c.heads,
        c.kv_heads,
        c.layers,
        c.seq,
        c.batch,
        c.vocab,
        gpu.profile().name,
        flash::backend::Backend::name(&cpu),
    );
    let save = cli.save.as_deref();
    let comparison = run::compare(&gpu, &setup, cli.steps, cpu, save, cli.each_call).await?;
    let sweep = if cli.no_sweep {
        None
    } else {
        eprintln!("  kernel sweep: causal attention forward + backward, B1 H8 d64");
        let lengths = flash::page::sweep_lengths(&gpu);
        Some(sweep::run(&gpu, flash::page::SHAPE, &lengths, 5, 20_000.0).await?)
    };
    let kernels: Vec<String> = gpu
        .compiled()
        .into_iter()
        .map(|(f, v)| format!("{f} {v}"))
        .collect();
    let ok = comparison.drift <= cli.max_drift;
    if cli.json {
        let json = serde_json::json!({
            "demo": "flash",
            "adapter": gpu.profile().name,
            "backend": gpu.profile().backend,
            "comparison": comparison,
            "kernels": kernels,
            "sweep": sweep,
            "max_drift": cli.max_drift,
            "drift_ok": ok,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        );
    } else {
        let r = &comparison;
        println!(
            "flash — preset {} ({} parameters), {} steps on {} ({})",
            r.preset,
            r.parameters,
            r.steps,
            gpu.profile().name,
            gpu.profile().backend
        );
        for p in [&r.gpu, &r.cpu] {
            println!(
                "{:<28} median {:>9.2} ms/step, total {:>8.2} s, loss {:.4} → {:.4}",
                p.path,
                p.median_ms(),
                p.total_s(),
                p.losses.first().copied().unwrap_or(f64::NAN),
                p.losses.last().copied().unwrap_or(f64::NAN)
            );
        }
        if let Some(ms) = r.gpu_recorded_median_ms_per_step {
            println!(
                "{:<28} median {ms:>9.2} ms/step (the same losses)",
                "GPU, each step recorded"
            );
        }
        println!(
            "speed-up (CPU/GPU ms per step) {:.1}×; loss drift {:.3} %",
            r.speedup,
            100.0 * r.drift
        );
        println!("clock: {}", r.clock);
        println!(
            "attention traffic per layer per step (byte model, forward + backward): flash {:.1} MB, naive {:.1} MB",
            r.attention_traffic.flash_mb, r.attention_traffic.naive_mb
        );
        if let Some(s) = &sweep {
            println!(
                "kernel level, causal forward + backward, B{} H{} d{} ({}):",
                s.shape.batch,
                s.shape.heads,
                s.shape.head_dim,
                s.points.first().map_or("", |p| p.gpu_clock.as_str())
            );
            for p in &s.points {
                println!(
                    "  T {:>5}: flash {:>9.3} ms ({:>8.1} MB), naive {:>9.3} ms ({:>8.1} MB), CPU {}",
                    p.seq,
                    p.flash_ms,
                    p.flash_mb,
                    p.naive_ms,
                    p.naive_mb,
                    p.cpu_ms.map_or("—".into(), |c| format!("{c:.1} ms"))
                );
            }
        }
    }
    if !ok {
        return Err(Error::Config(format!(
            "loss drift {:.4} exceeds --max-drift {}",
            comparison.drift, cli.max_drift
        )));
    }
    Ok(())
}
