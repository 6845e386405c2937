//! What the operator sees: one line per entry on standard output, a closing
//! summary, and, on a terminal, a progress bar on standard error.

use std::fmt;

use indicatif::{ProgressBar, ProgressStyle};

/// What became of one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Everything it stands for was sent; the entry was deleted.
    Replayed,
    /// Dry run: it would have been replayed.
    WouldReplay,
    /// The stream no longer has (part of) its range; what became of the
    /// entry.
    Expired(Expiry),
    /// Some of it was not sent; kept for the next run.
    Failed,
    /// Not an entry this tool can replay; kept.
    Unreadable,
    /// An on-failure record of a source this tool does not read (a
    /// DynamoDB stream, a Kafka topic, another function's event); kept.
    OtherSource,
}

/// What became of an entry whose range the stream no longer has (all or
/// part of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Kept as it was: nothing of it was sent, or not all that the stream
    /// still had (a later run sends it), or a dry run.
    Kept,
    /// What the stream still had was sent, and the entry was replaced by
    /// one that covers only the records lost: later runs report the loss
    /// and send nothing again.
    Narrowed,
    /// Deleted (`--delete-expired`), once what the stream still had was
    /// sent.
    Deleted,
}

/// One entry's line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryLine {
    /// 1, 2, ... in this run.
    pub number: u64,
    /// SQS's message id of the entry.
    pub message_id: String,
    /// What it is (`kinesis <stream> <shard> <start>..<end>`, `s3 ...`).
    pub what: String,
    /// What became of it.
    pub verdict: Verdict,
    /// What was sent, and why not all of it.
    pub detail: String,
}

impl fmt::Display for EntryLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (tag, tail) = match self.verdict {
            Verdict::Replayed => ("replayed", "; deleted"),
            Verdict::WouldReplay => ("would replay", "; dry run: nothing sent, kept"),
            Verdict::Expired(Expiry::Deleted) => ("EXPIRED", "; deleted (--delete-expired)"),
            Verdict::Expired(Expiry::Kept) => (
                "EXPIRED",
                "; kept (run with --delete-expired to drop it once you have noted the range)",
            ),
            Verdict::Expired(Expiry::Narrowed) => (
                "EXPIRED",
                "; kept, narrowed to what is lost: later runs report it and send nothing again (run with --delete-expired to drop it once you have noted the range)",
            ),
            Verdict::Failed => ("FAILED", "; kept for the next run"),
            Verdict::Unreadable => ("UNREADABLE", "; kept"),
            Verdict::OtherSource => (
                "OTHER SOURCE",
                "; kept (replay does not read this source: handle it with that source's own tools, then delete it from the queue)",
            ),
        };
        write!(
            f,
            "entry {} [{}] {}: {tag}: {}{tail}",
            self.number, self.message_id, self.what, self.detail
        )
    }
}

/// Counts over a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    /// Entries taken from the queue.
    pub entries: u64,
    /// Entries replayed and deleted (or, dry run, that would be).
    pub replayed: u64,
    /// Entries with records past retention.
    pub expired: u64,
    /// Entries with records not sent.
    pub failed: u64,
    /// Entries this tool cannot read.
    pub unreadable: u64,
    /// Entries of sources this tool does not read.
    pub other_sources: u64,
    /// Kinesis records sent (dry run: that would be).
    pub records: u64,
    /// S3 messages sent (dry run: all messages that would be).
    pub messages: u64,
    /// Dry run: payloads that would be offloaded.
    pub offloaded: u64,
    /// The run stopped early (Ctrl-C).
    pub interrupted: bool,
    /// The run stopped early on an error: why.
    pub stopped: Option<String>,
}

impl Totals {
    /// Count one entry's verdict.
    pub fn count(&mut self, verdict: Verdict) {
        self.entries += 1;
        match verdict {
            Verdict::Replayed | Verdict::WouldReplay => self.replayed += 1,
            Verdict::Expired(_) => self.expired += 1,
            Verdict::Failed => self.failed += 1,
            Verdict::Unreadable => self.unreadable += 1,
            Verdict::OtherSource => self.other_sources += 1,
        }
    }

    /// Whether everything taken was replayed.
    pub fn clean(&self) -> bool {
        self.expired == 0
            && self.failed == 0
            && self.unreadable == 0
            && self.other_sources == 0
            && !self.interrupted
            && self.stopped.is_none()
    }

