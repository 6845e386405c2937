//! A buffered sink for long-running programs: the forwarder's machinery
//! behind `send(message)`, with the knobs of Flink's SQS sink.
//!
//! Messages are buffered and sent in full batches by a background task. A
//! batch round starts when the buffer holds enough to fill every in-flight
//! call, when its oldest message has waited `max_time_in_buffer`, or on
//! [`SqsSink::flush`]. At most `max_buffered_requests` messages are buffered
//! or in flight: past that, [`SqsSink::send`] waits (backpressure). Each
//! `send` returns a [`Receipt`] that resolves to the message's outcome; with
//! `fail_on_error`, the first failure also makes every later `send` and
//! `flush` return it as an error.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::call::transport::Transport;
use crate::message::Message;
use crate::message::encode::{BodyEncoding, EncodeRules};
use crate::message::limits::{MAX_BATCH_ENTRIES, MAX_MESSAGE_BYTES, MAX_REQUEST_BYTES};
use crate::send::batch::FifoOrder;
use crate::send::offload::{OffloadSettings, PayloadStore};
use crate::send::outcome::{Failure, MessageOutcome, Outcome};
use crate::send::retry::RetryPolicy;
use crate::send::{Forwarder, OversizePolicy, SendSettings};

/// Why the sink refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SinkError {
    /// `fail_on_error` is set and a message failed.
    #[error("a message failed and fail_on_error is set: {0}")]
    Failed(Failure),
    /// The sink's background task has stopped.
    #[error("the sink is closed")]
    Closed,
}

/// The outcome of one message, once it is known.
#[derive(Debug)]
pub struct Receipt<P> {
    rx: oneshot::Receiver<MessageOutcome<P>>,
}

impl<P> Receipt<P> {
    /// Wait for the message's outcome (`None` if the sink was dropped before
    /// the message was settled).
    pub async fn outcome(self) -> Option<MessageOutcome<P>> {
        self.rx.await.ok()
    }
}

enum Command<P> {
    Send(
        Message<P>,
        oneshot::Sender<MessageOutcome<P>>,
        OwnedSemaphorePermit,
    ),
    Flush(oneshot::Sender<()>),
}

/// Builds an [`SqsSink`].
#[derive(Debug, Clone)]
pub struct SqsSinkBuilder<T> {
    transport: T,
    settings: SendSettings,
    rules: EncodeRules,
    max_buffered: usize,
    max_time_in_buffer: Duration,
    fail_on_error: bool,
    store: Option<Arc<dyn PayloadStore>>,
}

