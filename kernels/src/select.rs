//! Variant selection: for an op call, the tuned table (written from measurements, checked in)
//! first, the op's rule second. Every choice says which of the two made it.
//!
//! Choosing is a pure function of the call (family, dtype, dims, flags — no tensor), the device
//! profile and the tuned table, so a choice can be explained for a stored profile without its
//! GPU, and a device memoises the choices of calls it has seen. A rule is a list of filters
//! (what the call cannot take) and preferences in order: the first decides, the next breaks its
//! ties, and a tie after the last goes to the first variant in registry order.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::contract::Param;
use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::memory::lock;
use crate::registry::{Registry, Variant, unsupported_reason};

/// The tuned table format version this build reads.
pub const TUNED_VERSION: u32 = 1;

/// Measured best variants per device class, op family and shape bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunedTable {
    pub version: u32,
    pub entries: Vec<TunedEntry>,
}

/// One measured choice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunedEntry {
    /// Device class, as `DeviceProfile::class` writes it.
    pub class: String,
    pub family: String,
    /// Shape bucket, a [`Bucket`] as written (`m256_n256_k256`, …; checked on load).
    pub bucket: String,
    pub variant: String,
    /// Where the entry came from (reports merged, date).
    #[serde(default)]
    pub source: String,
}

impl TunedTable {
    /// The table checked into the repository (`kernels/tuned.json`).
    pub fn builtin() -> Result<Self> {
        Self::from_json("kernels/tuned.json", include_str!("../tuned.json"))
    }

    pub fn from_json(what: &str, json: &str) -> Result<Self> {
        let table: TunedTable = serde_json::from_str(json).map_err(|e| Error::Parse {
            what: what.to_string(),
            detail: e.to_string(),
        })?;
        for e in &table.entries {
            e.bucket.parse::<Bucket>().map_err(|err| Error::Parse {
                what: what.to_string(),
                detail: format!("{} {} {}: {err}", e.class, e.family, e.variant),
            })?;
        }
        if table.version != TUNED_VERSION {
            return Err(Error::Parse {
                what: what.to_string(),
                detail: format!(
                    "version {} (this build reads {TUNED_VERSION})",
                    table.version
                ),
            });
        }
        Ok(table)
    }
}

/// Why a variant was chosen.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Reason {
    /// The tuned table has an entry for this device class and shape bucket.
    Tuned { class: String, bucket: Bucket },
    /// No tuned entry applied: the op's rule picked it (the rule in words).
    Rule(String),
    /// The caller named the variant.
    Forced,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Tuned { class, bucket } => {
                write!(f, "tuned table: class {class}, bucket {bucket}")
            }
            Reason::Rule(rule) => write!(f, "rule: {rule}"),
            Reason::Forced => write!(f, "named by the caller"),
        }
    }
}

/// The variant an op call runs, and why. Cheap to clone: the variant is shared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Choice {
    pub variant: Arc<Variant>,
    pub reason: Reason,
    /// The call's shape bucket, under which tuned-table entries would file it.
    pub bucket: Bucket,
}

/// A question asked of each variant; an error when the variant lacks a value it reads.
type Ask<'a, T> = Box<dyn Fn(&Variant) -> Result<T> + 'a>;

/// What cannot take a call, and why.
pub struct Filter<'a> {
    pub why: &'static str,
    pub keep: Ask<'a, bool>,
}

/// One preference: higher keys win.
pub struct Prefer<'a> {
    pub what: &'static str,
    pub key: Ask<'a, i64>,
}

impl fmt::Debug for Filter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.why)
    }
}

impl fmt::Debug for Prefer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
}

/// A filter, boxed.
pub fn filter<'a>(why: &'static str, keep: impl Fn(&Variant) -> Result<bool> + 'a) -> Filter<'a> {
    Filter {
        why,
        keep: Box::new(keep),
    }
}

/// A preference, boxed.
pub fn prefer<'a>(what: &'static str, key: impl Fn(&Variant) -> Result<i64> + 'a) -> Prefer<'a> {
    Prefer {
        what,
        key: Box::new(key),
    }
}

