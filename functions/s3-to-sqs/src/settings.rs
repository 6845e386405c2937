//! This function's own settings, read once at cold start with
//! [`sqs_forwarder::Env`]. The shared variables (`QUEUE_URL`, ...) are read
//! by the shared crate; these are the ones only s3-to-sqs knows.

use sqs_forwarder::setup::env::{Variable, Word};
use sqs_forwarder::{ConfigError, Env};

use crate::continuation::ContinuationSettings;

/// `MODE`.
pub const MODE: Variable = Variable::words::<Mode>("MODE", "notification");
/// `EVENT_NAMES`.
pub const EVENT_NAMES: Variable = Variable::text(
    "EVENT_NAMES",
    "",
    "a comma-separated list of S3 event names, each exact (ObjectRemoved:Delete), a family (ObjectCreated:*) or *",
);
/// `GROUP_BY`.
pub const GROUP_BY: Variable = Variable::words::<GroupBy>("GROUP_BY", "object");
/// `LINES_PER_SEND`.
pub const LINES_PER_SEND: Variable =
    Variable::number("LINES_PER_SEND", "5000", 1, 100_000, " lines");
/// `LINES_BYTES_PER_SEND`.
pub const LINES_BYTES_PER_SEND: Variable = Variable::number(
    "LINES_BYTES_PER_SEND",
    "8388608",
    1_048_576,
    268_435_456,
    " bytes",
);
/// `S3_FORCE_PATH_STYLE`.
pub const S3_FORCE_PATH_STYLE: Variable = Variable::flag("S3_FORCE_PATH_STYLE", "false");

/// Every variable [`Settings::from_env`] reads, in the README table's order.
pub const VARIABLES: &[Variable] = &[
    MODE,
    EVENT_NAMES,
    GROUP_BY,
    LINES_PER_SEND,
    LINES_BYTES_PER_SEND,
    S3_FORCE_PATH_STYLE,
    crate::continuation::CONTINUATION,
    crate::continuation::CONTINUATION_BUCKETS,
    crate::continuation::CONTINUATION_MARGIN_MS,
    crate::continuation::CONTINUATION_AFTER_LINES,
];

/// What becomes a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One message per event record, describing the object.
    Notification,
    /// One message per line of each created object.
    Lines,
}

impl Word for Mode {
    const WORDS: &'static [(&'static str, Self)] =
        &[("notification", Mode::Notification), ("lines", Mode::Lines)];
}

/// What the FIFO message group id is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    /// `bucket/key`: each object's events (or lines) in order.
    Object,
    /// The bucket: all events of a bucket in order.
    Bucket,
    /// None of this function's: `MESSAGE_GROUP_ID` for all messages.
    None,
}

impl Word for GroupBy {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("object", GroupBy::Object),
        ("bucket", GroupBy::Bucket),
        ("none", GroupBy::None),
    ];
}

/// One entry of `EVENT_NAMES`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// `*`: every event.
    All,
    /// `ObjectCreated:*`: `ObjectCreated` and every `ObjectCreated:...`.
    Family(String),
    /// `ObjectRemoved:Delete`: that name only.
    Exact(String),
}

/// Which event names are forwarded (`EVENT_NAMES`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventFilter {
    patterns: Vec<Pattern>,
}

impl EventFilter {
    /// Read a comma-separated list of names; empty means every event.
    /// An `s3:` prefix, as in S3's notification configuration, is allowed.
    pub fn parse(variable: &str, raw: &str) -> Result<Self, ConfigError> {
        let bad = || ConfigError::new(variable, raw, EVENT_NAMES.allowed.describe());
        let mut patterns = Vec::new();
        for item in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let item = item.strip_prefix("s3:").unwrap_or(item);
            let pattern = if item == "*" {
                Pattern::All
            } else if let Some(family) = item.strip_suffix(":*") {
                if !valid_name(family) {
                    return Err(bad());
                }
                Pattern::Family(family.to_owned())
            } else {
                if !valid_name(item) {
                    return Err(bad());
                }
                Pattern::Exact(item.to_owned())
            };
            patterns.push(pattern);
        }
        Ok(EventFilter { patterns })
    }

    /// Whether an event of this name is forwarded.
    pub fn matches(&self, event_name: &str) -> bool {
        self.patterns.is_empty()
            || self.patterns.iter().any(|p| match p {
                Pattern::All => true,
                Pattern::Exact(n) => n == event_name,
                Pattern::Family(f) => {
                    event_name == f
                        || event_name
                            .strip_prefix(f.as_str())
                            .is_some_and(|rest| rest.starts_with(':'))
                }
            })
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(':')
        && !s.ends_with(':')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == ':')
}

/// The function's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `MODE`.
    pub mode: Mode,
    /// `EVENT_NAMES`.
    pub event_filter: EventFilter,
    /// `GROUP_BY` (FIFO targets only).
    pub group_by: GroupBy,
    /// `LINES_PER_SEND`: lines handed to the forwarder at a time.
    pub lines_per_send: usize,
    /// `LINES_BYTES_PER_SEND`: bytes of lines handed to the forwarder at a time.
    pub lines_bytes_per_send: usize,
    /// `S3_FORCE_PATH_STYLE`: path-style S3 addressing (local endpoints).
    pub s3_force_path_style: bool,
    /// `CONTINUATION` and its variables (lines mode).
    pub continuation: ContinuationSettings,
}