impl<T: Transport + 'static> SqsSinkBuilder<T> {
    /// Entries per call, 1..=10 (Flink: `maxBatchSize`).
    pub fn max_batch_size(mut self, n: usize) -> Self {
        self.settings.limits.max_entries = n.clamp(1, MAX_BATCH_ENTRIES);
        self
    }

    /// Calls in flight at once (Flink: `maxInFlightRequests`).
    pub fn max_in_flight_requests(mut self, n: usize) -> Self {
        self.settings.max_in_flight = n.max(1);
        self
    }

    /// Messages buffered or in flight before `send` waits (Flink:
    /// `maxBufferedRequests`).
    pub fn max_buffered_requests(mut self, n: usize) -> Self {
        self.max_buffered = n.max(1);
        self
    }

    /// Bytes per call, at most 1 MiB (Flink: `maxBatchSizeInBytes`).
    pub fn max_batch_size_in_bytes(mut self, n: usize) -> Self {
        self.settings.limits.max_request_bytes = n.clamp(1, MAX_REQUEST_BYTES);
        self
    }

    /// Longest a message waits in the buffer before a background flush
    /// (Flink: `maxTimeInBufferMS`).
    pub fn max_time_in_buffer(mut self, d: Duration) -> Self {
        self.max_time_in_buffer = d;
        self
    }

    /// Largest message, as SQS counts it (Flink: `maxRecordSizeInBytes`);
    /// set it to the queue's `MaximumMessageSize` when that is smaller.
    pub fn max_record_size_in_bytes(mut self, n: usize) -> Self {
        self.settings.limits.max_message_bytes = n.clamp(1, MAX_MESSAGE_BYTES);
        self
    }

    /// Whether a failed message makes later calls fail (Flink: `failOnError`).
    pub fn fail_on_error(mut self, yes: bool) -> Self {
        self.fail_on_error = yes;
        self
    }

    /// Whether the queue is FIFO (required group ids, order kept per group).
    pub fn fifo(mut self, yes: bool) -> Self {
        self.rules.fifo = yes;
        self
    }

    /// Group order within a call on FIFO queues.
    pub fn fifo_order(mut self, order: FifoOrder) -> Self {
        self.settings.fifo_order = order;
        self
    }

    /// Body encoding policy.
    pub fn body_encoding(mut self, policy: BodyEncoding) -> Self {
        self.rules.body_encoding = policy;
        self
    }

    /// Oversize policy.
    pub fn oversize_policy(mut self, policy: OversizePolicy) -> Self {
        self.settings.oversize = policy;
        self
    }

    /// Claim check: messages above the threshold (or all) go to `store`
    /// and SQS gets Extended Client pointers ([`crate::send::offload`]); sets
    /// [`OversizePolicy::Offload`].
    pub fn offload(
        mut self,
        settings: OffloadSettings,
        store: impl PayloadStore + 'static,
    ) -> Self {
        self.settings.oversize = OversizePolicy::Offload;
        self.settings.offload = settings;
        self.store = Some(Arc::new(store));
        self
    }

    /// Retry policy.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.settings.retry = policy;
        self
    }

    /// Start the sink's background task (on the current Tokio runtime).
    pub fn build<P: Send + 'static>(self) -> SqsSink<P> {
        let mut forwarder = Forwarder::new(self.transport, self.settings, self.rules);
        if let Some(store) = self.store {
            forwarder = forwarder.with_payload_store(store);
        }
        let (tx, rx) = mpsc::channel(self.max_buffered);
        let error = Arc::new(Mutex::new(None));
        let task = tokio::spawn(run(
            forwarder,
            rx,
            self.max_time_in_buffer,
            self.fail_on_error.then(|| Arc::clone(&error)),
        ));
        SqsSink {
            tx,
            permits: Arc::new(Semaphore::new(self.max_buffered)),
            error,
            task,
        }
    }
}

/// A buffered, batching sender to one SQS queue. See the module docs.
#[derive(Debug)]
pub struct SqsSink<P> {
    tx: mpsc::Sender<Command<P>>,
    permits: Arc<Semaphore>,
    error: Arc<Mutex<Option<Failure>>>,
    task: JoinHandle<()>,
}

impl SqsSink<()> {
    /// A builder with Flink's defaults where SQS allows them: 10 entries and
    /// 1 MiB per call, 4 calls in flight, 1,000 buffered messages, 5 s in
    /// buffer, 1 MiB per message, fail on error off.
    pub fn builder<T: Transport + 'static>(transport: T) -> SqsSinkBuilder<T> {
        SqsSinkBuilder {
            transport,
            settings: SendSettings::default(),
            rules: EncodeRules::default(),
            max_buffered: 1_000,
            max_time_in_buffer: Duration::from_secs(5),
            fail_on_error: false,
            store: None,
        }
    }
}

