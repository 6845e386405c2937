//! Values and conditions in the document: where a rule reads a value
//! (`field` or `key`, with `name` for a header) and the one test a
//! condition makes of it. A key the function does not offer is refused
//! here, naming the keys it does offer.

use serde_json::{Map, Value};

use crate::setup::env::{Word, words_of};
use crate::setup::error::ConfigError;

use super::super::SourceKey;
use super::super::condition::{Condition, Test};
use super::super::record::Source;
use super::{bad, object, pointer, string};

/// A condition: a value and exactly one test.
pub(super) fn condition(
    value: &Value,
    path: &str,
    offered: &[SourceKey],
) -> Result<Condition, ConfigError> {
    let what = "a condition: a value ({\"field\": \"/json/pointer\"} or {\"key\": \"<source key>\"}) and one test: \"equals\", \"prefix\" or \"suffix\" with a string, or \"exists\" with true or false";
    let mut allowed = vec!["field", "key", "name"];
    allowed.extend(Test::WORDS);
    let members = object(value, path, &allowed, what)?;
    let source = source(members, value, path, offered)?;
    let mut tests = Test::WORDS
        .iter()
        .filter_map(|w| members.get(*w).map(|v| (*w, v)));
    let (Some((word, given)), None) = (tests.next(), tests.next()) else {
        return Err(bad(
            path,
            value,
            "exactly one test: \"equals\", \"prefix\", \"suffix\" or \"exists\"",
        ));
    };
    let here = format!("{path}.{word}");
    let text = || {
        string(
            given,
            &here,
            "a string (a number or boolean field is compared as its JSON text: write \"42\", \"true\")",
        )
        .map(str::to_owned)
    };
    let test = match word {
        "equals" => Test::Equals(text()?),
        "prefix" => Test::Prefix(text()?),
        "suffix" => Test::Suffix(text()?),
        _ => Test::Exists(
            given
                .as_bool()
                .ok_or_else(|| bad(&here, given, "true or false"))?,
        ),
    };
    Ok(Condition { source, test })
}

/// What a function offers, for an error.
pub(super) fn offers(offered: &[SourceKey]) -> String {
    if offered.is_empty() {
        "this function offers no source keys".to_owned()
    } else {
        let words: Vec<&str> = offered.iter().map(|k| k.word()).collect();
        format!("keys this function offers: {}", words.join(", "))
    }
}

/// The value a rule reads, from the members of `object` (at `path`):
/// `field`, or `key` (with `name` for `header`).
pub(super) fn source(
    members: &Map<String, Value>,
    object: &Value,
    path: &str,
    offered: &[SourceKey],
) -> Result<Source, ConfigError> {
    let name = members.get("name");
    match (members.get("field"), members.get("key")) {
        (Some(field), None) => {
            if let Some(n) = name {
                return Err(bad(
                    &format!("{path}.name"),
                    n,
                    "only with \"key\": \"header\"",
                ));
            }
            Ok(Source::Field(pointer(field, &format!("{path}.field"))?))
        }
        (None, Some(key)) => {
            let here = format!("{path}.key");
            let all = format!(
                "a source key: one of {} ({})",
                words_of::<SourceKey>().join(", "),
                offers(offered)
            );
            let word = string(key, &here, &all)?;
            let key_found = SourceKey::from_word(word).ok_or_else(|| bad(&here, key, &all))?;
            if !offered.contains(&key_found) {
                return Err(bad(
                    &here,
                    key,
                    format_args!(
                        "a key this function offers; {word} is not one ({})",
                        offers(offered)
                    ),
                ));
            }
            let name = match (key_found, name) {
                (SourceKey::Header, Some(n)) => Some(
                    n.as_str()
                        .filter(|s| !s.is_empty())
                        .ok_or_else(|| {
                            bad(
                                &format!("{path}.name"),
                                n,
                                "the header's name, a non-empty string",
                            )
                        })?
                        .to_owned(),
                ),
                (SourceKey::Header, None) => {
                    return Err(bad(
                        path,
                        object,
                        "a \"name\" with \"key\": \"header\": the header's name",
                    ));
                }
                (_, Some(n)) => {
                    return Err(bad(
                        &format!("{path}.name"),
                        n,
                        "only with \"key\": \"header\"",
                    ));
                }
                (_, None) => None,
            };
            Ok(Source::Key {
                key: key_found,
                name,
            })
        }
        (Some(_), Some(_)) => Err(bad(
            path,
            object,
            "a value from \"field\" or \"key\", not both",
        )),
        (None, None) => Err(bad(
            path,
            object,
            "a value: {\"field\": \"/json/pointer\"} or {\"key\": \"<source key>\"}",
        )),
    }
}
