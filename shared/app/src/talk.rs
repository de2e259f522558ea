//! Presenter mode and the kernel-source view: a demo's walkthrough as an ordered list of stages
//! (title, a few sentences, the code that matters), where the presenter is in it, and the kernels
//! a demo runs with the WGSL rendered for this device. The same stage list drives the native
//! window (`--talk`) and the page (`?talk&stage=N`, drawn by the site's `talk.js`).

use kiln::select::Selector;
use kiln::{Choice, DeviceProfile, Gpu, Piece, Registry, TunedTable};
use serde::Serialize;

/// A device profile without a device: a stored profile, the built-in kernel registry and tuned
/// table. What a page renders its walkthrough's kernels for when the browser offers no WebGPU
/// adapter (no `navigator.gpu`, no adapter, or not a secure context): the selector chooses and
/// the templates render from the profile alone, no GPU involved.
#[derive(Debug)]
pub struct Stored {
    pub registry: Registry,
    pub profile: DeviceProfile,
    pub tuned: TunedTable,
}

impl Stored {
    /// The stored profile `name` (`kernels/profiles/<name>.json`).
    pub fn profile(name: &str) -> kiln::Result<Stored> {
        let profile = kiln::device::stored_profiles()?
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| p)
            .ok_or_else(|| kiln::Error::InvalidArgument {
                op: "stored profile",
                detail: format!("no stored profile named {name}"),
            })?;
        Ok(Stored {
            registry: Registry::builtin()?,
            profile,
            tuned: TunedTable::builtin()?,
        })
    }

    /// The limits every WebGPU implementation guarantees, no optional features: what a
    /// walkthrough shows where there is no device.
    pub fn webgpu_defaults() -> kiln::Result<Stored> {
        Stored::profile("webgpu-defaults")
    }
}

/// What the kernels are chosen and rendered for: the device in hand, or a stored profile.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    Device(&'a Gpu),
    Stored(&'a Stored),
}

impl<'a> Target<'a> {
    pub fn profile(&self) -> &'a DeviceProfile {
        match self {
            Target::Device(gpu) => gpu.profile(),
            Target::Stored(s) => &s.profile,
        }
    }

    pub fn registry(&self) -> &'a Registry {
        match self {
            Target::Device(gpu) => gpu.registry(),
            Target::Stored(s) => &s.registry,
        }
    }

    /// The selector for this target (the device's own, with its memo of choices).
    pub fn selector(&self) -> Selector<'a> {
        match self {
            Target::Device(gpu) => gpu.selector(),
            Target::Stored(s) => Selector::new(&s.registry, &s.profile, &s.tuned),
        }
    }

    /// Whether there is no device: the kernels are rendered for a stored profile.
    pub fn is_stored(&self) -> bool {
        matches!(self, Target::Stored(_))
    }

    /// What the kernels are rendered for, in words (a caption's end).
    pub fn rendered_for(&self) -> String {
        match self {
            Target::Device(gpu) => gpu.profile().name.clone(),
            Target::Stored(s) => format!(
                "{} (a stored profile: WebGPU cannot run on this page)",
                s.profile.name
            ),
        }
    }
}

/// One stage of a walkthrough.
#[derive(Clone, Debug, Serialize)]
pub struct Stage {
    /// A short title.
    pub title: String,
    /// Two or three sentences.
    pub text: String,
    /// The code the stage is about, if any.
    pub code: Option<Code>,
}

impl Stage {
    pub fn new(title: &str, text: &str, code: Option<Code>) -> Stage {
        Stage {
            title: title.into(),
            text: text.into(),
            code,
        }
    }
}

/// Code shown beside a stage: the demo's own lines, or a kernel's WGSL with the text that came
/// from template values marked.
#[derive(Clone, Debug, Serialize)]
pub struct Code {
    /// What the code is (`demos/attention/src/encoder.rs`, `flash_fwd f32_d64_… for <adapter>`).
    pub caption: String,
    /// `rust` or `wgsl`.
    pub language: &'static str,
    pub pieces: Vec<Piece>,
    /// The line (0-based) a pane opens at: where a kernel's work is ([`focus_line`]), not the
    /// top of a long rendered kernel, whose first screenful is its parameters.
    pub focus: usize,
}

