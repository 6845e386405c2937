//! Conditions: a value and one test, for the `filter` and the routes'
//! `when`. What a test says of a value that is not there is written once,
//! here: a key that is absent, a record whose data is not JSON, a field it
//! lacks and a field that is `null` are all "not there", so only
//! `"exists": false` holds for them.

use super::RecordView;
use super::record::{Record, Source};

/// The one test of a condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Test {
    /// `"equals": "<text>"`.
    Equals(String),
    /// `"prefix": "<text>"`.
    Prefix(String),
    /// `"suffix": "<text>"`.
    Suffix(String),
    /// `"exists": true|false`: the value is there and not JSON `null`.
    Exists(bool),
}

impl Test {
    /// The tests' words, as the document writes them.
    pub(crate) const WORDS: [&'static str; 4] = ["equals", "prefix", "suffix", "exists"];
}

/// A value and one test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Condition {
    /// Where the value is read.
    pub(crate) source: Source,
    /// What must hold of it.
    pub(crate) test: Test,
}

impl Condition {
    /// Whether the condition holds for this record. The text tests compare
    /// a key's text, a string's text, or a number's or boolean's JSON text;
    /// an object or an array is there (`exists`) but has no text to
    /// compare.
    pub(crate) fn holds<V: RecordView>(&self, record: &Record<'_, V>) -> bool {
        let value = record.read(&self.source);
        match &self.test {
            Test::Exists(wanted) => value.is_present() == *wanted,
            Test::Equals(t) => value.text().is_some_and(|s| s == t.as_str()),
            Test::Prefix(t) => value.text().is_some_and(|s| s.starts_with(t.as_str())),
            Test::Suffix(t) => value.text().is_some_and(|s| s.ends_with(t.as_str())),
        }
    }
}
