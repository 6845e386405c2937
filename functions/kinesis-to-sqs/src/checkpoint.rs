//! From message outcomes to the answer Lambda checkpoints with.
//!
//! With `ReportBatchItemFailures`, Lambda takes the **lowest** sequence number
//! in `batchItemFailures` as the checkpoint and delivers every record from
//! there on again; an empty list means the whole batch is done. So:
//!
//! * a record is done when every message it became was sent (or dropped by
//!   the user's `OVERSIZE_POLICY=drop`); a KPL record with any user record
//!   not sent is not done, as a whole (the identifier is the record's
//!   sequence number; there is no way to name a user record);
//! * every record that is not done is reported, in ascending sequence-number
//!   order, so the lowest of them, where Lambda resumes, comes first however
//!   one reads the list; nothing before it is delivered again, nothing from
//!   it on is skipped;
//! * a record that failed for good because of its content (a retry cannot
//!   help: too large under `OVERSIZE_POLICY=fail`, invalid, a corrupt KPL
//!   aggregate; see [`skippable`]) is reported too unless
//!   `PERMANENT_FAILURES=skip`, which leaves it out with a warning and a
//!   `RecordsSkipped` metric; a permanent failure of the deployment
//!   (`AccessDenied`, a missing queue) is always reported;
//! * a failed record without a sequence number cannot be reported (an empty
//!   `itemIdentifier` fails the batch anyway): the invocation returns an
//!   error, and Lambda retries the whole batch.

use aws_lambda_events::event::streams::{KinesisBatchItemFailure, KinesisEventResponse};
use sqs_forwarder::{Failure, MessageOutcome, Outcome};

use crate::records::{Position, RecordInfo};
use crate::settings::PermanentFailures;

/// What became of one Kinesis record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordOutcome {
    /// Every message it became reached SQS (or was dropped by policy).
    Done,
    /// At least one of its messages did not reach SQS. The failure is a
    /// retryable one if there is any, else one not about the record's
    /// content if there is any, else the first.
    Failed(Failure),
}

/// Why the invocation cannot answer with a partial batch response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// A record that must be delivered again has no sequence number to name it by.
    #[error(
        "record {index} of the batch failed ({code}) and has no sequence number to report; failing the invocation so that Lambda retries the whole batch"
    )]
    NoSequenceNumber {
        /// Its index in the event.
        index: usize,
        /// Why it failed.
        code: String,
    },
}

/// Fold message outcomes into one outcome per record, all at once (tests;
/// the function folds them as they come with a [`Tracker`]).
pub fn record_outcomes(
    records: &[RecordInfo],
    outcomes: &[MessageOutcome<Position>],
) -> Vec<RecordOutcome> {
    let mut tracker = Tracker::new(records);
    for o in outcomes {
        tracker.record(o);
    }
    tracker.finish()
}

/// Folds message outcomes into one outcome per record as they are settled:
/// what a Kinesis answer needs is one state per record, whatever number of
/// messages the records became.
#[derive(Debug, Clone)]
pub struct Tracker {
    outcomes: Vec<RecordOutcome>,
}

impl Tracker {
    /// Every record done, except those found failed before sending.
    pub fn new(records: &[RecordInfo]) -> Self {
        Tracker {
            outcomes: records
                .iter()
                .map(|r| match &r.failure {
                    Some(f) => RecordOutcome::Failed(f.clone()),
                    None => RecordOutcome::Done,
                })
                .collect(),
        }
    }

    /// One message's outcome.
    pub fn record(&mut self, o: &MessageOutcome<Position>) {
        let failure = match &o.outcome {
            Outcome::Sent { .. } | Outcome::Dropped { .. } => return,
            Outcome::Failed(f) => f,
        };
        let Some(slot) = self.outcomes.get_mut(o.position.record) else {
            return;
        };
        match slot {
            RecordOutcome::Done => *slot = RecordOutcome::Failed(failure.clone()),
            RecordOutcome::Failed(existing) if rank(failure) > rank(existing) => {
                *existing = failure.clone();
            }
            RecordOutcome::Failed(_) => {}
        }
    }

    /// One outcome per record, in event order.
    pub fn finish(self) -> Vec<RecordOutcome> {
        self.outcomes
    }
}

/// Which failure speaks for a record: one a retry may fix, then one that is
/// not about the record's content, then the first.
fn rank(f: &Failure) -> u8 {
    match (f.retryable, skippable(f)) {
        (true, _) => 2,
        (false, false) => 1,
        (false, true) => 0,
    }
}

