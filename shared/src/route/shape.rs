//! Shaping: the message a routed record becomes, from its fields. The body
//! can be one part of the record (`body`), attributes can be lifted from
//! fields and keys (`attributes`) or taken as the record lists them
//! (`attributes_from`), and the group id can come from the record
//! (`group_id`, hashed when SQS would refuse it). What a record cannot give
//! as the rules ask is a content fault of that record alone
//! ([`SHAPE_FAILED`]); nothing of its data is written in the fault.

use std::borrow::Cow;

use base64::Engine as _;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::message::encode::check_attribute;
use crate::message::limits::MAX_ATTRIBUTES;
use crate::message::{Attribute, AttributeValue, Body, Message, fifo_id};
use crate::send::codes::SHAPE_FAILED;
use crate::send::outcome::Failure;

use super::RecordView;
use super::record::{Read, Record, Source, json_text};
use crate::event_reader::json_kind as kind;

/// The prefix of a group id hashed from a value SQS would refuse.
pub(crate) const HASHED_GROUP_PREFIX: &str = "g-";

/// An attribute's type in `attributes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `"String"` (the default).
    String,
    /// `"Number"`: a JSON number, or text that is a number.
    Number,
}

/// One entry of `attributes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AttributeRule {
    /// The attribute's name, checked at start.
    pub(crate) name: String,
    /// Where its value is read.
    pub(crate) source: Source,
    /// Its type.
    pub(crate) kind: Kind,
}

/// The shaping part of the document (all optional).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Shape {
    /// `body`: a JSON pointer.
    pub(crate) body: Option<String>,
    /// `attributes`, by name.
    pub(crate) attributes: Vec<AttributeRule>,
    /// `attributes_from`: a JSON pointer to an object of attributes.
    pub(crate) attributes_from: Option<String>,
    /// `group_id`: where the group id is read.
    pub(crate) group_id: Option<Source>,
}

fn fault(message: String) -> Failure {
    Failure::content(SHAPE_FAILED, message)
}

impl Shape {
    /// What the record gives as the rules ask: the body, the attributes and
    /// the group id, read now so that the record's data may be let go (or
    /// moved into the message) before they are applied; or the fault.
    pub(crate) fn plan<V: RecordView>(&self, record: &Record<'_, V>) -> Result<Shaped, Failure> {
        let body = match &self.body {
            Some(pointer) => Some(body(record, pointer)?),
            None => None,
        };
        let mut attributes = Vec::new();
        if let Some(pointer) = &self.attributes_from {
            attributes_from(record, pointer, &mut attributes)?;
        }
        for rule in &self.attributes {
            if let Some(attribute) = rule.read(record)? {
                set(&mut attributes, attribute);
            }
        }
        let group_id = match &self.group_id {
            Some(source) => record.read(source).shaped_text().map(|v| group_id(&v)),
            None => None,
        };
        Ok(Shaped {
            body,
            attributes,
            group_id,
        })
    }
}

/// A record's shaping, read and not yet applied ([`Shape::plan`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shaped {
    body: Option<String>,
    attributes: Vec<Attribute>,
    group_id: Option<String>,
}

impl Shaped {
    /// The message shaped. Order: body, then the attributes (those of
    /// `attributes` take the place of `attributes_from`'s of the same name,
    /// and both of the function's own), then the group id.
    pub(crate) fn apply<P>(self, message: &mut Message<P>) {
        if let Some(body) = self.body {
            message.body = Body::Text(body);
        }
        for attribute in self.attributes {
            set(&mut message.attributes, attribute);
        }
        if let Some(group_id) = self.group_id {
            message.group_id = Some(group_id);
        }
    }
}

/// The part of the record `pointer` names, as a body.
fn body<V: RecordView>(record: &Record<'_, V>, pointer: &str) -> Result<String, Failure> {
    let Some(json) = record.json() else {
        let why = if record.has_data() {
            "the record's data is not JSON"
        } else {
            "the record has no data"
        };
        return Err(fault(format!("body {pointer:?}: {why}")));
    };
    match json.pointer(pointer) {
        // `null` counts as not there, as everywhere in the rules.
        Some(Value::Null) => Err(fault(format!(
            "body {pointer:?}: the field is null (null counts as not there)"
        ))),
        Some(value) => Ok(json_text(value).into_owned()),
        None => Err(fault(format!(
            "body {pointer:?}: the record's data has no such field"
        ))),
    }
}

