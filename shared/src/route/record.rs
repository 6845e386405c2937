//! One record as the rules read it: its source keys through the function's
//! [`RecordView`], its data parsed as JSON at most once and only when a
//! rule reaches a `field`, so a record routed on source keys alone costs no
//! parse.

use std::borrow::Cow;
use std::cell::OnceCell;

use serde_json::Value;

use super::{RecordView, SourceKey};

/// Where a rule reads a value: `{"field": "/json/pointer"}` or
/// `{"key": "<source key>"}` (with `"name"` for a header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A field of the record's data parsed as JSON (an RFC 6901 pointer,
    /// checked at start).
    Field(String),
    /// A fact of the record's source.
    Key {
        /// Which one.
        key: SourceKey,
        /// The header's name, for [`SourceKey::Header`].
        name: Option<String>,
    },
}

impl Source {
    /// How a fault message names it: `field "/n"`, `key "header" "x-tenant"`.
    pub(crate) fn describe(&self) -> String {
        use crate::setup::env::Word as _;
        match self {
            Source::Field(pointer) => format!("field {pointer:?}"),
            Source::Key { key, name: None } => format!("key {:?}", key.word()),
            Source::Key {
                key,
                name: Some(name),
            } => format!("key {:?} {name:?}", key.word()),
        }
    }
}

/// A value as read from a record.
#[derive(Debug)]
pub(crate) enum Read<'a> {
    /// Not there: the key is absent, or the field is (the data is not JSON,
    /// has no such field, or holds `null` there).
    Absent,
    /// A source key's text.
    Key(Cow<'a, str>),
    /// A JSON field's value (never `null`).
    Json(&'a Value),
}

impl<'a> Read<'a> {
    /// Whether the value is there (for `exists`).
    pub(crate) fn is_present(&self) -> bool {
        !matches!(self, Read::Absent)
    }

    /// The text conditions compare: a key's text, a string field's text, a
    /// number's or a boolean's JSON text; `None` for an absent value, an
    /// object or an array.
    pub(crate) fn text(&self) -> Option<Cow<'_, str>> {
        match self {
            Read::Absent => None,
            Read::Key(text) => Some(Cow::Borrowed(text)),
            Read::Json(Value::String(s)) => Some(Cow::Borrowed(s)),
            Read::Json(Value::Bool(b)) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
            Read::Json(Value::Number(n)) => Some(Cow::Owned(n.to_string())),
            Read::Json(_) => None,
        }
    }

    /// The text shaping writes: as [`Read::text`], and an object or an
    /// array as its compact JSON.
    pub(crate) fn shaped_text(&self) -> Option<Cow<'_, str>> {
        match self {
            Read::Json(v) => Some(json_text(v)),
            other => other.text(),
        }
    }
}

/// A JSON value's text: a string's own text, any other value its compact
/// JSON.
pub(crate) fn json_text(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

/// Whether `pointer` is an RFC 6901 JSON pointer: empty (the whole
/// document), or `/`-separated reference tokens where `~` is only ever
/// `~0` or `~1`.
pub(crate) fn is_pointer(pointer: &str) -> bool {
    (pointer.is_empty() || pointer.starts_with('/'))
        && pointer
            .split('~')
            .skip(1)
            .all(|after| after.starts_with(['0', '1']))
}

/// A record, read lazily.
pub(crate) struct Record<'v, V> {
    view: &'v V,
    json: OnceCell<Option<Value>>,
}

impl<'v, V: RecordView> Record<'v, V> {
    /// A record whose data is not parsed yet.
    pub(crate) fn new(view: &'v V) -> Self {
        Record {
            view,
            json: OnceCell::new(),
        }
    }

    /// The record's data as JSON, parsed on the first call; `None` when the
    /// record has no data or it is not JSON.
    pub(crate) fn json(&self) -> Option<&Value> {
        self.json
            .get_or_init(|| {
                self.view
                    .data()
                    .and_then(|data| serde_json::from_slice(data).ok())
            })
            .as_ref()
    }

    /// Whether the record has data at all (for a fault's wording).
    pub(crate) fn has_data(&self) -> bool {
        self.view.data().is_some()
    }

    /// The field at `pointer`; `None` when the data is not JSON or has no
    /// such field.
    pub(crate) fn field(&self, pointer: &str) -> Option<&Value> {
        self.json()?.pointer(pointer)
    }

    /// A source key's value.
    pub(crate) fn key(&self, key: SourceKey, name: Option<&str>) -> Option<Cow<'v, str>> {
        self.view.key(key, name)
    }

    /// The value a rule names.
    pub(crate) fn read(&self, source: &Source) -> Read<'_> {
        match source {
            Source::Field(pointer) => match self.field(pointer) {
                None | Some(Value::Null) => Read::Absent,
                Some(value) => Read::Json(value),
            },
            Source::Key { key, name } => self
                .key(*key, name.as_deref())
                .map_or(Read::Absent, Read::Key),
        }
    }
}
