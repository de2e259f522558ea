//! The fleet page's wasm module: the same campaign as `fleet run`, on the browser's WebGPU
//! adapter, reporting progress to the page and stopping when the page's cancel button asks; the
//! checked-in reports merged; and the walkthrough (`fleet.html?talk`) with the same live
//! measurements as `fleet talk`'s window.

#[cfg(target_arch = "wasm32")]
mod web {
    use js_sys::Function;
    use kiln::{Gpu, GpuOptions};
    use kiln_app::talk::{KernelSource, Stored, Target};
    use kiln_app::web::{js_value, page_gpu};
    use kiln_fleet::campaign;
    use kiln_fleet::report::Platform;
    use kiln_fleet::talk::{self, CeilingMeter, Race, RaceSetup};
    use wasm_bindgen::prelude::*;

    /// This browser's adapter as the kernels see it, as JSON: `{profile, class, offered}` —
    /// the device profile, its device class (the tuned table's key) and per kernel family the
    /// variants offered here of all the family has.
    #[wasm_bindgen]
    pub async fn device() -> Result<String, JsValue> {
        kiln_app::web::start();
        let gpu = page_gpu().await?;
        serde_json::to_string(&serde_json::json!({
            "profile": gpu.profile(),
            "class": gpu.profile().class(),
            "offered": talk::offered_all(&gpu).map_err(js_value)?,
        }))
        .map_err(js_value)
    }

    /// The walkthrough for this browser's adapter, as JSON: `{profile, class, offered, stages,
    /// kernels, race}` — what `device` gives, the stage list (census, ceilings, variants racing,
    /// the tuned choice), the kernel-source view of the variants the selector picks here for a
    /// few ops, and the race before it starts (its case, racers and the selector's pick). Only
    /// choices: the ceilings' kernels and buffers (hundreds of MiB on a large GPU) are built when
    /// their stage asks for them (`measure_ceilings`), so that stage 1 shows sooner.
    #[wasm_bindgen]
    pub async fn walkthrough() -> Result<String, JsValue> {
        kiln_app::web::start();
        let gpu = page_gpu().await?;
        let ceilings = talk::ceiling_choices(Target::Device(&gpu)).map_err(js_value)?;
        let race = Race::new(&gpu).map_err(js_value)?;
        let stages = talk::stages(&gpu, &race, &ceilings).map_err(js_value)?;
        let picks = talk::selector_picks(&gpu, &race, &ceilings).map_err(js_value)?;
        let kernels = KernelSource::list(&gpu, &picks).map_err(js_value)?;
        serde_json::to_string(&serde_json::json!({
            "profile": gpu.profile(),
            "class": gpu.profile().class(),
            "offered": talk::offered_all(&gpu).map_err(js_value)?,
            "stages": stages,
            "kernels": kernels,
            "race": race.view(),
        }))
        .map_err(js_value)
    }

    /// The walkthrough where the browser offers no WebGPU adapter, as JSON with the fields of
    /// `walkthrough` but `kernels` (nothing runs here): the stages, the census, the race before
    /// it starts, for WebGPU's guaranteed limits (a stored profile). Needs no GPU.
    #[wasm_bindgen]
    pub fn walkthrough_without_adapter() -> Result<String, JsValue> {
        kiln_app::web::start();
        let stored = Stored::webgpu_defaults().map_err(js_value)?;
        let target = Target::Stored(&stored);
        let race = RaceSetup::new(target).map_err(js_value)?;
        let ceilings = talk::ceiling_choices(target).map_err(js_value)?;
        serde_json::to_string(&serde_json::json!({
            "profile": &stored.profile,
            "class": stored.profile.class(),
            "offered": talk::offered_for(target).map_err(js_value)?,
            "stages": talk::stages_for(target, &race, &ceilings).map_err(js_value)?,
            "race": race.view(target),
        }))
        .map_err(js_value)
    }

    /// Measures the ceilings (copy bandwidth, FMA rate, dispatch latency) a sample at a time,
    /// as `fleet talk` does: `progress(json)` hears the view after each sample; resolves to
    /// the last view.
    #[wasm_bindgen]
    pub async fn measure_ceilings(progress: Function) -> Result<String, JsValue> {
        kiln_app::web::start();
        let gpu = page_gpu().await?;
        // Built here, when the ceilings' stage (or the button) asks: hundreds of MiB on a GPU.
        let mut meter = CeilingMeter::new(&gpu).map_err(js_value)?;
        while meter.step().await.map_err(js_value)? {
            let json = serde_json::to_string(&meter.view()).map_err(js_value)?;
            let _ = progress.call1(&JsValue::NULL, &JsValue::from_str(&json));
        }
        serde_json::to_string(&meter.view()).map_err(js_value)
    }