/// Put `attribute` in place of one of the same name, or add it.
fn set(attributes: &mut Vec<Attribute>, attribute: Attribute) {
    match attributes.iter_mut().find(|a| a.name == attribute.name) {
        Some(old) => *old = attribute,
        None => attributes.push(attribute),
    }
}

impl AttributeRule {
    /// The attribute, `None` when its value is not there.
    fn read<V: RecordView>(&self, record: &Record<'_, V>) -> Result<Option<Attribute>, Failure> {
        let value = record.read(&self.source);
        let Some(text) = value.shaped_text() else {
            return Ok(None);
        };
        let name = Cow::Owned(self.name.clone());
        match self.kind {
            Kind::String => Ok(Some(Attribute::string(name, text.into_owned()))),
            Kind::Number => {
                let numeric_kind = matches!(
                    value,
                    Read::Key(_) | Read::Json(Value::Number(_) | Value::String(_))
                );
                let attribute = Attribute::number(name, text);
                // The name was checked at start: only the value can fail.
                if numeric_kind && check_attribute(&attribute).is_ok() {
                    Ok(Some(attribute))
                } else {
                    Err(fault(format!(
                        "attribute {:?}: the {} is not a number",
                        self.name,
                        self.source.describe()
                    )))
                }
            }
        }
    }
}

/// The attributes the object at `pointer` lists, set on the message. Not
/// there (no such field, `null`, data that is not JSON): none.
fn attributes_from<V: RecordView>(
    record: &Record<'_, V>,
    pointer: &str,
    attributes: &mut Vec<Attribute>,
) -> Result<(), Failure> {
    let object = match record.field(pointer) {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(object)) => object,
        Some(other) => {
            return Err(fault(format!(
                "attributes_from {pointer:?}: the record holds {} there, not an object of attributes",
                kind(other)
            )));
        }
    };
    if object.len() > MAX_ATTRIBUTES {
        return Err(fault(format!(
            "attributes_from {pointer:?}: {} attributes; SQS allows at most {MAX_ATTRIBUTES}",
            object.len()
        )));
    }
    for (name, value) in object {
        let attribute = match value {
            Value::Null => continue,
            Value::String(s) => Attribute::string(name.clone(), s.clone()),
            Value::Number(n) => Attribute::number(name.clone(), n),
            Value::Object(given) => as_given(name, given).ok_or_else(|| {
                fault(format!(
                    "attributes_from {pointer:?}: attribute {name:?}: an object must hold \"DataType\" and, for String and Number types, a string \"StringValue\", for Binary types a base64 \"BinaryValue\""
                ))
            })?,
            other => {
                return Err(fault(format!(
                    "attributes_from {pointer:?}: attribute {name:?} is {}; allowed: a string, a number, or {{\"DataType\": ..., \"StringValue\": ...}}",
                    kind(other)
                )));
            }
        };
        set(attributes, attribute);
    }
    Ok(())
}

/// `{"DataType": "...", "StringValue": "..."}` (or `"BinaryValue"`, base64,
/// for a Binary type), kept as given; the encoder checks it as any
/// attribute.
fn as_given(name: &str, given: &Map<String, Value>) -> Option<Attribute> {
    let data_type = given.get("DataType")?.as_str()?;
    let base = data_type.split('.').next().unwrap_or(data_type);
    let string_value = || given.get("StringValue")?.as_str().map(str::to_owned);
    let value = match base {
        "String" => AttributeValue::String(string_value()?),
        "Number" => AttributeValue::Number(string_value()?),
        "Binary" => AttributeValue::Binary(
            base64::engine::general_purpose::STANDARD
                .decode(given.get("BinaryValue")?.as_str()?)
                .ok()?,
        ),
        _ => return None,
    };
    Some(Attribute {
        name: Cow::Owned(name.to_owned()),
        data_type: Cow::Owned(data_type.to_owned()),
        value,
    })
}

/// `value` as a group id: as it is when SQS takes it, else `g-` and the
/// hex of its SHA-256 (the same value, the same group).
pub(crate) fn group_id(value: &str) -> String {
    fifo_id::or_hashed(value, HASHED_GROUP_PREFIX, |v| Sha256::digest(v.as_bytes())).into_owned()
}