/// Whether `PERMANENT_FAILURES=skip` may skip a record that failed this way:
/// only when the record itself is at fault (its content or size, by the
/// failure's [`Cause`](sqs_forwarder::Cause)). A permanent failure of the
/// deployment (`AccessDenied`, a missing queue, KMS errors, ...) would fail
/// every record alike: skipping it would skip them all, so it is always
/// reported.
pub fn skippable(failure: &Failure) -> bool {
    !failure.retryable && failure.cause.is_message_fault()
}

/// What the answer says, with the counts for logs and metrics.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Answer {
    /// The response for Lambda.
    pub response: KinesisEventResponse,
    /// Records reported for redelivery.
    pub reported: usize,
    /// Records that failed for good and were left out (`PERMANENT_FAILURES=skip`).
    pub skipped: usize,
}

/// The partial batch response for these records.
pub fn answer(
    records: &[RecordInfo],
    outcomes: &[RecordOutcome],
    policy: PermanentFailures,
) -> Result<Answer, AnswerError> {
    let mut failed: Vec<(usize, &str)> = Vec::new();
    let mut skipped = 0;
    for (index, (info, outcome)) in records.iter().zip(outcomes).enumerate() {
        let RecordOutcome::Failed(failure) = outcome else {
            continue;
        };
        if policy == PermanentFailures::Skip && skippable(failure) {
            skipped += 1;
            tracing::warn!(
                record = index,
                sequence_number = %info.sequence_number,
                code = %failure.code,
                reason = %failure.message,
                "skipping a record that failed for good (PERMANENT_FAILURES=skip): it will not be delivered again"
            );
            continue;
        }
        if info.sequence_number.is_empty() {
            return Err(AnswerError::NoSequenceNumber {
                index,
                code: failure.code.clone(),
            });
        }
        failed.push((index, &info.sequence_number));
    }
    // Ascending sequence numbers (compared as numbers), event order for ties.
    failed.sort_by(|a, b| (a.1.len(), a.1).cmp(&(b.1.len(), b.1)).then(a.0.cmp(&b.0)));
    failed.dedup_by(|a, b| a.1 == b.1);
    let mut response = KinesisEventResponse::default();
    for (_, seq) in &failed {
        response.add_failure(*seq);
    }
    Ok(Answer {
        reported: failed.len(),
        skipped,
        response,
    })
}

