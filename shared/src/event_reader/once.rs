//! Reading the event once: [`ReadOnce`], a layer over the functions' runtime
//! loop ([`super::invocations::run_read_once`]; any
//! `Service<LambdaInvocation>`, lambda_runtime's `Runtime` too), reads the
//! invocation's body as the function's event type before the payload's
//! deserialization does, and hands it over.
//!
//! lambda_runtime reads every payload type from the body with a
//! `serde_path_to_error` reader (a `String` per object key), so the
//! payload types here ([`super::Checked`], apigw-to-sqs's `HttpEvent`) take
//! the event as borrowed raw JSON and read it themselves
//! ([`super::read`]). That costs a pass over every byte of the event that
//! reads nothing: serde_json scans each string of the raw value for its end
//! and checks the whole text is UTF-8, and then the function's reader scans
//! the same strings again. On a Kinesis event of 80 records of 55 KB it was
//! about a tenth of the function's CPU under the 128 MB cap
//! (bench/notes/2026-12-05-reading-the-event-once.md).
//!
//! [`ReadOnce`] sits outside the runtime's deserialization: it reads the
//! body once with the type's own reader ([`ReadEvent::read`]), keeps the
//! result for this invocation, and gives the runtime `null` as the body in
//! its place (the event's bytes are freed before the handler runs, as the
//! runtime frees them). The payload type's `Deserialize` takes the kept
//! event ([`taken`]) and reads the `null`. The runtime calls the layers and
//! its deserialization synchronously, in that order, on one thread, so the
//! event kept is always the one this invocation's body held; a type read
//! without the layer (tests, a function that does not install it) reads the
//! body as before.
//!
//! A body that is not UTF-8 text (Lambda sends JSON, which is) is left to the
//! runtime, which reports it as its deserialization error.

use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::task::{Context, Poll};

use bytes::Bytes;
use lambda_runtime::LambdaInvocation;
use lambda_runtime::tower::{Layer, Service};

/// What the runtime reads in place of the event: any payload type that
/// takes the kept event reads it with `IgnoredAny`.
const PLACEHOLDER: &[u8] = b"null";

thread_local! {
    /// The event [`ReadOnce`] has read for the invocation being
    /// deserialized, until the payload type takes it.
    static KEPT: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

/// An event type read from the invocation's JSON text by the function's own
/// reader, never failing (a malformed event is kept as the type's error
/// value, for the handler to answer).
pub trait ReadEvent: Sized + 'static {
    /// The event read from `json`.
    fn read(json: &str) -> Self;
}

/// The event [`ReadOnce`] read for this invocation, if it read one of type
/// `T`. The payload type's `Deserialize` calls this first, and reads the
/// body (`null`) with `IgnoredAny` when it gets the event
/// ([`super::kept_or_read`] does both).
pub fn taken<T: 'static>() -> Option<T> {
    let kept = KEPT.with(|k| k.borrow_mut().take())?;
    kept.downcast::<T>().ok().map(|event| *event)
}

/// The layer: [`ReadOnce`] around the runtime's service.
pub struct ReadOnceLayer<T>(PhantomData<fn() -> T>);

impl<T> ReadOnceLayer<T> {
    /// The layer for event type `T`.
    pub fn new() -> Self {
        ReadOnceLayer(PhantomData)
    }
}

impl<T> Default for ReadOnceLayer<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S, T> Layer<S> for ReadOnceLayer<T> {
    type Service = ReadOnce<S, T>;
    fn layer(&self, inner: S) -> ReadOnce<S, T> {
        ReadOnce {
            inner,
            event: PhantomData,
        }
    }
}

/// The runtime's service, with each invocation's body read once as a `T`
/// before it.
pub struct ReadOnce<S, T> {
    inner: S,
    event: PhantomData<fn() -> T>,
}

impl<S: Clone, T> Clone for ReadOnce<S, T> {
    fn clone(&self) -> Self {
        ReadOnce {
            inner: self.inner.clone(),
            event: PhantomData,
        }
    }
}

impl<S, T> Service<LambdaInvocation> for ReadOnce<S, T>
where
    S: Service<LambdaInvocation>,
    T: ReadEvent,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut invocation: LambdaInvocation) -> S::Future {
        if let Ok(json) = std::str::from_utf8(&invocation.body) {
            let event = T::read(json);
            KEPT.with(|k| *k.borrow_mut() = Some(Box::new(event)));
            invocation.body = Bytes::from_static(PLACEHOLDER);
        }
        let future = self.inner.call(invocation);
        // Not taken (the runtime answered before deserializing): dropped.
        KEPT.with(|k| k.borrow_mut().take());
        future
    }
}