/// What an op asks of the selector for one call.
pub struct Request<'a> {
    /// The call's key: its family names the op, its bucket the tuned entries that apply.
    pub key: Key,
    /// Variables the call fixes (the dtype of its tensors, causal, …).
    pub fixed: Vec<(&'static str, Param)>,
    /// Variants the call's shapes rule out (vec4 needs a multiple of 4, …): never picked,
    /// not by the tuned table either.
    pub filters: Vec<Filter<'a>>,
    /// The rule's preferences, in order.
    pub order: Vec<Prefer<'a>>,
    /// Variables fixed by the call that tuned entries leave open (a matmul's epilogue, a
    /// layernorm's residual): an entry naming the plain variant picks the one with the call's
    /// value of these and all else equal.
    pub left_open: &'static [&'static str],
}

impl Request<'_> {
    /// The op's family.
    pub fn op(&self) -> &'static str {
        self.key.family
    }

    /// Whether a variant takes the call's fixed values and shapes.
    pub fn takes(&self, v: &Variant) -> Result<bool> {
        if !v.takes(&self.fixed) {
            return Ok(false);
        }
        for f in &self.filters {
            if !(f.keep)(v)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The rule in words: its filters, then its preferences in order.
    pub fn rule(&self) -> String {
        let mut parts: Vec<String> = self.filters.iter().map(|f| f.why.to_string()).collect();
        let order: Vec<&str> = self.order.iter().map(|p| p.what).collect();
        if !order.is_empty() {
            parts.push(format!("prefer {}", order.join(", then ")));
        }
        parts.join("; ")
    }

    fn keys(&self, v: &Variant) -> Result<Vec<i64>> {
        self.order.iter().map(|p| (p.key)(v)).collect()
    }
}

impl fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("key", &self.key)
            .field("fixed", &self.fixed)
            .field("rule", &self.rule())
            .finish()
    }
}

/// An op call as the selector sees it.
pub trait Call {
    /// Every value that can change the choice, for the memo.
    fn key(&self) -> Key;
    /// The selector's request for this call on `profile`.
    fn request(&self, profile: &DeviceProfile) -> Request<'_>;
}

/// A call as the selector keys it: the family, dtype, up to six dims and flag bits (every value
/// that can change the choice: the memo's key), and the shape bucket its tuned entries are
/// filed under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub family: &'static str,
    pub dtype: DType,
    pub dims: [u64; 6],
    pub flags: u32,
    pub bucket: Bucket,
}

impl Key {
    pub fn new(
        family: &'static str,
        dtype: DType,
        dims: &[usize],
        flags: u32,
        bucket: Bucket,
    ) -> Key {
        let mut d = [0u64; 6];
        for (slot, &x) in d.iter_mut().zip(dims) {
            *slot = x as u64;
        }
        Key {
            family,
            dtype,
            dims: d,
            flags,
            bucket,
        }
    }
}

/// A shape bucket: up to four sizes, each named by a lowercase letter, written `m256_n256_k256`
/// (empty for a family whose tuned entries ignore shape). Most sizes are rounded up to a power
/// of two ([`bucket`]) so that calls within a factor of two share an entry.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Bucket {
    /// (letter, size); a zero letter ends the list.
    axes: [(u8, u64); Bucket::MAX_AXES],
}

impl Bucket {
    const MAX_AXES: usize = 4;

    /// The bucket of a family whose tuned entries ignore shape.
    pub const NONE: Bucket = Bucket {
        axes: [(0, 0); Bucket::MAX_AXES],
    };

    /// A bucket of `axes` as given (round them first where the family buckets by powers of
    /// two). Letters must be lowercase ASCII and at most four axes are kept; the families'
    /// code writes these, so a mistake here is a programming error caught by the tests.
    pub fn new(axes: &[(char, usize)]) -> Bucket {
        debug_assert!(axes.len() <= Bucket::MAX_AXES);
        debug_assert!(axes.iter().all(|(c, _)| c.is_ascii_lowercase()));
        let mut out = Bucket::NONE;
        for (slot, &(letter, size)) in out.axes.iter_mut().zip(axes) {
            *slot = (letter as u8, size as u64);
        }
        out
    }

    fn axes(&self) -> impl Iterator<Item = (char, u64)> + '_ {
        self.axes
            .iter()
            .take_while(|(letter, _)| *letter != 0)
            .map(|&(letter, size)| (char::from(letter), size))
    }
}