impl Code {
    /// Lines of a demo's Rust source.
    pub fn rust(caption: &str, text: &str) -> Code {
        Code {
            caption: caption.into(),
            language: "rust",
            pieces: vec![Piece {
                text: text.trim_end().to_string(),
                marked: false,
            }],
            focus: 0,
        }
    }

    /// The lines of `source` between a line starting `// talk:begin <name>` and one starting
    /// `// talk:end <name>` (the whole source when the markers are missing).
    pub fn rust_excerpt(caption: &str, source: &str, name: &str) -> Code {
        let lines: Vec<&str> = source.lines().collect();
        let begin = format!("// talk:begin {name}");
        let end = format!("// talk:end {name}");
        let start = lines
            .iter()
            .position(|l| l.trim_start().starts_with(&begin));
        let stop = lines.iter().position(|l| l.trim_start().starts_with(&end));
        match (start, stop) {
            (Some(a), Some(b)) if a < b => {
                Code::rust(caption, &dedent(&lines[a + 1..b].join("\n")))
            }
            _ => Code::rust(caption, &format!("{MISSING_EXCERPT} `{name}`")),
        }
    }

    /// The WGSL of the chosen variant, rendered for this device, template values marked.
    pub fn kernel(gpu: &Gpu, choice: &Choice) -> kiln::Result<Code> {
        Code::kernel_for(Target::Device(gpu), choice)
    }

    /// The WGSL of the chosen variant, rendered for `target`, template values marked.
    pub fn kernel_for(target: Target<'_>, choice: &Choice) -> kiln::Result<Code> {
        let v = &choice.variant;
        let pieces = target.registry().render_marked(v, target.profile())?;
        let text: String = pieces.iter().map(|p| p.text.as_str()).collect();
        Ok(Code {
            caption: format!(
                "{} {} rendered for {}",
                v.family,
                v.name,
                target.rendered_for()
            ),
            language: "wgsl",
            pieces,
            focus: focus_line(&text),
        })
    }

    /// The code as plain text.
    pub fn text(&self) -> String {
        self.pieces.iter().map(|p| p.text.as_str()).collect()
    }
}

/// Where a kernel's work is, for a pane that shows a screenful: one line above the innermost
/// loop of the entry point that holds its first accumulation (`+=` or `fma(`), else one line
/// above the entry point; 0 for code short enough to read from the top.
pub fn focus_line(text: &str) -> usize {
    const SHORT: usize = 40;
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= SHORT {
        return 0;
    }
    let Some(entry) = lines.iter().position(|l| l.contains("@compute")) else {
        return 0;
    };
    let is_loop = |l: &str| {
        let t = l.trim_start();
        t.starts_with("for (") || t.starts_with("for(") || t.starts_with("loop")
    };
    // A loop's own `i += 1u` is not the work.
    let work = lines
        .iter()
        .enumerate()
        .skip(entry)
        .find(|(_, l)| !is_loop(l) && (l.contains("+=") || l.contains("fma(")))
        .map(|(i, _)| i);
    let inner = work.and_then(|w| lines[entry..w].iter().rposition(|l| is_loop(l)));
    inner.map_or(entry, |i| i + entry).saturating_sub(1)
}

/// What an excerpt says when its markers are missing: [`check`] refuses a walkthrough with one.
const MISSING_EXCERPT: &str = "// no talk:begin/talk:end markers for";

/// A walkthrough's mistakes a presenter would only find on stage: no stages, an empty title or
/// text, an excerpt whose markers are missing.
pub fn check(stages: &[Stage]) -> Result<(), String> {
    if stages.is_empty() {
        return Err("the walkthrough has no stages".into());
    }
    for (i, s) in stages.iter().enumerate() {
        if s.title.trim().is_empty() || s.text.trim().is_empty() {
            return Err(format!("stage {} has no title or no text", i + 1));
        }
        if let Some(code) = &s.code
            && code.text().starts_with(MISSING_EXCERPT)
        {
            return Err(format!("stage {} ({}): {}", i + 1, s.title, code.text()));
        }
    }
    Ok(())
}