impl<P: Send + 'static> SqsSink<P> {
    fn check(&self) -> Result<(), SinkError> {
        match self.error.lock() {
            Ok(e) => e.clone().map_or(Ok(()), |f| Err(SinkError::Failed(f))),
            Err(_) => Err(SinkError::Closed),
        }
    }

    /// Buffer a message; waits while `max_buffered_requests` messages are
    /// buffered or in flight.
    pub async fn send(&self, message: Message<P>) -> Result<Receipt<P>, SinkError> {
        self.check()?;
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| SinkError::Closed)?;
        let (done, rx) = oneshot::channel();
        self.tx
            .send(Command::Send(message, done, permit))
            .await
            .map_err(|_| SinkError::Closed)?;
        Ok(Receipt { rx })
    }

    /// Send everything buffered and wait until every message so far has an
    /// outcome.
    pub async fn flush(&self) -> Result<(), SinkError> {
        let (done, rx) = oneshot::channel();
        self.tx
            .send(Command::Flush(done))
            .await
            .map_err(|_| SinkError::Closed)?;
        rx.await.map_err(|_| SinkError::Closed)?;
        self.check()
    }

    /// Flush and stop the background task.
    pub async fn close(self) -> Result<(), SinkError> {
        let result = self.flush().await;
        drop(self.tx);
        let _ = self.task.await;
        result
    }
}

type Buffered<P> = (
    Message<P>,
    oneshot::Sender<MessageOutcome<P>>,
    OwnedSemaphorePermit,
);

async fn run<T: Transport, P: Send + 'static>(
    forwarder: Forwarder<T>,
    mut rx: mpsc::Receiver<Command<P>>,
    max_time: Duration,
    fail_on_error: Option<Arc<Mutex<Option<Failure>>>>,
) {
    let s = forwarder.settings().clone();
    let round_entries = s.limits.max_entries * s.max_in_flight;
    let round_bytes = s.limits.max_request_bytes.saturating_mul(s.max_in_flight);
    let mut buffer: Vec<Buffered<P>> = Vec::new();
    let mut buffered_bytes = 0usize;
    let mut oldest: Option<Instant> = None;
    loop {
        let timer = oldest.map(|t| t + max_time);
        let cmd = match timer {
            Some(t) => tokio::select! {
                cmd = rx.recv() => Some(cmd),
                _ = tokio::time::sleep_until(t) => None,
            },
            None => Some(rx.recv().await),
        };
        match cmd {
            Some(Some(Command::Send(message, done, permit))) => {
                buffered_bytes += message.body.len();
                buffer.push((message, done, permit));
                oldest.get_or_insert_with(Instant::now);
                if buffer.len() >= round_entries || buffered_bytes >= round_bytes {
                    flush(&forwarder, &mut buffer, fail_on_error.as_ref()).await;
                    buffered_bytes = 0;
                    oldest = None;
                }
            }
            Some(Some(Command::Flush(ack))) => {
                flush(&forwarder, &mut buffer, fail_on_error.as_ref()).await;
                buffered_bytes = 0;
                oldest = None;
                let _ = ack.send(());
            }
            Some(None) => {
                flush(&forwarder, &mut buffer, fail_on_error.as_ref()).await;
                return;
            }
            None => {
                flush(&forwarder, &mut buffer, fail_on_error.as_ref()).await;
                buffered_bytes = 0;
                oldest = None;
            }
        }
    }
}

async fn flush<T: Transport, P: Send + 'static>(
    forwarder: &Forwarder<T>,
    buffer: &mut Vec<Buffered<P>>,
    fail_on_error: Option<&Arc<Mutex<Option<Failure>>>>,
) {
    if buffer.is_empty() {
        return;
    }
    let mut messages = Vec::with_capacity(buffer.len());
    let mut waiters = Vec::with_capacity(buffer.len());
    for (message, done, permit) in buffer.drain(..) {
        messages.push(message);
        waiters.push((done, permit));
    }
    let outcomes = forwarder.send_all(messages, None).await;
    for (outcome, (done, permit)) in outcomes.into_iter().zip(waiters) {
        if let Outcome::Failed(f) = &outcome.outcome {
            tracing::warn!(code = %f.code, retryable = f.retryable, "message failed");
            if let Some(slot) = fail_on_error
                && let Ok(mut e) = slot.lock()
            {
                e.get_or_insert_with(|| f.clone());
            }
        }
        let _ = done.send(outcome);
        drop(permit);
    }
}
