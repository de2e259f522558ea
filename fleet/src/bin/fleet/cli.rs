//! The `fleet` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::TypedValueParser as _;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use kiln::{Gpu, GpuOptions, TunedTable};
use kiln_fleet::case_models::CaseModels;
use kiln_fleet::{FleetError, Report, Result, campaign, crowd, export, merge, review, show};

use crate::collector;
use crate::presenter::FleetTalk;

#[derive(Parser)]
#[command(name = "fleet", version, about = "Kiln's fleet benchmark")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the campaign on this machine's adapter and write the report.
    Run {
        /// Seconds after which the remaining variants are skipped (and listed in the report).
        #[arg(long, default_value_t = 300.0)]
        budget: f64,
        /// Only these families (comma-separated).
        #[arg(long, value_delimiter = ',')]
        families: Vec<String>,
        /// Where the report goes.
        #[arg(long, default_value = "fleet-report.json")]
        out: PathBuf,
        /// No progress bar (logs and CI).
        #[arg(long)]
        quiet: bool,
        /// Also time the designs this device's tier keeps experimental (the contracts'
        /// experimental sets; `kiln kernels` lists them).
        #[arg(long)]
        experimental: bool,
    },
    /// Check reports; prints each one's verdict, fails when any is invalid.
    Validate { reports: Vec<PathBuf> },
    /// Merge curated reports (the project's own, `fleet/reports/*.json`) into a tuned table:
    /// per device class, family and shape bucket, the fastest variant that was correct on
    /// every device of the class. With --from, crowd reports too, by the crowd rules
    /// (fleet/SCHEMA.md): the merge then prints what would change and why, and writes only
    /// with --write.
    Merge {
        reports: Vec<PathBuf>,
        /// The table to write; its entries the reports did not measure are kept.
        #[arg(long, default_value = "kernels/tuned.json")]
        out: PathBuf,
        /// Crowd reports: a collector's URL (`http://host:port`) or an export file saved from
        /// its `/export`.
        #[arg(long)]
        from: Option<String>,
        /// With --from: write the table the review shows (without it nothing is written).
        #[arg(long, requires = "from")]
        write: bool,
        /// Devices that must agree before the crowd decides a class, family and bucket.
        #[arg(long, default_value_t = kiln_fleet::crowd::DEFAULT_QUORUM, value_parser = clap::value_parser!(u16).range(2..).map(usize::from))]
        quorum: usize,
    },
    /// Save every report a collector stored (its `/export`, page by page) as one export file,
    /// for `fleet merge --from FILE`.
    Export {
        /// The collector (`http://host:port`).
        url: String,
        #[arg(long, default_value = "fleet-export.json")]
        out: PathBuf,
    },
    /// Print reports and the table merging them would give.
    Show { reports: Vec<PathBuf> },
    /// Presenter mode: a 1280×720 window that walks through the fleet on this device (census,
    /// ceilings, variants racing, the tuned choice), measured live. →/space next, ← back.
    Talk {
        /// The stage to start at (1-based).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        stage: Option<u32>,
        /// No window: time the raced matmul (the selector's pick) against the CPU reference.
        #[arg(long)]
        bench: bool,
        /// Runs per path for --bench.
        #[arg(long, default_value_t = 10)]
        frames: usize,
        /// Print the --bench report as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Talk {
        stage,
        bench,
        frames,
        json,
    } = cli.command
    {
        // The window runs its own event loop (and logger): not inside the async runner.
        kiln_app::run_with::<FleetTalk>(kiln_app::Options {
            talk: true,
            stage: stage.map(|s| s as usize),
            bench,
            frames,
            json,
            ..Default::default()
        });
        return ExitCode::SUCCESS;
    }
    env_logger::init();
    match pollster::block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fleet: error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Run {
            budget,
            families,
            out,
            quiet,
            experimental,
        } => {
            if !(budget.is_finite() && budget > 0.0) {
                return Err(FleetError::Usage(format!(
                    "--budget {budget}: give a positive number of seconds"
                )));
            }
            let gpu = Gpu::new(&GpuOptions::default()).await?;
            let options = campaign::Options {
                budget_s: budget,
                families,
                experimental,
                ..Default::default()
            };
            let bar = if quiet {
                ProgressBar::hidden()
            } else {
                ProgressBar::new(1)
            };
            bar.set_style(
                ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let report = campaign::run(
                &gpu,
                &options,
                campaign::native_platform(&gpu),
                &mut |p| {
                    bar.set_length(p.total as u64);
                    bar.set_position(p.done as u64);
                    bar.set_message(p.step.clone());
                },
                &|| false,
            )
            .await?;
            bar.finish_and_clear();
            write(&out, &report.to_json()?)?;
            println!(
                "{}: {} results ({} wrong, {} failed), {} skipped, {:.1} s on {}",
                out.display(),
                report.results.len(),
                count(&report, kiln_fleet::report::Outcome::Wrong),
                count(&report, kiln_fleet::report::Outcome::Failed),
                report.skipped.len(),
                report.elapsed_s,
                report.device.name
            );
            Ok(())
        }
        Command::Validate { reports } => {
            let mut bad = 0;
            for path in &reports {
                match read(path) {
                    Ok(r) => println!(
                        "{}: valid, {} on {}, {} results",
                        path.display(),
                        r.kiln_version,
                        r.device.name,
                        r.results.len()
                    ),
                    Err(e) => {
                        println!("{e}");
                        bad += 1;
                    }
                }
            }
            if bad > 0 {
                return Err(FleetError::Usage(format!(
                    "{bad} of {} reports are invalid",
                    reports.len()
                )));
            }
            Ok(())
        }
        Command::Merge {
            reports,
            out,
            from,
            write: confirmed,
            quorum,
        } => {
            let loaded = read_all(&reports)?;
            let keep = match std::fs::read_to_string(&out) {
                Ok(text) => TunedTable::from_json(&out.display().to_string(), &text)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => TunedTable::default(),
                Err(source) => {
                    return Err(FleetError::Io {
                        path: out.display().to_string(),
                        source,
                    });
                }
            };
            let names: Vec<String> = loaded.iter().map(|r| r.device.name.clone()).collect();
            let picks = merge::picks(&loaded);
            let source = format!(
                "fleet merge of {} report(s): {}",
                loaded.len(),
                names.join(", ")
            );
            let Some(from) = from else {
                // Curated reports only: written at once, as always.
                let table = merge::tuned_table(&picks, &keep, &source);
                write_table(&out, &table)?;
                print!("{}", show::picks(&picks));
                println!("{}: {} entries", out.display(), table.entries.len());
                return Ok(());
            };
            let page = collector::read(&from)?;
            let registry = kiln::Registry::builtin()?;
            let models = CaseModels::from_curated(&loaded);
            let rules = crowd::Rules {
                quorum,
                ..Default::default()
            };
            let mut merged = crowd::merge(&page.submissions, &models, &registry, &rules);
            merged.reports += page.set_aside.len();
            merged.set_aside.splice(0..0, page.set_aside);
            let crowd_source =
                format!("fleet merge of crowd reports from {from} (quorum {quorum})");
            let review = review::review(&keep, &picks, &source, merged, &crowd_source, quorum);
            print!("{}", review.text());
            if confirmed {
                write_table(&out, &review.table)?;
                println!(
                    "{}: written, {} entries",
                    out.display(),
                    review.table.entries.len()
                );
            } else {
                println!(
                    "{}: nothing written (run again with --write to write the table above)",
                    out.display()
                );
            }
            Ok(())
        }
        Command::Export { url, out } => {
            let entries = export::fetch_entries(&url)?;
            let n = entries.len();
            let json = serde_json::to_string(&export::Export::page(entries, None))
                .map_err(|e| FleetError::Usage(format!("cannot write the export: {e}")))?;
            write(&out, &(json + "\n"))?;
            println!("{}: {n} reports from {url}", out.display());
            Ok(())
        }
        Command::Talk { .. } => Err(FleetError::Usage(
            "fleet talk opens a window: it does not run here".into(),
        )),
        Command::Show { reports } => {
            let loaded = read_all(&reports)?;
            for r in &loaded {
                print!("{}", show::report(r));
            }
            println!("merged:");
            print!("{}", show::picks(&merge::picks(&loaded)));
            Ok(())
        }
    }
}

fn write_table(out: &PathBuf, table: &TunedTable) -> Result<()> {
    let json = serde_json::to_string_pretty(table)
        .map_err(|e| FleetError::Usage(format!("cannot write the tuned table: {e}")))?;
    write(out, &(json + "\n"))
}

fn count(r: &Report, outcome: kiln_fleet::report::Outcome) -> usize {
    r.results.iter().filter(|x| x.outcome == outcome).count()
}

fn read(path: &PathBuf) -> Result<Report> {
    let text = std::fs::read_to_string(path).map_err(|source| FleetError::Io {
        path: path.display().to_string(),
        source,
    })?;
    Report::parse(&path.display().to_string(), &text)
}

fn read_all(paths: &[PathBuf]) -> Result<Vec<Report>> {
    if paths.is_empty() {
        return Err(FleetError::Usage("name at least one report".into()));
    }
    paths.iter().map(read).collect()
}

/// Writes through a temporary file and a rename: a crash leaves the old file or the new one.
fn write(path: &PathBuf, text: &str) -> Result<()> {
    let io = |source| FleetError::Io {
        path: path.display().to_string(),
        source,
    };
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}
