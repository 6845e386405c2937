//! The replay loop: take entries from the on-failure queue one at a time,
//! replay each, delete it only when everything it stands for was sent.
//!
//! An entry taken is hidden from other readers for `--visibility-timeout`.
//! Entries kept (failed, expired, unreadable) stay hidden until the run ends
//! and are then made visible again at once, so one run looks at each entry
//! once and the next run finds them all. A run that is killed deletes
//! nothing it did not finish: its entries come back when their visibility
//! timeout ends, and a second run replays them again (a FIFO target drops
//! the copies of what had already arrived; a standard queue gets them
//! twice, as with any Lambda retry).
//!
//! A range partly past the stream's retention is kept, but narrowed to what
//! is lost once the rest was sent ([`crate::narrow`]): the narrowed entry
//! replaces it, and this run does not take it again.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

use sqs_forwarder::{QueueReader, Received, Transport};

use crate::entry::{self, EntryError, FailureEntry};
use crate::kinesis::{self, RangeOutcome};
use crate::narrow::{self, Narrowed};
use crate::report::{EntryLine, Expiry, Progress, Totals, Verdict};
use crate::s3::{self, EventOutcome};
use crate::stream::{RangeReader, Streams};

/// How a run goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Send nothing, delete nothing; count what would be sent.
    pub dry_run: bool,
    /// Stop after this many entries.
    pub limit: Option<u64>,
    /// Delete entries whose range is past the stream's retention (once
    /// what is left of it was sent).
    pub delete_expired: bool,
    /// How long an entry taken stays hidden from other readers.
    pub visibility: Duration,
    /// Records per `GetRecords` call, and so per replayed page.
    pub records_per_call: i32,
    /// How long to wait for an entry before deciding the queue is empty.
    pub wait: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            dry_run: false,
            limit: None,
            delete_expired: false,
            visibility: Duration::from_secs(300),
            records_per_call: 10_000,
            wait: Duration::from_secs(1),
        }
    }
}

/// What a run works with.
#[derive(Debug)]
pub struct Replayer<T> {
    /// s3-to-sqs's handler, for S3 events.
    pub s3: s3_to_sqs::Handler<T>,
    /// kinesis-to-sqs's handler, for Kinesis ranges (the same forwarder).
    pub kinesis: kinesis_to_sqs::Handler<T>,
    /// Kinesis clients.
    pub streams: Streams,
    /// The on-failure queue.
    pub queue: QueueReader,
    /// How the run goes.
    pub options: Options,
}

/// What replaying one entry gave, before the entry is deleted or kept.
struct Done {
    what: String,
    verdict: Verdict,
    detail: String,
    records: u64,
    messages: u64,
    /// The entry to put in this one's place (narrowed to what is lost).
    narrowed: Option<Narrowed>,
}