impl fmt::Display for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (letter, size)) in self.axes().enumerate() {
            if i > 0 {
                f.write_str("_")?;
            }
            write!(f, "{letter}{size}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bucket({self})")
    }
}

impl std::str::FromStr for Bucket {
    type Err = Error;

    /// The written form back (`m256_n256_k256`, or empty).
    fn from_str(text: &str) -> Result<Bucket> {
        let bad = |why: &str| Error::Parse {
            what: format!("shape bucket `{text}`"),
            detail: why.to_string(),
        };
        let mut out = Bucket::NONE;
        if text.is_empty() {
            return Ok(out);
        }
        let parts: Vec<&str> = text.split('_').collect();
        if parts.len() > Bucket::MAX_AXES {
            return Err(bad("more than four sizes"));
        }
        for (slot, part) in out.axes.iter_mut().zip(parts) {
            let mut chars = part.chars();
            let letter = chars
                .next()
                .filter(char::is_ascii_lowercase)
                .ok_or_else(|| bad("each size starts with a lowercase letter"))?;
            let size: u64 = chars
                .as_str()
                .parse()
                .map_err(|_| bad("each letter is followed by a size"))?;
            *slot = (letter as u8, size);
        }
        Ok(out)
    }
}

impl Serialize for Bucket {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The choices a device has made, by call.
#[derive(Debug, Default)]
pub struct Memo {
    choices: Mutex<HashMap<Key, Choice>>,
}

/// Everything a choice depends on besides the call.
#[derive(Clone, Copy, Debug)]
pub struct Selector<'a> {
    pub registry: &'a Registry,
    pub profile: &'a DeviceProfile,
    pub tuned: &'a TunedTable,
    /// Choices already made for this device (none for a stored profile explained offline).
    pub memo: Option<&'a Memo>,
}

impl<'a> Selector<'a> {
    /// A selector for a profile without a device: nothing memoised.
    pub fn new(registry: &'a Registry, profile: &'a DeviceProfile, tuned: &'a TunedTable) -> Self {
        Selector {
            registry,
            profile,
            tuned,
            memo: None,
        }
    }

    /// The variant for `call`: the named one if given (checked), else the memo's, else the
    /// tuned table's, else the rule's.
    pub fn choose(&self, call: &dyn Call, named: Option<&str>) -> Result<Choice> {
        if let Some(name) = named {
            return choose(
                self.registry,
                self.profile,
                self.tuned,
                &call.request(self.profile),
                Some(name),
            );
        }
        let key = call.key();
        if let Some(memo) = self.memo
            && let Some(c) = lock(&memo.choices).get(&key)
        {
            return Ok(c.clone());
        }
        let choice = choose(
            self.registry,
            self.profile,
            self.tuned,
            &call.request(self.profile),
            None,
        )?;
        if let Some(memo) = self.memo {
            lock(&memo.choices).insert(key, choice.clone());
        }
        Ok(choice)
    }

    /// The tuned table's pick for `call`, if it has one (the rule is not consulted).
    pub fn tuned_only(&self, call: &dyn Call) -> Result<Option<Choice>> {
        choose_tuned(
            self.registry,
            self.profile,
            self.tuned,
            &call.request(self.profile),
        )
    }
}

