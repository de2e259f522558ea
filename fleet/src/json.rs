//! Reading untrusted JSON strictly: a key written twice in one object is refused (serde_json
//! keeps the last, so a report could say one thing to a reader that keeps the first and another
//! to us), and after a typed read every field the document held must have been read (serde's
//! `deny_unknown_fields` cannot be set on types of other crates, such as kiln's `DeviceProfile`,
//! whose unknown fields were silently dropped).

use std::fmt;

use serde::Serialize;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::text::clip;

/// Why a document was refused: not JSON at all, or JSON that breaks a rule (with the path).
#[derive(Debug)]
pub enum Refusal {
    Syntax(String),
    Rule(String),
}

/// Parses `json` into a value, refusing duplicate keys (named with the path of their object).
pub fn parse_unique(json: &str) -> Result<Value, Refusal> {
    let mut de = serde_json::Deserializer::from_str(json);
    let value = serde_path_to_error::deserialize::<_, Unique>(&mut de)
        .map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if inner.is_data() {
                Refusal::Rule(format!("{path}: {inner}"))
            } else {
                Refusal::Syntax(inner.to_string())
            }
        })?
        .0;
    de.end().map_err(|e| Refusal::Syntax(e.to_string()))?;
    Ok(value)
}

/// The first field of `input` that `typed` (what was read from it, written back out) lacks:
/// a field the types do not know, at any depth. Fields the types added (defaults) are fine.
pub fn unknown_field<T: Serialize>(input: &Value, typed: &T) -> Result<(), String> {
    let back = serde_json::to_value(typed).map_err(|e| e.to_string())?;
    let mut path = Vec::new();
    match first_unknown(input, &back, &mut path) {
        None => Ok(()),
        Some(key) => Err(format!(
            "{}: unknown field `{}`",
            if path.is_empty() {
                ".".to_string()
            } else {
                path.join("")
            },
            clip(&key, 40)
        )),
    }
}

fn first_unknown(input: &Value, back: &Value, path: &mut Vec<String>) -> Option<String> {
    match (input, back) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let Some(w) = b.get(k) else {
                    return Some(k.clone());
                };
                path.push(if path.is_empty() {
                    k.clone()
                } else {
                    format!(".{k}")
                });
                if let Some(found) = first_unknown(v, w, path) {
                    return Some(found);
                }
                path.pop();
            }
            None
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                path.push(format!("[{i}]"));
                if let Some(found) = first_unknown(v, w, path) {
                    return Some(found);
                }
                path.pop();
            }
            None
        }
        _ => None,
    }
}

/// A JSON value read with every object's keys checked for repeats.
struct Unique(Value);

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // JSON text cannot hold a non-finite number: `from` never sees one here.
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Unique(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "duplicate key `{}`",
                    clip(&key, 40)
                )));
            }
            let Unique(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}