    /// The closing line.
    pub fn summary(&self, dry_run: bool) -> String {
        let mut s = format!(
            "replay{}: {} entries: {} {}, {} expired, {} failed, {} unreadable, {} from other sources",
            if dry_run { " (dry run)" } else { "" },
            self.entries,
            self.replayed,
            if dry_run {
                "would be replayed"
            } else {
                "replayed and deleted"
            },
            self.expired,
            self.failed,
            self.unreadable,
            self.other_sources
        );
        if dry_run {
            s.push_str(&format!(
                "; would send {} Kinesis records, {} messages in all ({} offloaded to S3); nothing sent, nothing deleted",
                self.records, self.messages, self.offloaded
            ));
        } else {
            s.push_str(&format!(
                "; sent {} Kinesis records and {} S3 messages",
                self.records, self.messages
            ));
        }
        if self.interrupted {
            s.push_str("; INTERRUPTED: entries not finished stay in the queue");
        }
        if let Some(why) = &self.stopped {
            s.push_str(&format!(
                "; STOPPED: {why}; entries not taken or not finished stay in the queue"
            ));
        }
        s
    }
}

/// The progress bar (hidden unless standard error is a terminal).
#[derive(Debug, Clone)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar over `entries` (the queue's approximate count, or the limit).
    pub fn new(entries: u64) -> Self {
        let bar = ProgressBar::new(entries);
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} entries  {msg}",
        ) {
            bar.set_style(style);
        }
        Progress { bar }
    }

    /// Print a line without breaking the bar.
    pub fn println(&self, line: &str) {
        self.bar.suspend(|| println!("{line}"));
    }

    /// One more entry done.
    pub fn entry_done(&self) {
        self.bar.inc(1);
        if self.bar.position() > self.bar.length().unwrap_or(0) {
            self.bar.set_length(self.bar.position());
        }
    }

    /// What the current entry is doing.
    pub fn status(&self, msg: String) {
        self.bar.set_message(msg);
    }

    /// Remove the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_what_happened_and_whether_the_entry_stays() {
        let line = |verdict| EntryLine {
            number: 2,
            message_id: "m-1".into(),
            what: "kinesis s shardId-0 1..9".into(),
            verdict,
            detail: "sent 9 of 9 records".into(),
        };
        assert_eq!(
            line(Verdict::Replayed).to_string(),
            "entry 2 [m-1] kinesis s shardId-0 1..9: replayed: sent 9 of 9 records; deleted"
        );
        assert!(
            line(Verdict::Expired(Expiry::Kept))
                .to_string()
                .contains(": EXPIRED: sent 9 of 9 records; kept (run with --delete-expired")
        );
        assert!(
            line(Verdict::Expired(Expiry::Narrowed))
                .to_string()
                .contains(": EXPIRED: sent 9 of 9 records; kept, narrowed to what is lost: later runs report it and send nothing again (run with --delete-expired")
        );
        assert!(line(Verdict::OtherSource).to_string().contains(
            ": OTHER SOURCE: sent 9 of 9 records; kept (replay does not read this source"
        ));
        assert!(
            line(Verdict::Failed)
                .to_string()
                .ends_with("; kept for the next run")
        );
    }

    #[test]
    fn totals_count_and_summarise() {
        let mut t = Totals::default();
        for v in [
            Verdict::Replayed,
            Verdict::Expired(Expiry::Narrowed),
            Verdict::Failed,
            Verdict::Unreadable,
            Verdict::Replayed,
            Verdict::OtherSource,
        ] {
            t.count(v);
        }
        t.records = 40;
        t.messages = 3;
        assert_eq!(
            t.summary(false),
            "replay: 6 entries: 2 replayed and deleted, 1 expired, 1 failed, 1 unreadable, 1 from other sources; sent 40 Kinesis records and 3 S3 messages"
        );
        assert!(!t.clean());
        let mut other = Totals::default();
        other.count(Verdict::OtherSource);
        assert!(
            !other.clean(),
            "an entry of another source stays: not clean"
        );
        let stopped = Totals {
            stopped: Some(
                "cannot read the on-failure queue: ReceiveMessage on q: Timeout: no answer".into(),
            ),
            ..Totals::default()
        };
        assert!(!stopped.clean(), "a run stopped on an error is not clean");
        assert!(
            stopped.summary(false).ends_with(
                "; STOPPED: cannot read the on-failure queue: ReceiveMessage on q: Timeout: no answer; entries not taken or not finished stay in the queue"
            ),
            "{}",
            stopped.summary(false)
        );
        let mut clean = Totals::default();
        clean.count(Verdict::WouldReplay);
        assert!(clean.clean());
        assert!(
            clean
                .summary(true)
                .starts_with("replay (dry run): 1 entries: 1 would be replayed")
        );
    }
}