/// Removes the indentation every non-empty line shares.
fn dedent(text: &str) -> String {
    let indent = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    text.lines()
        .map(|l| l.get(indent..).unwrap_or("").trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A kernel a demo runs, for the kernel-source view: the variant, why it was chosen, its
/// template variables, and the WGSL rendered for this device.
#[derive(Clone, Debug, Serialize)]
pub struct KernelSource {
    pub family: String,
    pub variant: String,
    /// The selector's reason (tuned table or rule).
    pub reason: String,
    /// The variant's template variables, `name = value`.
    pub values: Vec<(String, String)>,
    pub code: Code,
}

impl KernelSource {
    pub fn new(gpu: &Gpu, choice: &Choice) -> kiln::Result<KernelSource> {
        let v = &choice.variant;
        Ok(KernelSource {
            family: v.family.clone(),
            variant: v.name.clone(),
            reason: choice.reason.to_string(),
            values: v
                .values
                .iter()
                .map(|(k, p)| (k.clone(), p.to_string()))
                .collect(),
            code: Code::kernel(gpu, choice)?,
        })
    }

    /// The sources of several choices, each kernel once (a demo may run one variant many times).
    pub fn list<'a>(
        gpu: &Gpu,
        choices: impl IntoIterator<Item = &'a Choice>,
    ) -> kiln::Result<Vec<KernelSource>> {
        let mut out: Vec<KernelSource> = Vec::new();
        for c in choices {
            let seen = out
                .iter()
                .any(|k| k.family == c.variant.family && k.variant == c.variant.name);
            if !seen {
                out.push(KernelSource::new(gpu, c)?);
            }
        }
        Ok(out)
    }
}

/// Where the presenter is: a stage index (0-based; 1-based in URLs, keys and on screen).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Talk {
    stage: usize,
    count: usize,
}

/// What a key did in presenter mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nav {
    /// The stage changed.
    Moved,
    /// A presenter key that did not move (already at the end, or no such stage).
    Stayed,
    /// Fullscreen on or off.
    Fullscreen,
    /// Not a presenter key: the demo may have it.
    Ignored,
}

impl Talk {
    /// A walkthrough of `count` stages starting at `stage` (1-based, clamped into range).
    pub fn new(count: usize, stage: Option<usize>) -> Talk {
        let last = count.saturating_sub(1);
        Talk {
            stage: stage.unwrap_or(1).saturating_sub(1).min(last),
            count,
        }
    }

