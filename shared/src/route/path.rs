//! The HTTP path route, `{"path": "/queues/{name}/messages"}`: one
//! apigw-to-sqs function can serve many queues when the caller names the
//! queue in the path, but only the queues the document configures (a
//! caller cannot send to a queue by guessing its name).

use super::record::Record;
use super::{RecordView, SourceKey, TargetId};

/// The segment that captures the target's name.
pub(crate) const CAPTURE: &str = "{name}";

/// A checked template: the literal segments around the one `{name}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathTemplate {
    before: Vec<String>,
    after: Vec<String>,
}

impl PathTemplate {
    /// Read a template: `/`, then non-empty segments separated by `/`,
    /// exactly one of them `{name}` and no other holding `{` or `}`.
    /// The error says what is wrong.
    pub(crate) fn parse(template: &str) -> Result<PathTemplate, &'static str> {
        let Some(rest) = template.strip_prefix('/') else {
            return Err("a path template starts with /");
        };
        let segments: Vec<&str> = rest.split('/').collect();
        if segments.iter().any(|s| s.is_empty()) {
            return Err("a path template has no empty segment (no // and no trailing /)");
        }
        let mut captures = segments.iter().enumerate().filter(|(_, s)| **s == CAPTURE);
        let (Some((at, _)), None) = (captures.next(), captures.next()) else {
            return Err("a path template has exactly one {name} segment");
        };
        if segments
            .iter()
            .any(|s| *s != CAPTURE && s.contains(['{', '}']))
        {
            return Err("a path template's other segments are literal (no { or })");
        }
        let owned = |s: &[&str]| s.iter().map(|s| (*s).to_owned()).collect();
        Ok(PathTemplate {
            before: owned(&segments[..at]),
            after: owned(&segments[at + 1..]),
        })
    }

    /// The name `path` captures when it has the template's shape (same
    /// segments, the literal ones equal, the captured one not empty),
    /// whether or not the name is a target.
    pub(crate) fn capture<'p>(&self, path: &'p str) -> Option<&'p str> {
        let mut segments = path.strip_prefix('/')?.split('/');
        for literal in &self.before {
            if segments.next()? != literal.as_str() {
                return None;
            }
        }
        let name = segments.next()?;
        for literal in &self.after {
            if segments.next()? != literal.as_str() {
                return None;
            }
        }
        if segments.next().is_some() || name.is_empty() {
            return None;
        }
        Some(name)
    }

    /// The target the request's path names, when it matches the template
    /// ([`PathTemplate::capture`]) and `lookup` knows the captured name.
    pub(crate) fn target<V: RecordView>(
        &self,
        record: &Record<'_, V>,
        lookup: impl Fn(&str) -> Option<TargetId>,
    ) -> Option<TargetId> {
        let path = record.key(SourceKey::Path, None)?;
        lookup(self.capture(&path)?)
    }
}
