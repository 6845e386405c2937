//! The rules engine's tests, by step: reading the document (`parse`, `parse_errors`), the
//! conditions and routes (`decide`), shaping (`shape`), and a property test
//! over documents and records of a small grammar (`prop`).

mod decide;
mod parse;
mod parse_errors;
mod prop;
mod shape;

use std::borrow::Cow;
use std::cell::Cell;

use super::{Decision, RecordView, Routes, SourceKey};
use crate::message::Message;
use crate::setup::env::Word;

/// Every source key, for a function that would offer them all.
const ALL: &[SourceKey] = &[
    SourceKey::PartitionKey,
    SourceKey::Bucket,
    SourceKey::ObjectKey,
    SourceKey::EventName,
    SourceKey::Path,
    SourceKey::Method,
    SourceKey::Header,
    SourceKey::RoutingKey,
    SourceKey::SourceQueue,
];

/// A record of the tests' making; counts how often its data is read.
#[derive(Debug, Default)]
struct Rec {
    data: Option<Vec<u8>>,
    keys: Vec<(SourceKey, Option<String>, String)>,
    data_reads: Cell<usize>,
}

impl Rec {
    fn json(text: &str) -> Rec {
        Rec::bytes(text.as_bytes())
    }

    fn bytes(data: &[u8]) -> Rec {
        Rec {
            data: Some(data.to_vec()),
            ..Rec::default()
        }
    }

    fn key(mut self, key: SourceKey, value: &str) -> Rec {
        self.keys.push((key, None, value.to_owned()));
        self
    }

    fn header(mut self, name: &str, value: &str) -> Rec {
        self.keys
            .push((SourceKey::Header, Some(name.to_owned()), value.to_owned()));
        self
    }
}

impl RecordView for Rec {
    fn data(&self) -> Option<&[u8]> {
        self.data_reads.set(self.data_reads.get() + 1);
        self.data.as_deref()
    }

    fn key(&self, key: SourceKey, name: Option<&str>) -> Option<Cow<'_, str>> {
        self.keys
            .iter()
            .find(|(k, n, _)| *k == key && n.as_deref() == name)
            .map(|(_, _, v)| Cow::Borrowed(v.as_str()))
    }
}

/// A document every test expects to be good.
fn routes(doc: &str) -> Routes {
    Routes::parse(doc, ALL).unwrap_or_else(|e| panic!("{doc}: {e}"))
}

/// The decision for `record` about a message `"original"` at position 7.
fn decide(routes: &Routes, record: &Rec) -> Decision<usize> {
    let decision = routes.decide(record, Message::new("original", 7usize));
    assert_eq!(*decision.position(), 7, "{decision:?}");
    decision
}

/// The message of a `Send` decision, and its target's index.
fn sent(decision: Decision<usize>) -> (usize, Message<usize>) {
    match decision {
        Decision::Send { target, message } => (target.0, message),
        other => panic!("expected a send: {other:?}"),
    }
}

#[test]
fn source_key_words_are_the_documents() {
    for key in ALL {
        assert_eq!(SourceKey::from_word(key.word()), Some(*key));
    }
    assert_eq!(SourceKey::WORDS.len(), ALL.len());
}
