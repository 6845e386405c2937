//! Reading a Lambda event without lambda_runtime's per-field path tracking.
//!
//! lambda_runtime reads every event through `serde_path_to_error`, which
//! keeps the path of the value being read: every object key of the event is
//! copied into a `String` on the way, whatever the event holds. On the
//! 10,000-record Kinesis event that reading was about a quarter of the
//! function's instructions (bench/notes/2026-12-01-direct-client-profile.md). [`Payload`] takes
//! the event as raw JSON through that reader (one pass that copies nothing:
//! the raw JSON is borrowed from the invocation's body) and reads it with serde_json directly. Only when that fails is
//! the event read again with the path kept, so a malformed event still
//! fails naming the field at fault, as lambda_runtime's own error does:
//! `[Records[1].kinesis.data] invalid value: ...`.
//!
//! [`Checked`] reads the same way but keeps a malformed event as its error
//! instead of failing the runtime's deserialization: lambda_runtime reports
//! a payload it cannot deserialize with the error type
//! `lambda_runtime::deserializer::DeserializeError`, and a function that
//! documents its own (`KinesisToSqs.InvalidEvent`) must fail with it itself.

#[cfg(feature = "lambda")]
pub mod invocations;
#[cfg(feature = "lambda")]
pub mod once;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// An event of type `T`, read by [`read`]: the payload type to give
/// lambda_runtime (`LambdaEvent<Payload<T>>`).
#[derive(Debug, Clone, PartialEq)]
pub struct Payload<T>(pub T);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Payload<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Borrowed from the invocation's body: the event is not copied.
        let raw = <&'de RawValue>::deserialize(d)?;
        read(raw.get()).map(Payload).map_err(D::Error::custom)
    }
}

/// An event of type `T`, or why the invocation's JSON is not one (the
/// message [`read`] gives): the payload type to give lambda_runtime
/// (`LambdaEvent<Checked<T>>`) when a malformed event must fail with the
/// function's own error. Reading it fails only when the payload is not JSON
/// at all, which Lambda never sends.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked<T>(pub Result<T, String>);

impl<'de, T: DeserializeOwned + 'static> Deserialize<'de> for Checked<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        kept_or_read(d, |json| Checked(read(json)))
    }
}

/// A payload type's event, for its `Deserialize`: the one
/// [`once::ReadOnce`] read for this invocation (the body is then its
/// placeholder, read and dropped), or else `read_json` of the body's JSON,
/// borrowed from the invocation's body (not copied). A payload type that
/// never fails on JSON reads itself with this (`Checked`, apigw-to-sqs's
/// `HttpEvent`).
pub fn kept_or_read<'de, T: 'static, D: Deserializer<'de>>(
    d: D,
    read_json: impl FnOnce(&str) -> T,
) -> Result<T, D::Error> {
    #[cfg(feature = "lambda")]
    if let Some(event) = once::taken::<T>() {
        serde::de::IgnoredAny::deserialize(d)?;
        return Ok(event);
    }
    let raw = <&'de RawValue>::deserialize(d)?;
    Ok(read_json(raw.get()))
}

#[cfg(feature = "lambda")]
impl<T: DeserializeOwned + 'static> once::ReadEvent for Checked<T> {
    fn read(json: &str) -> Self {
        Checked(read(json))
    }
}

/// A JSON value's kind, for an error message that must not quote the
/// value itself: `null`, `a boolean`, `a number`, `a string`, `an array`,
/// `an object`.
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `json` as a `T`; on failure, the error with the path of the value at
/// fault, formatted as lambda_runtime formats it (`[path] error`, no path
/// for the whole document).
pub fn read<T: DeserializeOwned>(json: &str) -> Result<T, String> {
    read_at(json).map_err(|e| match e.path {
        Some(path) => format!("[{path}] {}", e.error),
        None => e.error,
    })
}

/// Why [`read_at`] could not read an event: the error and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misread {
    /// The path of the value at fault (`Records[1].kinesis.data`); `None`
    /// when the fault is the whole document's.
    pub path: Option<String>,
    /// serde_json's error.
    pub error: String,
}

/// `json` as a `T`, read by serde_json directly; only when that fails is it
/// read again with the path kept, to say where.
pub fn read_at<T: DeserializeOwned>(json: &str) -> Result<T, Misread> {
    match serde_json::from_str(json) {
        Ok(v) => Ok(v),
        Err(plain) => {
            let de = &mut serde_json::Deserializer::from_str(json);
            match serde_path_to_error::deserialize::<_, T>(de) {
                // Cannot happen (the same reader over the same text); the
                // plain error is the answer then.
                Ok(_) => Err(Misread {
                    path: None,
                    error: plain.to_string(),
                }),
                Err(e) => {
                    let path = e.path().to_string();
                    Err(Misread {
                        path: (path != ".").then_some(path),
                        error: e.inner().to_string(),
                    })
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Event {
        #[serde(rename = "Records")]
        records: Vec<Record>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Record {
        id: String,
        n: u32,
    }

    /// Read as lambda_runtime reads a payload: through serde_path_to_error.
    fn as_the_runtime_reads<T: DeserializeOwned>(text: &str) -> Result<T, String> {
        let de = &mut serde_json::Deserializer::from_slice(text.as_bytes());
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            format!("[{path}] {}", e.inner())
        })
    }

    #[test]
    fn an_event_reads_as_it_would_without_the_wrapper() {
        let text =
            r#"{"Records":[{"id":"a\u00e9\"","n":1},{"n":2,"id":"b","extra":[1,{"x":null}]}]}"#;
        let got: Payload<Event> = as_the_runtime_reads(text).expect("read");
        let want: Event = serde_json::from_str(text).expect("plain");
        assert_eq!(got.0, want);
        assert_eq!(got.0.records[0].id, "aé\"");
    }

    #[test]
    fn a_checked_event_keeps_a_malformed_one_as_its_error() {
        let good = r#"{"Records":[{"id":"a","n":1}]}"#;
        let got: Checked<Event> = as_the_runtime_reads(good).expect("read");
        assert_eq!(got.0, Ok(serde_json::from_str(good).expect("plain")));
        let got: Checked<Event> =
            as_the_runtime_reads(r#"{"Records":[{"id":"a","n":1},{"id":"b","n":"two"}]}"#)
                .expect("read, malformed or not");
        let e = got.0.expect_err("malformed");
        assert!(e.starts_with("[Records[1].n] invalid type"), "{e}");
        let got: Checked<Event> = as_the_runtime_reads("[1]").expect("read");
        assert!(got.0.is_err());
    }

    #[test]
    fn a_malformed_event_names_the_field_at_fault() {
        let e = as_the_runtime_reads::<Payload<Event>>(
            r#"{"Records":[{"id":"a","n":1},{"id":"b","n":"two"}]}"#,
        )
        .expect_err("refused");
        // The runtime's own path is the whole document; the message holds
        // the field's.
        assert!(
            e.starts_with("[.] [Records[1].n] invalid type: string \"two\""),
            "{e}"
        );
        let e = as_the_runtime_reads::<Payload<Event>>(r#"{"Records":[{"id":"a"}]}"#)
            .expect_err("refused");
        assert!(e.starts_with("[.] [Records[0]] missing field `n`"), "{e}");
        // Not JSON at all: the raw reader's own error.
        let e = as_the_runtime_reads::<Payload<Event>>(r#"{"Records":[}"#).expect_err("refused");
        assert!(e.contains("expected"), "{e}");
        assert_eq!(
            read::<Event>("7").map_err(|e| e.contains("invalid type")),
            Err(true)
        );
    }
}