/// The sequence numbers a response reports, in its order.
pub fn reported(response: &KinesisEventResponse) -> Vec<&str> {
    response
        .batch_item_failures
        .iter()
        .map(|f: &KinesisBatchItemFailure| f.item_identifier.as_deref().unwrap_or(""))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(seq: &str) -> RecordInfo {
        RecordInfo {
            sequence_number: seq.into(),
            failure: None,
            messages: 1,
            aggregated: false,
        }
    }

    fn out(record: usize, sub: Option<u32>, outcome: Outcome) -> MessageOutcome<Position> {
        MessageOutcome {
            position: Position {
                record,
                sub_sequence: sub,
            },
            outcome,
            attempts: 1,
        }
    }

    fn sent() -> Outcome {
        Outcome::Sent {
            message_id: "m".into(),
            sequence_number: None,
        }
    }

    fn transient() -> Outcome {
        Outcome::Failed(Failure::transient("RequestThrottled", "slow down"))
    }

    fn permanent() -> Outcome {
        Outcome::Failed(Failure::permanent("MessageTooLarge", "too big"))
    }

    #[test]
    fn all_sent_or_dropped_is_an_empty_list() {
        let records = vec![info("1"), info("2")];
        let outcomes = vec![
            out(0, None, sent()),
            out(
                1,
                None,
                Outcome::Dropped {
                    reason: "policy".into(),
                },
            ),
        ];
        let r = record_outcomes(&records, &outcomes);
        assert_eq!(r, vec![RecordOutcome::Done, RecordOutcome::Done]);
        let a = answer(&records, &r, PermanentFailures::Report).expect("answer");
        assert!(a.response.batch_item_failures.is_empty());
        assert_eq!((a.reported, a.skipped), (0, 0));
    }

    #[test]
    fn a_kpl_record_with_one_failed_user_record_is_reported_whole() {
        let records = vec![info("10"), info("11")];
        let outcomes = vec![
            out(0, Some(0), sent()),
            out(0, Some(1), transient()),
            out(0, Some(2), sent()),
            out(1, None, sent()),
        ];
        let r = record_outcomes(&records, &outcomes);
        let a = answer(&records, &r, PermanentFailures::Report).expect("answer");
        assert_eq!(reported(&a.response), vec!["10"]);
    }

    #[test]
    fn failures_come_lowest_first_compared_as_numbers() {
        // Event order is shard order; the sort only guards the rule.
        let records = vec![info("100"), info("99"), info("1000"), info("5")];
        let outcomes = vec![
            out(0, None, transient()),
            out(1, None, transient()),
            out(2, None, transient()),
            out(3, None, sent()),
        ];
        let r = record_outcomes(&records, &outcomes);
        let a = answer(&records, &r, PermanentFailures::Report).expect("answer");
        assert_eq!(reported(&a.response), vec!["99", "100", "1000"]);
    }

    #[test]
    fn permanent_failures_are_reported_or_skipped_by_policy() {
        let records = vec![info("1"), info("2"), info("3")];
        let outcomes = vec![
            out(0, None, sent()),
            out(1, None, permanent()),
            out(2, None, transient()),
        ];
        let r = record_outcomes(&records, &outcomes);
        let a = answer(&records, &r, PermanentFailures::Report).expect("answer");
        assert_eq!(reported(&a.response), vec!["2", "3"]);
        let a = answer(&records, &r, PermanentFailures::Skip).expect("answer");
        assert_eq!(reported(&a.response), vec!["3"]);
        assert_eq!((a.reported, a.skipped), (1, 1));
    }

    #[test]
    fn a_retryable_failure_outranks_a_permanent_one_in_the_same_record() {
        let records = vec![info("1")];
        let outcomes = vec![out(0, Some(0), permanent()), out(0, Some(1), transient())];
        let r = record_outcomes(&records, &outcomes);
        assert!(matches!(&r[0], RecordOutcome::Failed(f) if f.retryable));
        // So even under `skip` the record comes back.
        let a = answer(&records, &r, PermanentFailures::Skip).expect("answer");
        assert_eq!(reported(&a.response), vec!["1"]);
    }

    #[test]
    fn failures_of_the_deployment_are_never_skipped() {
        let records = vec![info("1"), info("2")];
        let denied = Outcome::Failed(Failure::permanent("AccessDenied", "no"));
        let outcomes = vec![out(0, None, denied.clone()), out(1, None, denied)];
        let r = record_outcomes(&records, &outcomes);
        let a = answer(&records, &r, PermanentFailures::Skip).expect("answer");
        assert_eq!(reported(&a.response), vec!["1", "2"]);
        assert_eq!(a.skipped, 0);
        // In a KPL record, the deployment's failure speaks for the record.
        let outcomes = vec![
            out(0, Some(0), permanent()),
            out(
                0,
                Some(1),
                Outcome::Failed(Failure::permanent("KmsAccessDenied", "no")),
            ),
            out(1, None, sent()),
        ];
        let r = record_outcomes(&records, &outcomes);
        assert!(matches!(&r[0], RecordOutcome::Failed(f) if f.code == "KmsAccessDenied"));
        let a = answer(&records, &r, PermanentFailures::Skip).expect("answer");
        assert_eq!(reported(&a.response), vec!["1"]);
    }

    #[test]
    fn failures_found_before_sending_count() {
        let mut corrupt = info("7");
        corrupt.failure = Some(Failure::permanent("KplChecksumMismatch", "bad"));
        corrupt.messages = 0;
        let records = vec![corrupt, info("8")];
        let r = record_outcomes(&records, &[out(1, None, sent())]);
        let a = answer(&records, &r, PermanentFailures::Report).expect("answer");
        assert_eq!(reported(&a.response), vec!["7"]);
    }

    #[test]
    fn a_failed_record_without_sequence_number_fails_the_invocation() {
        let records = vec![info("1"), info("")];
        let r = record_outcomes(&records, &[out(0, None, sent()), out(1, None, transient())]);
        let e = answer(&records, &r, PermanentFailures::Report).expect_err("no id");
        assert_eq!(
            e,
            AnswerError::NoSequenceNumber {
                index: 1,
                code: "RequestThrottled".into()
            }
        );
        // A done record without one is no problem.
        let r = record_outcomes(&records, &[out(0, None, transient()), out(1, None, sent())]);
        let a = answer(&records, &r, PermanentFailures::Report).expect("answer");
        assert_eq!(reported(&a.response), vec!["1"]);
    }

    #[test]
    fn the_response_serializes_as_lambda_expects() {
        let records = vec![info("42")];
        let r = record_outcomes(&records, &[out(0, None, transient())]);
        let a = answer(&records, &r, PermanentFailures::Report).expect("answer");
        assert_eq!(
            serde_json::to_value(&a.response).expect("json"),
            serde_json::json!({"batchItemFailures": [{"itemIdentifier": "42"}]})
        );
        let empty =
            answer(&records, &[RecordOutcome::Done], PermanentFailures::Report).expect("answer");
        assert_eq!(
            serde_json::to_value(&empty.response).expect("json"),
            serde_json::json!({"batchItemFailures": []})
        );
    }
}
