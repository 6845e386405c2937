//! Reading and checking the `ROUTES` document, once at start: every
//! mistake a user can make in it stops the start with a [`ConfigError`]
//! for `ROUTES` whose text names the rule (`routes[2].when.equals`) and
//! what is allowed there, and whose value is the part of the document at
//! fault. A member this reader does not know is refused rather than
//! ignored, so a misspelt rule cannot silently do nothing.

use serde_json::{Map, Value};

use crate::message::Attribute;
use crate::message::encode::check_attribute;
use crate::message::limits::MAX_ATTRIBUTES;
use crate::setup::aws_names::is_queue_url;
use crate::setup::config::variables::ENCODING_ATTRIBUTE;
use crate::setup::env::{Word, words_of};
use crate::setup::error::ConfigError;

use super::path::PathTemplate;
use super::record::is_pointer;
use super::shape::{AttributeRule, Kind, Shape};
use super::{ROUTES, Route, Routes, SourceKey, TargetId, Unmatched};

mod value;

use value::{condition, offers, source};

/// The document's members.
const MEMBERS: &[&str] = &[
    "targets",
    "filter",
    "routes",
    "unmatched",
    "body",
    "attributes",
    "attributes_from",
    "group_id",
];

/// The longest a target's name may be.
const MAX_TARGET_NAME: usize = 64;

/// The most characters of the document an error shows.
const SHOWN_CHARS: usize = 200;

/// The error at `path`: `found` is the part of the document at fault.
fn bad(path: &str, found: &Value, allowed: impl std::fmt::Display) -> ConfigError {
    ConfigError::new(
        ROUTES.name,
        &clip(&found.to_string()),
        format!("{path}: {allowed}"),
    )
}

/// At most [`SHOWN_CHARS`] characters of `text`.
fn clip(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

/// How errors name the document itself.
const ROOT: &str = "the document";

/// The path of `name` inside `path`.
fn child(path: &str, name: &str) -> String {
    if path == ROOT {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// `value` as an object whose members are all in `allowed`.
fn object<'a>(
    value: &'a Value,
    path: &str,
    allowed: &[&str],
    what: &str,
) -> Result<&'a Map<String, Value>, ConfigError> {
    let Value::Object(members) = value else {
        return Err(bad(path, value, what));
    };
    if let Some((name, found)) = members.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
        return Err(bad(
            &child(path, name),
            found,
            format_args!("not a member here; allowed: {}", allowed.join(", ")),
        ));
    }
    Ok(members)
}

/// `value` as a string.
fn string<'a>(value: &'a Value, path: &str, what: &str) -> Result<&'a str, ConfigError> {
    value.as_str().ok_or_else(|| bad(path, value, what))
}

/// `value` as a JSON pointer.
fn pointer(value: &Value, path: &str) -> Result<String, ConfigError> {
    let what = "a JSON pointer (RFC 6901): \"\" for the whole record, or /-separated names such as \"/payload/id\" (~0 for ~, ~1 for /)";
    let text = string(value, path, what)?;
    if is_pointer(text) {
        Ok(text.to_owned())
    } else {
        Err(bad(path, value, what))
    }
}

/// Read and check the document.
pub(super) fn document(text: &str, offered: &[SourceKey]) -> Result<Routes, ConfigError> {
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        ConfigError::new(
            ROUTES.name,
            &clip(text),
            format!("a JSON document of routing rules: {e}"),
        )
    })?;
    let top = object(
        &doc,
        ROOT,
        MEMBERS,
        format!(
            "a JSON object of routing rules, with: {}",
            MEMBERS.join(", ")
        )
        .as_str(),
    )?;
    let targets = match top.get("targets") {
        Some(v) => targets(v)?,
        None => Vec::new(),
    };
    let filter = list(top.get("filter"), "filter", "a list of conditions")?
        .iter()
        .enumerate()
        .map(|(i, c)| condition(c, &format!("filter[{i}]"), offered))
        .collect::<Result<_, _>>()?;
    let routes = list(top.get("routes"), "routes", "a list of routes")?
        .iter()
        .enumerate()
        .map(|(i, r)| route(r, &format!("routes[{i}]"), offered, &targets))
        .collect::<Result<_, _>>()?;
    let unmatched = match top.get("unmatched") {
        None => Unmatched::default(),
        Some(v) => {
            let words = format!("one of: {}", words_of::<Unmatched>().join(", "));
            Unmatched::from_word(string(v, "unmatched", &words)?)
                .ok_or_else(|| bad("unmatched", v, &words))?
        }
    };
    let shape = Shape {
        body: top.get("body").map(|v| pointer(v, "body")).transpose()?,
        attributes: match top.get("attributes") {
            Some(v) => attributes(v, offered)?,
            None => Vec::new(),
        },
        attributes_from: top
            .get("attributes_from")
            .map(|v| pointer(v, "attributes_from"))
            .transpose()?,
        group_id: top
            .get("group_id")
            .map(|v| {
                let what = "a value: {\"field\": \"/json/pointer\"} or {\"key\": \"<source key>\"}";
                source(
                    object(v, "group_id", &["field", "key", "name"], what)?,
                    v,
                    "group_id",
                    offered,
                )
            })
            .transpose()?,
    };
    Ok(Routes {
        targets,
        filter,
        routes,
        unmatched,
        shape,
    })
}

