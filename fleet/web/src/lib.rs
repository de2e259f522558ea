//! The fleet page's wasm module: the same campaign as `fleet run`, on the browser's WebGPU
//! adapter, reporting progress to the page and stopping when the page's cancel button asks.

#[cfg(target_arch = "wasm32")]
mod web {
    use js_sys::Function;
    use kiln::{Gpu, GpuOptions};
    use kiln_fleet::campaign;
    use kiln_fleet::report::Platform;
    use wasm_bindgen::prelude::*;

    /// Runs the campaign and resolves to the report's JSON. `progress(json)` hears
    /// `{done, total, step}`; `cancelled()` is asked before each variant.
    #[wasm_bindgen]
    pub async fn run_campaign(
        budget_s: f64,
        user_agent: String,
        progress: Function,
        cancelled: Function,
    ) -> Result<String, JsValue> {
        console_error_panic_hook::set_once();
        if !(budget_s.is_finite() && budget_s > 0.0) {
            return Err(JsValue::from_str(
                "the budget must be a positive number of seconds",
            ));
        }
        let gpu = Gpu::new(&GpuOptions::default())
            .await
            .map_err(|e| JsValue::from_str(&e.to_string()))?;
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