/// Picks the variant for a call: the named one if given (checked), else tuned table, else rule.
pub fn choose(
    registry: &Registry,
    profile: &DeviceProfile,
    tuned: &TunedTable,
    req: &Request<'_>,
    named: Option<&str>,
) -> Result<Choice> {
    if let Some(name) = named {
        let variant = registry.variant(req.op(), name)?;
        if let Some(why) = unsupported_reason(variant, profile) {
            return Err(Error::Unsupported {
                op: req.op(),
                adapter: profile.name.clone(),
                detail: format!("variant {name} {why}"),
            });
        }
        if !req.takes(variant)? {
            return Err(Error::shape(
                req.op(),
                format!(
                    "variant {name} does not take this call ({})",
                    describe(&req.fixed)
                ),
            ));
        }
        return Ok(Choice {
            variant: Arc::new(variant.clone()),
            reason: Reason::Forced,
            bucket: req.key.bucket,
        });
    }

    if let Some(choice) = choose_tuned(registry, profile, tuned, req)? {
        return Ok(choice);
    }
    // The best keys win; on a tie the first in registry order.
    let mut best: Option<(&Variant, Vec<i64>)> = None;
    for v in candidates(registry, profile, req, Offer::Core)? {
        let keys = req.keys(v)?;
        if best.as_ref().is_none_or(|(_, k)| keys > *k) {
            best = Some((v, keys));
        }
    }
    let (best, _) = best.ok_or_else(|| Error::Unsupported {
        op: req.op(),
        adapter: profile.name.clone(),
        detail: format!("no variant takes this call ({})", describe(&req.fixed)),
    })?;
    Ok(Choice {
        variant: Arc::new(best.clone()),
        reason: Reason::Rule(req.rule()),
        bucket: req.key.bucket,
    })
}

/// The tuned table's pick for a call, if it has one for this device class and shape bucket
/// (among the variants that take the call); the rule is not consulted.
pub fn choose_tuned(
    registry: &Registry,
    profile: &DeviceProfile,
    tuned: &TunedTable,
    req: &Request<'_>,
) -> Result<Option<Choice>> {
    let class = profile.class();
    let bucket = req.key.bucket.to_string();
    let mut entries = tuned
        .entries
        .iter()
        .filter(|e| e.class == class && e.family == req.op() && e.bucket == bucket)
        .peekable();
    if entries.peek().is_none() {
        return Ok(None);
    }
    // A measured entry may name an experimental design: the measurement promotes it.
    let candidates = candidates(registry, profile, req, Offer::All)?;
    let matches = |v: &Variant, entry: &str| {
        v.name == entry
            || (!req.left_open.is_empty()
                && registry.variant(req.op(), entry).is_ok_and(|e| {
                    e.values.iter().all(|(name, value)| {
                        req.left_open.contains(&name.as_str()) || v.get(name) == Some(value)
                    })
                }))
    };
    Ok(entries
        .find_map(|e| candidates.iter().find(|v| matches(v, &e.variant)))
        .map(|v| Choice {
            variant: Arc::new((*v).clone()),
            reason: Reason::Tuned {
                class: class.clone(),
                bucket: req.key.bucket,
            },
            bucket: req.key.bucket,
        }))
}

/// Which of the variants a device can run a choice looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Offer {
    /// Those its tier offers outright (the rule's candidates).
    Core,
    /// Those and its tier's experimental designs.
    All,
}

/// The variants the adapter can run that take the call's fixed values and shapes.
fn candidates<'a>(
    registry: &'a Registry,
    profile: &'a DeviceProfile,
    req: &Request<'_>,
    offer: Offer,
) -> Result<Vec<&'a Variant>> {
    let tier = profile.tier();
    let mut out = Vec::new();
    for v in registry.supported(req.op(), profile)? {
        let offered = offer == Offer::All || v.experimental_on(tier).is_none();
        if offered && req.takes(v)? {
            out.push(v);
        }
    }
    Ok(out)
}

/// The power of two at or above `x`: shape buckets group sizes within a factor of two.
pub fn bucket(x: usize) -> usize {
    x.max(1).next_power_of_two()
}

fn describe(fixed: &[(&'static str, Param)]) -> String {
    fixed
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::Bucket;

    #[test]
    fn a_bucket_reads_back_what_it_writes() {
        let b = Bucket::new(&[('m', 256), ('n', 1024), ('k', 64)]);
        assert_eq!(b.to_string(), "m256_n1024_k64");
        assert_eq!("m256_n1024_k64".parse::<Bucket>().ok(), Some(b));
        assert_eq!("".parse::<Bucket>().ok(), Some(Bucket::NONE));
        assert_eq!(Bucket::NONE.to_string(), "");
    }

    #[test]
    fn a_malformed_bucket_is_an_error() {
        for bad in [
            "m",
            "M256",
            "256",
            "m256__k4",
            "a1_b2_c3_d4_e5",
            "m-1",
            "m256_",
        ] {
            assert!(bad.parse::<Bucket>().is_err(), "{bad:?} parsed");
        }
    }
}