impl Default for Settings {
    /// The settings of an empty environment: every variable's default.
    fn default() -> Self {
        // The table's defaults are constants, checked by the tests below.
        Settings::from_env(&Env::from_pairs(&[])).expect("the defaults in VARIABLES are valid")
    }
}

impl Settings {
    /// Read and check every variable in [`VARIABLES`].
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        let mode = env.choice(&MODE)?;
        Ok(Settings {
            mode,
            event_filter: EventFilter::parse(EVENT_NAMES.name, &env.text(&EVENT_NAMES))?,
            group_by: env.choice(&GROUP_BY)?,
            lines_per_send: env.required_number(&LINES_PER_SEND)? as usize,
            lines_bytes_per_send: env.required_number(&LINES_BYTES_PER_SEND)? as usize,
            s3_force_path_style: env.flag(&S3_FORCE_PATH_STYLE)?,
            continuation: ContinuationSettings::from_env(env, mode == Mode::Lines)?,
        })
    }

    /// Whether this function's messages carry their own FIFO group ids (if
    /// not, a FIFO target needs `MESSAGE_GROUP_ID`).
    pub fn source_sets_group_ids(&self) -> bool {
        self.group_by != GroupBy::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_variables_table() {
        let s = Settings::from_env(&Env::from_pairs(&[])).expect("defaults");
        let defaults = Settings {
            mode: Mode::Notification,
            event_filter: EventFilter::default(),
            group_by: GroupBy::Object,
            lines_per_send: 5000,
            lines_bytes_per_send: 8 * 1024 * 1024,
            s3_force_path_style: false,
            continuation: ContinuationSettings {
                margin_ms: 60_000,
                ..ContinuationSettings::default()
            },
        };
        assert_eq!(s, defaults);
        assert_eq!(Settings::default(), defaults);
        let from_table: Vec<(&str, &str)> = VARIABLES.iter().map(|v| (v.name, v.default)).collect();
        let env = Env::from_pairs(&from_table);
        assert_eq!(
            Settings::from_env(&env).expect("table defaults"),
            Settings::default()
        );
    }

    #[test]
    fn reads_every_variable() {
        let s = Settings::from_env(&Env::from_pairs(&[
            ("MODE", "lines"),
            ("EVENT_NAMES", "s3:ObjectCreated:*, ObjectRemoved:Delete"),
            ("GROUP_BY", "bucket"),
            ("LINES_PER_SEND", "250"),
            ("LINES_BYTES_PER_SEND", "2097152"),
            ("S3_FORCE_PATH_STYLE", "true"),
        ]))
        .expect("valid");
        assert_eq!(s.mode, Mode::Lines);
        assert_eq!(s.group_by, GroupBy::Bucket);
        assert_eq!(s.lines_per_send, 250);
        assert_eq!(s.lines_bytes_per_send, 2_097_152);
        assert!(s.s3_force_path_style);
        assert!(s.source_sets_group_ids());
        assert!(s.event_filter.matches("ObjectCreated:Put"));
        assert!(s.event_filter.matches("ObjectRemoved:Delete"));
        assert!(!s.event_filter.matches("ObjectRemoved:DeleteMarkerCreated"));
    }

    #[test]
    fn bad_values_name_variable_value_and_allowed() {
        let err = |pairs: &[(&str, &str)]| {
            Settings::from_env(&Env::from_pairs(pairs)).expect_err("must fail")
        };
        let e = err(&[("MODE", "objects")]);
        assert_eq!(
            e.to_string(),
            "invalid configuration: MODE=\"objects\": one of: notification, lines"
        );
        let e = err(&[("GROUP_BY", "key")]);
        assert_eq!(e.allowed, "one of: object, bucket, none");
        let e = err(&[("LINES_PER_SEND", "0")]);
        assert_eq!(
            (e.variable.as_str(), e.allowed.as_str()),
            ("LINES_PER_SEND", "an integer from 1 to 100000 lines")
        );
        let e = err(&[("LINES_BYTES_PER_SEND", "1000")]);
        assert_eq!(e.variable, "LINES_BYTES_PER_SEND");
        let e = err(&[("S3_FORCE_PATH_STYLE", "yes")]);
        assert_eq!(e.variable, "S3_FORCE_PATH_STYLE");
        for bad in [
            "Object Created",
            "ObjectCreated:",
            "*:Put",
            ":Put",
            "Object*",
        ] {
            let e = err(&[("EVENT_NAMES", bad)]);
            assert_eq!(
                (e.variable.as_str(), e.value.as_str()),
                ("EVENT_NAMES", bad)
            );
        }
    }

    #[test]
    fn filter_families_and_exact_names() {
        let f = EventFilter::parse("EVENT_NAMES", "ObjectCreated:*").expect("valid");
        assert!(f.matches("ObjectCreated:Put"));
        assert!(f.matches("ObjectCreated:CompleteMultipartUpload"));
        assert!(f.matches("ObjectCreated"));
        assert!(!f.matches("ObjectCreatedLater:Put"));
        assert!(!f.matches("ObjectRemoved:Delete"));
        let all = EventFilter::parse("EVENT_NAMES", "").expect("valid");
        assert!(all.matches("ObjectRestore:Completed"));
        let star = EventFilter::parse("EVENT_NAMES", "*").expect("valid");
        assert!(star.matches("LifecycleTransition"));
        let exact = EventFilter::parse("EVENT_NAMES", "LifecycleTransition").expect("valid");
        assert!(exact.matches("LifecycleTransition"));
        assert!(!exact.matches("LifecycleExpiration:Delete"));
    }
}