impl<T: Transport> Replayer<T> {
    async fn replay_one(&mut self, received: &Received, progress: &Progress) -> Done {
        let entry = match entry::parse(&received.body) {
            Ok(e) => e,
            Err(EntryError::OtherSource(other)) => {
                return Done {
                    what: other.what,
                    verdict: Verdict::OtherSource,
                    detail: other.detail,
                    records: 0,
                    messages: 0,
                    narrowed: None,
                };
            }
            Err(e) => {
                return Done {
                    what: "entry".to_owned(),
                    verdict: Verdict::Unreadable,
                    detail: e.to_string(),
                    records: 0,
                    messages: 0,
                    narrowed: None,
                };
            }
        };
        match entry {
            FailureEntry::Kinesis(range) => {
                let what = format!("kinesis {}{}", range.describe(), range.batch());
                progress.status(format!("reading {}", range.shard_id));
                let client = self.streams.client(range.region());
                let outcome =
                    match RangeReader::open(client, range, self.options.records_per_call).await {
                        Ok(reader) => {
                            let mut sent = 0;
                            kinesis::replay(&self.kinesis, reader, |n| {
                                sent += n;
                                progress.status(format!("{sent} records of this entry sent"));
                            })
                            .await
                        }
                        Err(crate::stream::StreamError::Gone(why)) => RangeOutcome {
                            lost: Some(why),
                            ..RangeOutcome::default()
                        },
                        Err(e) => RangeOutcome {
                            error: Some(e.to_string()),
                            ..RangeOutcome::default()
                        },
                    };
                self.kinesis_done(what, outcome, &received.body)
            }
            FailureEntry::S3(event) => {
                let what = format!(
                    "s3 event{}",
                    event
                        .condition
                        .as_deref()
                        .map(|c| format!(" ({c})"))
                        .unwrap_or_default()
                );
                progress.status("forwarding an S3 event".to_owned());
                match s3::replay(&self.s3, &event).await {
                    EventOutcome::Sent { records, messages } => Done {
                        what,
                        verdict: self.replayed(),
                        detail: format!(
                            "{records} S3 records, {messages} messages {}",
                            self.sent_word()
                        ),
                        records: 0,
                        messages,
                        narrowed: None,
                    },
                    EventOutcome::Failed(why) => Done {
                        what,
                        verdict: Verdict::Failed,
                        detail: why,
                        records: 0,
                        messages: 0,
                        narrowed: None,
                    },
                    EventOutcome::Unreadable(why) => Done {
                        what,
                        verdict: Verdict::Unreadable,
                        detail: why,
                        records: 0,
                        messages: 0,
                        narrowed: None,
                    },
                }
            }
        }
    }

    fn replayed(&self) -> Verdict {
        if self.options.dry_run {
            Verdict::WouldReplay
        } else {
            Verdict::Replayed
        }
    }

