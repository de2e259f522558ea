//! `--bench`: no window. Times the GPU frame computation and the CPU path, checks that they
//! agree, prints one table (or JSON) naming the clocks, and writes the last GPU frame as PNG.

use kiln::{Gpu, GpuOptions};

use crate::{BenchReport, Demo, Options, platform};

pub fn run<D: Demo>(options: &Options) {
    let options = options.clone();
    platform::spawn(async move {
        match bench::<D>(&options).await {
            Ok(report) => print(&report, &options),
            Err(e) => platform::fatal(&format!("{} --bench: {e}", D::NAME)),
        }
    });
}

async fn bench<D: Demo>(options: &Options) -> kiln::Result<BenchReport> {
    if options.frames == 0 {
        return Err(kiln::Error::InvalidArgument {
            op: "bench",
            detail: "--frames must be at least 1".into(),
        });
    }
    let gpu = Gpu::new(&GpuOptions::default()).await?;
    let report = D::bench(&gpu, options).await?;
    if let (Some(path), Some(image)) = (&options.png, &report.image) {
        platform::write_png(path, image)?;
    }
    Ok(report)
}

fn print(r: &BenchReport, options: &Options) {
    if options.json {
        let mut json = serde_json::to_value(r).unwrap_or_default();
        if let Some(obj) = json.as_object_mut() {
            obj.insert(
                "gpu_over_cpu".into(),
                (r.cpu.median_ms / r.gpu.median_ms).into(),
            );
        }
        platform::emit_report(&serde_json::to_string_pretty(&json).unwrap_or_default());
        return;
    }
    let mut lines = vec![format!(
        "{} — {} on {} ({})",
        r.demo, r.settings, r.adapter, r.backend
    )];
    for (path, t) in [("GPU", &r.gpu), ("CPU", &r.cpu)] {
        // A clock that rounds its readings is summarised by their mean (kiln::bench::Timing).
        let centre = match t.quantum_ms {
            Some(q) => format!(
                "mean {:.4} ms of readings on a {:.1} µs grid",
                t.median_ms,
                q * 1e3
            ),
            None => format!("median {:.4} ms", t.median_ms),
        };
        lines.push(format!(
            "{path}  {:>10.1} frames/s  ({centre}, min {:.4}, max {:.4}; {} frames, {})",
            1e3 / t.median_ms,
            t.min_ms,
            t.max_ms,
            t.samples_ms.len(),
            t.clock
        ));
    }
    let ratio = r.cpu.median_ms / r.gpu.median_ms;
    lines.push(if ratio < 0.1 {
        format!("GPU/CPU {ratio:.3}x (the CPU path is faster here)")
    } else {
        format!("GPU/CPU {ratio:.1}x")
    });
    lines.push(format!("checks  {}", r.checks));
    if let Some(path) = &options.png {
        lines.push(format!("wrote {path}"));
    }
    platform::emit_report(&lines.join("\n"));
}