    /// The current stage, 0-based.
    pub fn stage(&self) -> usize {
        self.stage
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// →/space next, ← back, Home first, End last, F fullscreen, 1–9 jump to that stage and 0
    /// to the tenth.
    pub fn key(&mut self, key: &str) -> Nav {
        let before = self.stage;
        let last = self.count.saturating_sub(1);
        match key {
            "right" | "space" | "pagedown" => self.stage = (self.stage + 1).min(last),
            "left" | "pageup" => self.stage = self.stage.saturating_sub(1),
            "home" => self.stage = 0,
            "end" => self.stage = last,
            "f" => return Nav::Fullscreen,
            k => match k.parse::<usize>() {
                Ok(0) if self.count >= 10 => self.stage = 9,
                Ok(n) if (1..=self.count).contains(&n) => self.stage = n - 1,
                Ok(n) if n < 10 => return Nav::Stayed,
                _ => return Nav::Ignored,
            },
        }
        if self.stage == before {
            Nav::Stayed
        } else {
            Nav::Moved
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A long kernel opens above its inner loop (the loop holding the first accumulation, not
    /// the loop counter's `+=`); short code and code without an entry point at the top.
    #[test]
    fn a_long_kernel_opens_at_its_inner_loop() {
        let mut text = String::from("struct Params {\n");
        text.push_str(&"  x: u32,\n".repeat(45));
        text.push_str("}\n@compute @workgroup_size(64)\nfn main() {\n");
        text.push_str("  for (var t = 0u; t < n; t += 1u) {\n");
        text.push_str("    load();\n");
        text.push_str("    for (var k = 0u; k < 16u; k += 1u) {\n");
        text.push_str("      acc += a[k] * b[k];\n    }\n  }\n}\n");
        let lines: Vec<&str> = text.lines().collect();
        let focus = focus_line(&text);
        assert!(
            lines[focus + 1].contains("var k"),
            "{focus}: {}",
            lines[focus + 1]
        );
        assert_eq!(focus_line("@compute\nfn main() {}\n"), 0);
        let unrolled = format!(
            "{}@compute\nfn main() {{\n  acc = fma(a, b, acc);\n}}\n",
            "// x\n".repeat(50)
        );
        assert_eq!(focus_line(&unrolled), 49, "above the entry point");
    }

    #[test]
    fn keys_move_within_the_walkthrough() {
        let mut t = Talk::new(5, Some(3));
        assert_eq!(t.stage(), 2);
        assert_eq!(t.key("right"), Nav::Moved);
        assert_eq!(t.key("space"), Nav::Moved);
        assert_eq!(t.stage(), 4);
        assert_eq!(t.key("right"), Nav::Stayed, "past the last stage");
        assert_eq!(t.key("left"), Nav::Moved);
        assert_eq!(t.stage(), 3);
        assert_eq!(t.key("home"), Nav::Moved);
        assert_eq!(t.stage(), 0);
        assert_eq!(t.key("left"), Nav::Stayed, "before the first stage");
        assert_eq!(t.key("4"), Nav::Moved);
        assert_eq!(t.stage(), 3);
        assert_eq!(
            t.key("9"),
            Nav::Stayed,
            "no ninth stage: still a presenter key"
        );
        assert_eq!(t.key("0"), Nav::Stayed, "no tenth stage");
        assert_eq!(t.key("end"), Nav::Moved);
        assert_eq!(t.stage(), 4);
        let mut ten = Talk::new(10, None);
        assert_eq!(ten.key("0"), Nav::Moved);
        assert_eq!(ten.stage(), 9, "0 jumps to the tenth stage");
        assert_eq!(t.key("f"), Nav::Fullscreen);
        assert_eq!(t.key("x"), Nav::Ignored);
        assert_eq!(
            Talk::new(3, Some(99)).stage(),
            2,
            "a stage past the end clamps"
        );
        assert_eq!(Talk::new(3, Some(0)).stage(), 0);
    }

    #[test]
    fn a_stored_profile_chooses_and_renders_without_a_device() {
        let stored = Stored::webgpu_defaults().unwrap();
        let target = Target::Stored(&stored);
        assert!(target.is_stored());
        let call = kiln::ops::softmax::call(kiln::DType::F32, 256, false);
        let choice = target.selector().choose(&call, None).unwrap();
        let code = Code::kernel_for(target, &choice).unwrap();
        assert!(code.caption.contains("stored profile"), "{}", code.caption);
        assert!(
            code.pieces.iter().any(|p| p.marked),
            "no template value marked"
        );
        assert!(code.text().contains("@compute"), "{}", code.text());
        assert!(Stored::profile("no such profile").is_err());
    }

    #[test]
    fn excerpts_come_from_between_the_markers_dedented() {
        let source = "fn a() {}\n    // talk:begin x\n    let y = 1;\n      y + 1\n    // talk:end x\nfn b() {}";
        let code = Code::rust_excerpt("c", source, "x");
        assert_eq!(code.text(), "let y = 1;\n  y + 1");
        let missing = Code::rust_excerpt("c", "plain", "x");
        let stage = Stage::new("t", "words", Some(missing));
        assert!(
            check(std::slice::from_ref(&stage)).is_err(),
            "a missing excerpt is refused"
        );
        assert!(check(&[]).is_err());
        let fine = Stage::new("t", "words", Some(code));
        assert_eq!(check(&[fine]), Ok(()));
    }
}