    fn sent_word(&self) -> &'static str {
        if self.options.dry_run {
            "would be sent"
        } else {
            "sent"
        }
    }

    fn kinesis_done(&self, what: String, o: RangeOutcome, body: &str) -> Done {
        let mut narrowed = None;
        let mut detail = format!(
            "{} of {} records read from the stream {}",
            o.sent,
            o.read,
            self.sent_word()
        );
        if o.dropped > 0 {
            detail.push_str(&format!(
                " ({} of their messages sent nowhere: left out by the routing rules, or OVERSIZE_POLICY=drop)",
                o.dropped
            ));
        }
        let verdict = if let Some(lost) = &o.lost {
            detail = format!("{lost}; {detail}");
            if let Some((n, first)) = &o.unsent {
                detail.push_str(&format!("; {n} not sent, from {first} on"));
            }
            if let Some(e) = &o.error {
                detail.push_str(&format!("; {e}"));
            }
            let rest_sent = o.unsent.is_none() && o.error.is_none() && !self.options.dry_run;
            if rest_sent && self.options.delete_expired {
                Verdict::Expired(Expiry::Deleted)
            } else {
                // What the stream still had was sent: the entry is to
                // stand for the lost records only (once rewritten).
                if let Some(first) = o.first_kept.as_ref().filter(|_| rest_sent && o.sent > 0) {
                    match narrow::narrow(body, first, o.sent, SystemTime::now()) {
                        Ok(n) => {
                            detail.push_str(&format!(
                                "; narrowed to the records the stream no longer has: {}",
                                n.range
                            ));
                            narrowed = Some(n);
                        }
                        Err(e) => detail.push_str(&format!(
                            "; cannot narrow the entry to what is lost ({e}): the next run sends what the stream still has of it again"
                        )),
                    }
                }
                Verdict::Expired(Expiry::Kept)
            }
        } else if o.complete() {
            self.replayed()
        } else {
            if let Some((n, first)) = &o.unsent {
                let why = o.reason.as_deref().map_or_else(
                    || " (the reasons are in the log lines above)".to_owned(),
                    |r| format!("; the first: {r}"),
                );
                detail.push_str(&format!(
                    "; {n} not sent, from sequence number {first} on{why}"
                ));
            }
            if let Some(e) = &o.error {
                detail.push_str(&format!("; stopped: {e}"));
            }
            Verdict::Failed
        };
        Done {
            what,
            verdict,
            detail,
            records: o.sent,
            messages: 0,
            narrowed,
        }
    }

    /// Work through the queue until it has no entry left that this run has
    /// not seen, the limit is reached, or `stop` completes (Ctrl-C). `out`
    /// gets each entry's line.
    pub async fn run(
        &mut self,
        progress: &Progress,
        stop: impl std::future::Future<Output = ()>,
        mut out: impl FnMut(&EntryLine),
    ) -> Totals {
        let mut totals = Totals::default();
        // Entries kept hidden until the end: message id -> latest handle.
        let mut kept: HashMap<String, String> = HashMap::new();
        let mut seen: HashSet<String> = HashSet::new();
        tokio::pin!(stop);
        loop {
            if self.options.limit.is_some_and(|l| totals.entries >= l) {
                break;
            }
            let step = self
                .queue
                .receive(1, self.options.visibility, self.options.wait);
            let received = tokio::select! {
                r = step => r,
                () = &mut stop => { totals.interrupted = true; break; }
            };
            let received = match received {
                Ok(received) => received,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the on-failure queue");
                    totals.stopped = Some(format!("cannot read the on-failure queue: {e}"));
                    break;
                }
            };
            let Some(received) = received.into_iter().next() else {
                break; // nothing visible: done
            };
            if seen.contains(&received.message_id) {
                // Its visibility ran out while this run went on: hide it
                // again, it was reported already.
                if let Err(e) = self
                    .queue
                    .hide(&received.receipt_handle, self.options.visibility)
                    .await
                {
                    tracing::warn!(error = %e, "cannot hide an entry seen already");
                }
                kept.insert(received.message_id.clone(), received.receipt_handle.clone());
                continue;
            }
            seen.insert(received.message_id.clone());
            let done = tokio::select! {
                d = self.replay_one(&received, progress) => d,
                () = &mut stop => {
                    totals.interrupted = true;
                    kept.insert(received.message_id.clone(), received.receipt_handle.clone());
                    break;
                }
            };
            let delete = matches!(
                done.verdict,
                Verdict::Replayed | Verdict::Expired(Expiry::Deleted)
            );
            let mut line = EntryLine {
                number: totals.entries + 1,
                message_id: received.message_id.clone(),
                what: done.what,
                verdict: done.verdict,
                detail: done.detail,
            };
            if let Some(narrowed) = &done.narrowed {
                match narrow::rewrite(&self.queue, &received.receipt_handle, narrowed).await {
                    Ok(id) => {
                        // Not to be taken again by this run.
                        seen.insert(id);
                        line.verdict = Verdict::Expired(Expiry::Narrowed);
                    }
                    Err((written, e)) => {
                        seen.extend(written);
                        line.detail.push_str(&format!("; {e}"));
                        kept.insert(received.message_id.clone(), received.receipt_handle.clone());
                    }
                }
            } else if delete {
                if let Err(e) = self.queue.delete(&received.receipt_handle).await {
                    // Everything was sent; the entry comes back and a later
                    // run sends it again.
                    line.verdict = Verdict::Failed;
                    line.detail
                        .push_str(&format!("; but the entry could not be deleted: {e}"));
                    kept.insert(received.message_id.clone(), received.receipt_handle.clone());
                }
            } else {
                kept.insert(received.message_id.clone(), received.receipt_handle.clone());
            }
            totals.count(line.verdict);
            totals.records += done.records;
            totals.messages += done.messages;
            progress.entry_done();
            out(&line);
        }
        // Make what stays visible again for the next run.
        for handle in kept.values() {
            if let Err(e) = self.queue.release(handle).await {
                tracing::warn!(error = %e, "cannot make a kept entry visible again; it returns when its visibility timeout ends");
            }
        }
        totals
    }
}