    /// Races a few matmul variants (the selector's pick among them), each checked against the
    /// CPU reference, then timed a sample at a time: `progress(json)` hears the view after
    /// each step; resolves to the last view, with the fastest and whether the selector agrees.
    #[wasm_bindgen]
    pub async fn race(progress: Function) -> Result<String, JsValue> {
        kiln_app::web::start();
        let gpu = page_gpu().await?;
        let mut race = Race::new(&gpu).map_err(js_value)?;
        let _ = progress.call1(
            &JsValue::NULL,
            &JsValue::from_str(&serde_json::to_string(&race.view()).map_err(js_value)?),
        );
        while race.step().await.map_err(js_value)? {
            let json = serde_json::to_string(&race.view()).map_err(js_value)?;
            let _ = progress.call1(&JsValue::NULL, &JsValue::from_str(&json));
        }
        serde_json::to_string(&race.view()).map_err(js_value)
    }

    /// Runs every variant this browser's adapter is offered on each family's proof cases
    /// against the CPU reference (`kiln::cases::prove_family`, the check `tests/every_variant.rs`
    /// makes natively); resolves to the JSON list of per-family proofs. `families`: names
    /// separated by commas, or empty for all. `progress(family)` hears each family as it starts.
    /// Not on the page: `site/tests/prove.mjs` calls it.
    #[wasm_bindgen]
    pub async fn prove_every_variant(
        families: String,
        progress: Function,
    ) -> Result<String, JsValue> {
        kiln_app::web::start();
        let gpu = page_gpu().await?;
        let wanted: Vec<&str> = families.split(',').filter(|f| !f.is_empty()).collect();
        let mut proofs = Vec::new();
        for family in kiln::cases::families().filter(|f| wanted.is_empty() || wanted.contains(f)) {
            let _ = progress.call1(&JsValue::NULL, &JsValue::from_str(family));
            proofs.push(
                kiln::cases::prove_family(&gpu, family)
                    .await
                    .map_err(js_value)?,
            );
        }
        serde_json::to_string(&proofs).map_err(js_value)
    }

    /// Runs the campaign and resolves to the report's JSON. `progress(json)` hears
    /// `{done, total, step}`; `cancelled()` is asked before each variant.
    #[wasm_bindgen]
    pub async fn run_campaign(
        budget_s: f64,
        user_agent: String,
        progress: Function,
        cancelled: Function,
    ) -> Result<String, JsValue> {
        kiln_app::web::start();
        if !(budget_s.is_finite() && budget_s > 0.0) {
            return Err(JsValue::from_str(
                "the budget must be a positive number of seconds",
            ));
        }
        // A device of its own: the campaign measures from a fresh start.
        let gpu = Gpu::new(&GpuOptions::default()).await.map_err(js_value)?;
        let p = gpu.profile();
        let platform = Platform {
            os: "web".into(),
            arch: "wasm32".into(),
            browser: Some(user_agent),
            driver: format!("{} {}", p.driver, p.driver_info).trim().to_string(),
        };
        let options = campaign::Options {
            budget_s,
            ..Default::default()
        };
        let report = campaign::run(
            &gpu,
            &options,
            platform,
            &mut |p| {
                let json = serde_json::json!({"done": p.done, "total": p.total, "step": p.step});
                let _ = progress.call1(&JsValue::NULL, &JsValue::from_str(&json.to_string()));
            },
            &|| {
                cancelled
                    .call0(&JsValue::NULL)
                    .map(|v| v.is_truthy())
                    .unwrap_or(false)
            },
        )
        .await
        .map_err(|e| JsValue::from_str(&e.to_string()))?;
        report
            .to_json()
            .map_err(|e| JsValue::from_str(&e.to_string()))
    }

    /// Merges reports (a JSON array of report objects) as `fleet merge` does, into the picks
    /// as JSON: `[{class, family, bucket, variant, worst_ms, devices, excluded}]`.
    #[wasm_bindgen]
    pub fn merge_reports(json: &str) -> Result<String, JsValue> {
        let values: Vec<serde_json::Value> =
            serde_json::from_str(json).map_err(|e| JsValue::from_str(&e.to_string()))?;
        let reports = values
            .iter()
            .enumerate()
            .map(|(i, v)| kiln_fleet::Report::parse(&format!("report {i}"), &v.to_string()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| JsValue::from_str(&e.to_string()))?;
        serde_json::to_string(&kiln_fleet::merge::picks(&reports))
            .map_err(|e| JsValue::from_str(&e.to_string()))
    }

    /// Checks a report as `fleet validate` does: resolves to nothing, or throws the reason.
    #[wasm_bindgen]
    pub fn validate_report(json: &str) -> Result<(), JsValue> {
        kiln_fleet::Report::parse("report", json)
            .map(|_| ())
            .map_err(|e| JsValue::from_str(&e.to_string()))
    }
}