#[cfg(test)]
mod tests {
    use std::future::{Ready, ready};

    use serde::Deserialize;

    use super::*;
    use crate::event_reader::Checked;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Event {
        #[serde(rename = "Records")]
        records: Vec<Record>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Record {
        data: String,
    }

    /// What the runtime's service does with an invocation: the body it was
    /// given, and the payload read from it as lambda_runtime reads one
    /// (`serde_path_to_error` over `serde_json::from_slice`).
    #[derive(Default)]
    struct Runtime {
        bodies: Vec<Bytes>,
        payloads: Vec<Result<Checked<Event>, String>>,
    }

    impl Service<LambdaInvocation> for Runtime {
        type Response = ();
        type Error = lambda_runtime::Error;
        type Future = Ready<Result<(), lambda_runtime::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, invocation: LambdaInvocation) -> Self::Future {
            let de = &mut serde_json::Deserializer::from_slice(&invocation.body);
            let payload = serde_path_to_error::deserialize::<_, Checked<Event>>(de)
                .map_err(|e| e.to_string());
            self.bodies.push(invocation.body);
            self.payloads.push(payload);
            ready(Ok(()))
        }
    }

    fn invocation(body: &'static [u8]) -> LambdaInvocation {
        LambdaInvocation {
            parts: http::Response::new(()).into_parts().0,
            body: Bytes::from_static(body),
            context: lambda_runtime::Context::default(),
        }
    }

    fn service() -> ReadOnce<Runtime, Checked<Event>> {
        ReadOnceLayer::<Checked<Event>>::new().layer(Runtime::default())
    }

    fn nothing_kept() -> bool {
        KEPT.with(|k| k.borrow().is_none())
    }

    #[test]
    fn the_event_is_read_once_and_handed_to_the_payload_type() {
        let mut s = service();
        drop(s.call(invocation(br#"{"Records":[{"data":"a\"b"},{"data":"c"}]}"#)));
        assert_eq!(s.inner.bodies, [Bytes::from_static(PLACEHOLDER)]);
        let expected = Event {
            records: vec![
                Record {
                    data: "a\"b".into(),
                },
                Record { data: "c".into() },
            ],
        };
        assert_eq!(s.inner.payloads, [Ok(Checked(Ok(expected)))]);
        assert!(nothing_kept());
    }

    #[test]
    fn a_malformed_event_is_kept_as_its_error_naming_the_field() {
        let mut s = service();
        drop(s.call(invocation(br#"{"Records":[{"data":"a"},{"data":7}]}"#)));
        let Some(Ok(Checked(Err(why)))) = s.inner.payloads.pop() else {
            panic!("{:?}", s.inner.payloads)
        };
        assert!(why.starts_with("[Records[1].data] invalid type"), "{why}");
        drop(s.call(invocation(b"{not json")));
        let Some(Ok(Checked(Err(why)))) = s.inner.payloads.pop() else {
            panic!("{:?}", s.inner.payloads)
        };
        assert!(why.contains("key must be a string"), "{why}");
        assert!(nothing_kept());
    }

    #[test]
    fn a_body_that_is_not_utf8_is_left_to_the_runtime() {
        let mut s = service();
        drop(s.call(invocation(b"\"\xff\"")));
        assert_eq!(s.inner.bodies, [Bytes::from_static(b"\"\xff\"")]);
        let Some(Err(why)) = s.inner.payloads.pop() else {
            panic!("{:?}", s.inner.payloads)
        };
        assert!(
            why.contains("invalid unicode") || why.contains("UTF-8"),
            "{why}"
        );
        assert!(nothing_kept());
    }

    #[test]
    fn each_invocation_reads_its_own_event() {
        let mut s = service();
        drop(s.call(invocation(br#"{"Records":[{"data":"first"}]}"#)));
        drop(s.call(invocation(br#"{"Records":[]}"#)));
        let records: Vec<usize> = s
            .inner
            .payloads
            .iter()
            .map(|p| match p {
                Ok(Checked(Ok(e))) => e.records.len(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(records, [1, 0]);
    }

    #[test]
    fn an_event_of_another_type_is_not_taken() {
        KEPT.with(|k| *k.borrow_mut() = Some(Box::new(Checked::<Event>(Err("x".into())))));
        assert!(taken::<Checked<Record>>().is_none());
        assert!(nothing_kept(), "dropped, not left for a later invocation");
        assert!(taken::<Checked<Event>>().is_none());
    }
}
