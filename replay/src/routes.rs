//! The routing rules the replay applies: kinesis-to-sqs's for Kinesis
//! ranges, s3-to-sqs's for S3 events, each read and checked exactly as that
//! function reads and checks its `ROUTES` ([`Routes::parse`] with the source
//! keys it offers), so that a document the function would refuse stops the
//! replay's start too.
//!
//! Where each document comes from, the first found:
//!
//! | for | option (a file) | variable (the document) |
//! |---|---|---|
//! | Kinesis ranges | `--kinesis-routes FILE` | `KINESIS_ROUTES` |
//! | S3 events | `--s3-routes FILE` | `S3_ROUTES` |
//! | both | `--routes FILE` | `ROUTES` |
//!
//! In the stack, the functions' documents are the template's
//! `KinesisRoutes` and `S3Routes` parameters. None of them set: no rules,
//! every record to the target queue, as the functions without `ROUTES`.

use std::path::PathBuf;

use sqs_forwarder::Env;
use sqs_forwarder::route::{Routes, SourceKey};

/// Where the documents were given on the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteFiles {
    /// `--routes FILE`: both functions' document.
    pub both: Option<PathBuf>,
    /// `--kinesis-routes FILE`.
    pub kinesis: Option<PathBuf>,
    /// `--s3-routes FILE`.
    pub s3: Option<PathBuf>,
}

/// The rules for each kind of entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rules {
    /// kinesis-to-sqs's, for Kinesis ranges.
    pub kinesis: Option<Routes>,
    /// s3-to-sqs's, for S3 events.
    pub s3: Option<Routes>,
}

/// One source's document: its own option, then its own variable, then the
/// shared option, then `ROUTES`; checked for the keys the function offers.
/// The error names where the document came from.
fn one(
    own_file: Option<&PathBuf>,
    own_variable: &str,
    files: &RouteFiles,
    env: &Env,
    offered: &[SourceKey],
) -> Result<Option<Routes>, String> {
    let (text, from) = if let Some(path) = own_file.or(files.both.as_ref()) {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("the routing rules in {}: {e}", path.display()))?;
        (text, path.display().to_string())
    } else if let Some(text) = env.raw(own_variable) {
        (text, own_variable.to_owned())
    } else if let Some(text) = env.raw(sqs_forwarder::route::ROUTES.name) {
        (text, sqs_forwarder::route::ROUTES.name.to_owned())
    } else {
        return Ok(None);
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    Routes::parse(&text, offered)
        .map(Some)
        .map_err(|e| format!("the routing rules from {from}: {e}"))
}

/// Read both documents.
pub fn read(files: &RouteFiles, env: &Env) -> Result<Rules, String> {
    Ok(Rules {
        kinesis: one(
            files.kinesis.as_ref(),
            "KINESIS_ROUTES",
            files,
            env,
            kinesis_to_sqs::records::SOURCE_KEYS,
        )?,
        s3: one(
            files.s3.as_ref(),
            "S3_ROUTES",
            files,
            env,
            s3_to_sqs::routing::SOURCE_KEYS,
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINESIS: &str =
        r#"{"routes": [{"when": {"key": "partition_key", "prefix": "eu-"}, "target": "default"}]}"#;
    const S3: &str = r#"{"filter": [{"key": "event_name", "prefix": "ObjectCreated"}]}"#;
    const BOTH: &str = r#"{"filter": [{"field": "/type", "exists": true}]}"#;

    fn file(name: &str, text: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("replay-routes-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("write a rules file");
        path
    }

    #[test]
    fn each_source_reads_its_own_document_first() {
        let env = Env::from_pairs(&[
            ("KINESIS_ROUTES", KINESIS),
            ("S3_ROUTES", S3),
            ("ROUTES", BOTH),
        ]);
        let rules = read(&RouteFiles::default(), &env).expect("valid");
        assert_eq!(
            rules.kinesis,
            Some(Routes::parse(KINESIS, &[SourceKey::PartitionKey]).expect("valid"))
        );
        assert_eq!(
            rules.s3,
            Some(Routes::parse(S3, s3_to_sqs::routing::SOURCE_KEYS).expect("valid"))
        );
        // Files before variables; a source's own before the shared one.
        let files = RouteFiles {
            both: Some(file("both.json", BOTH)),
            kinesis: Some(file("kinesis.json", KINESIS)),
            s3: None,
        };
        let rules = read(&files, &env).expect("valid");
        assert_eq!(
            rules.kinesis,
            Some(Routes::parse(KINESIS, &[SourceKey::PartitionKey]).expect("valid"))
        );
        let both = Routes::parse(BOTH, s3_to_sqs::routing::SOURCE_KEYS).expect("valid");
        assert_eq!(rules.s3, Some(both), "--routes, the shared file");
        let none = read(&RouteFiles::default(), &Env::from_pairs(&[])).expect("valid");
        assert_eq!(none, Rules::default());
    }

    #[test]
    fn a_document_the_function_would_refuse_stops_the_start_naming_its_source() {
        // partition_key is kinesis-to-sqs's: s3-to-sqs refuses it.
        let env = Env::from_pairs(&[("ROUTES", KINESIS)]);
        let e = read(&RouteFiles::default(), &env).expect_err("s3-to-sqs refuses it");
        assert!(e.starts_with("the routing rules from ROUTES: "), "{e}");
        assert!(e.contains("partition_key"), "{e}");
        let files = RouteFiles {
            s3: Some(PathBuf::from("/nonexistent/s3-routes.json")),
            ..RouteFiles::default()
        };
        let e = read(&files, &Env::from_pairs(&[])).expect_err("no such file");
        assert!(e.contains("/nonexistent/s3-routes.json"), "{e}");
    }
}