/// An optional list.
fn list<'a>(value: Option<&'a Value>, path: &str, what: &str) -> Result<&'a [Value], ConfigError> {
    match value {
        None => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(bad(path, other, what)),
    }
}

/// `targets`: name -> queue URL, sorted by name.
fn targets(value: &Value) -> Result<Vec<(String, String)>, ConfigError> {
    let Value::Object(members) = value else {
        return Err(bad(
            "targets",
            value,
            "an object of target name -> queue URL",
        ));
    };
    let mut targets = Vec::with_capacity(members.len());
    for (name, url) in members {
        let path = format!("targets.{name}");
        if name == "default" {
            return Err(bad(
                &path,
                url,
                "another name: default is the function's own target queue (QUEUE_URL or QUEUE_NAME) and needs no entry",
            ));
        }
        let name_ok = (1..=MAX_TARGET_NAME).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
        if !name_ok {
            return Err(bad(
                &path,
                &Value::String(name.clone()),
                format_args!("a target name of 1..={MAX_TARGET_NAME} of A-Z a-z 0-9 _ -"),
            ));
        }
        let what =
            "an SQS queue URL such as https://sqs.us-east-1.amazonaws.com/123456789012/my-queue";
        let text = string(url, &path, what)?;
        if !is_queue_url(text) {
            return Err(bad(&path, url, what));
        }
        targets.push((name.clone(), text.to_owned()));
    }
    targets.sort();
    Ok(targets)
}

/// A target name in `path`: `default` or one of `targets`.
fn target(
    value: &Value,
    path: &str,
    targets: &[(String, String)],
) -> Result<TargetId, ConfigError> {
    let names: Vec<&str> = std::iter::once("default")
        .chain(targets.iter().map(|(n, _)| n.as_str()))
        .collect();
    let what = format!("a target: one of {}", names.join(", "));
    let name = string(value, path, &what)?;
    names
        .iter()
        .position(|n| *n == name)
        .map(TargetId)
        .ok_or_else(|| bad(path, value, &what))
}

/// One route.
fn route(
    value: &Value,
    path: &str,
    offered: &[SourceKey],
    targets: &[(String, String)],
) -> Result<Route, ConfigError> {
    let what = "a route: {\"when\": <condition>, \"target\": \"<name>\"} or {\"path\": \"/queues/{name}/messages\"}";
    if let Some(template) = value.get("path") {
        object(value, path, &["path"], what)?;
        let here = format!("{path}.path");
        if !offered.contains(&SourceKey::Path) {
            return Err(bad(
                &here,
                template,
                format_args!(
                    "a route on the request path, which this function does not offer ({})",
                    offers(offered)
                ),
            ));
        }
        let text = string(
            template,
            &here,
            "a path template such as \"/queues/{name}/messages\"",
        )?;
        return PathTemplate::parse(text)
            .map(Route::Path)
            .map_err(|why| bad(&here, template, why));
    }
    let members = object(value, path, &["when", "target"], what)?;
    let (Some(when), Some(to)) = (members.get("when"), members.get("target")) else {
        let missing = if members.contains_key("when") {
            "target"
        } else {
            "when"
        };
        return Err(bad(
            path,
            value,
            format_args!("{what} (\"{missing}\" is missing)"),
        ));
    };
    Ok(Route::When {
        when: condition(when, &format!("{path}.when"), offered)?,
        target: target(to, &format!("{path}.target"), targets)?,
    })
}

/// `attributes`: name -> value and type.
fn attributes(value: &Value, offered: &[SourceKey]) -> Result<Vec<AttributeRule>, ConfigError> {
    let Value::Object(members) = value else {
        return Err(bad(
            "attributes",
            value,
            "an object of attribute name -> {\"field\" or \"key\", \"type\": \"String\" or \"Number\"}",
        ));
    };
    if members.len() > MAX_ATTRIBUTES {
        return Err(bad(
            "attributes",
            value,
            format_args!("at most {MAX_ATTRIBUTES} attributes (SQS's limit on a message)"),
        ));
    }
    let mut rules = Vec::with_capacity(members.len());
    for (name, rule) in members {
        let path = format!("attributes.{name}");
        if check_attribute(&Attribute::string(name.clone(), "v")).is_err() {
            return Err(bad(
                &path,
                &Value::String(name.clone()),
                ENCODING_ATTRIBUTE.allowed.describe(),
            ));
        }
        let what = "an attribute: {\"field\": \"/json/pointer\"} or {\"key\": \"<source key>\"}, and \"type\": \"String\" or \"Number\"";
        let fields = object(rule, &path, &["field", "key", "name", "type"], what)?;
        let source = source(fields, rule, &path, offered)?;
        let kind = match fields.get("type") {
            None => Kind::String,
            Some(t) => match t.as_str() {
                Some("String") => Kind::String,
                Some("Number") => Kind::Number,
                _ => return Err(bad(&format!("{path}.type"), t, "\"String\" or \"Number\"")),
            },
        };
        rules.push(AttributeRule {
            name: name.clone(),
            source,
            kind,
        });
    }
    Ok(rules)
}
