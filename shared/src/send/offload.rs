//! Claim check: payloads too large for the queue go to S3, and SQS carries a
//! pointer that the Amazon SQS Extended Client libraries (Java and Python)
//! read.
//!
//! Under `OVERSIZE_POLICY=offload`, a message whose size (body plus
//! attributes, as SQS counts it) is above the offload threshold (by default
//! the queue's own message limit), or every message with `OFFLOAD_ALWAYS`,
//! is written to S3 under `OFFLOAD_KEY_PREFIX` + a random UUID, and the SQS
//! message becomes:
//!
//! * body: `["software.amazon.payloadoffloading.PayloadS3Pointer",
//!   {"s3BucketName":"<bucket>","s3Key":"<key>"}]`;
//! * attributes: the message's own (at most nine, the body-encoding marker
//!   included) plus the reserved `ExtendedPayloadSize` (or the legacy
//!   `SQSLargePayloadSize` that the Java client writes by default), a
//!   `Number` holding the payload's size in bytes.
//!
//! The payload stored is the body exactly as it would have gone to SQS: text
//! as is, and binary data base64-encoded with its marker attribute kept on
//! the SQS message. The extended clients read the object back as UTF-8 text
//! and hand it to the consumer as the body, so the consumer sees the same
//! message as if it had not been offloaded.
//!
//! The S3 call sits behind the [`PayloadStore`] trait, like SQS behind
//! [`Transport`](crate::Transport); `S3PayloadStore` (cargo feature `s3`)
//! is the real one.

use std::fmt;

use crate::call::transport::BoxFuture;
use crate::message::Attribute;
use crate::message::encode::Entry;
use crate::message::limits::message_size;
use crate::send::outcome::Failure;

/// The class name the Extended Client libraries put first in a pointer.
pub const POINTER_CLASS: &str = "software.amazon.payloadoffloading.PayloadS3Pointer";
/// The reserved attribute holding the payload's size (current clients).
pub const SIZE_ATTRIBUTE: &str = "ExtendedPayloadSize";
/// The legacy name of the reserved attribute (the Java client's default).
pub const LEGACY_SIZE_ATTRIBUTE: &str = "SQSLargePayloadSize";
/// Attributes an offloaded message keeps besides the reserved one.
pub const MAX_USER_ATTRIBUTES: usize = 9;

/// Which reserved attribute name offloaded messages carry. Readers of both
/// extended clients accept either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SizeAttribute {
    /// `ExtendedPayloadSize`.
    #[default]
    Extended,
    /// `SQSLargePayloadSize`, for consumers on old Java clients.
    Legacy,
}

impl SizeAttribute {
    /// The attribute's name (its configuration word).
    pub fn name(self) -> &'static str {
        match self {
            SizeAttribute::Extended => SIZE_ATTRIBUTE,
            SizeAttribute::Legacy => LEGACY_SIZE_ATTRIBUTE,
        }
    }
}

/// When and how messages are offloaded (used under
/// [`OversizePolicy::Offload`](crate::OversizePolicy::Offload)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffloadSettings {
    /// Messages above this size (body plus attributes) are offloaded;
    /// `None` = the largest message the queue takes. Never above that.
    pub threshold: Option<usize>,
    /// Offload every message, whatever its size.
    pub always: bool,
    /// Put in front of each key (e.g. `payloads/`).
    pub key_prefix: String,
    /// The reserved size attribute's name.
    pub size_attribute: SizeAttribute,
}

impl OffloadSettings {
    /// The threshold in force for a queue whose largest message is `limit`.
    pub fn threshold_for(&self, limit: usize) -> usize {
        self.threshold.map_or(limit, |t| t.min(limit))
    }

    /// Whether a message of `size` bytes goes to S3 under a `limit`.
    pub fn offloads(&self, size: usize, limit: usize) -> bool {
        self.always || size > self.threshold_for(limit)
    }
}

/// Where payloads go: one bucket. The forwarder makes the keys.
pub trait PayloadStore: Send + Sync + fmt::Debug {
    /// The bucket named in pointers.
    fn bucket(&self) -> &str;

    /// Store `payload` under `key`. A failure is reported for the message
    /// (failed-retryable: nothing is lost, the source delivers it again).
    fn put<'a>(&'a self, key: &'a str, payload: String) -> BoxFuture<'a, Result<(), Failure>>;
}

impl<S: PayloadStore + ?Sized> PayloadStore for std::sync::Arc<S> {
    fn bucket(&self) -> &str {
        (**self).bucket()
    }

    fn put<'a>(&'a self, key: &'a str, payload: String) -> BoxFuture<'a, Result<(), Failure>> {
        (**self).put(key, payload)
    }
}

#[derive(serde::Serialize)]
struct Location<'a> {
    #[serde(rename = "s3BucketName")]
    bucket: &'a str,
    #[serde(rename = "s3Key")]
    key: &'a str,
}

/// The body of a pointer message.
pub fn pointer_body(bucket: &str, key: &str) -> String {
    // Serializing a tuple of a string and a struct of two strings cannot fail.
    serde_json::to_string(&(POINTER_CLASS, Location { bucket, key })).unwrap_or_default()
}

/// A new object key: the prefix and a random (v4) UUID.
pub fn new_key(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::new_v4())
}

/// Whether an attribute name is one the extended clients reserve.
pub fn is_reserved(name: &str) -> bool {
    name == SIZE_ATTRIBUTE || name == LEGACY_SIZE_ATTRIBUTE
}

/// The SQS entry that points at `entry`'s body stored under `bucket`/`key`:
/// the pointer body, the entry's attributes plus the reserved size
/// attribute, the same FIFO parameters and delay, sized like any entry.
pub fn pointer_entry(
    entry: &Entry,
    bucket: &str,
    key: &str,
    size_attribute: SizeAttribute,
) -> Result<Entry, Failure> {
    if entry.attributes.len() > MAX_USER_ATTRIBUTES {
        return Err(Failure::permanent(
            crate::send::codes::TOO_MANY_ATTRIBUTES,
            format!(
                "{} attributes{}; a message offloaded to S3 keeps at most {MAX_USER_ATTRIBUTES}, the tenth is {}",
                entry.attributes.len(),
                if entry.encoded {
                    " (with the body-encoding marker)"
                } else {
                    ""
                },
                size_attribute.name()
            ),
        ));
    }
    let body = pointer_body(bucket, key);
    let mut attributes = entry.attributes.clone();
    attributes.push(Attribute::number(size_attribute.name(), entry.body.len()));
    let size = message_size(&body, &attributes);
    Ok(Entry {
        body,
        attributes,
        group_id: entry.group_id.clone(),
        deduplication_id: entry.deduplication_id.clone(),
        delay_seconds: entry.delay_seconds,
        encoded: entry.encoded,
        size,
    })
}

#[cfg(feature = "s3")]
pub use self::s3::{S3PayloadStore, s3_client};

#[cfg(feature = "s3")]
mod s3 {
    use aws_sdk_s3::primitives::ByteStream;

    use super::PayloadStore;
    use crate::call::transport::BoxFuture;
    use crate::send::outcome::Failure;
    use crate::setup::on_first_use::OnFirstUse;

    /// An S3 client for this SDK configuration; `force_path_style` for local
    /// endpoints that do not serve virtual-hosted buckets
    /// (`OFFLOAD_FORCE_PATH_STYLE`). The SDK's standard retries stay on: a
    /// put is bounded by the forwarder's call timeout and deadline.
    pub fn s3_client(sdk: &aws_config::SdkConfig, force_path_style: bool) -> aws_sdk_s3::Client {
        let conf = aws_sdk_s3::config::Builder::from(sdk)
            .force_path_style(force_path_style)
            .build();
        aws_sdk_s3::Client::from_conf(conf)
    }

    /// The real store: `PutObject` with aws-sdk-s3 into one bucket.
    #[derive(Debug, Clone)]
    pub struct S3PayloadStore {
        client: OnFirstUse<aws_sdk_s3::Client>,
        bucket: String,
    }

    impl S3PayloadStore {
        /// A store writing into `bucket` with `client`.
        pub fn new(client: aws_sdk_s3::Client, bucket: impl Into<String>) -> Self {
            S3PayloadStore {
                client: client.into(),
                bucket: bucket.into(),
            }
        }

        /// A store writing into `bucket` with the S3 client of `sdk`
        /// ([`s3_client`]), built on the first put: a start builds no SDK
        /// client ([`OnFirstUse`]), and most invocations offload nothing.
        pub fn on_first_use(
            sdk: &aws_config::SdkConfig,
            force_path_style: bool,
            bucket: impl Into<String>,
        ) -> Self {
            let sdk = sdk.clone();
            S3PayloadStore {
                client: OnFirstUse::new(move || s3_client(&sdk, force_path_style)),
                bucket: bucket.into(),
            }
        }
    }

    impl PayloadStore for S3PayloadStore {
        fn bucket(&self) -> &str {
            &self.bucket
        }

        fn put<'a>(&'a self, key: &'a str, payload: String) -> BoxFuture<'a, Result<(), Failure>> {
            Box::pin(async move {
                self.client
                    .get()
                    .put_object()
                    .bucket(&self.bucket)
                    .key(key)
                    .body(ByteStream::from(payload.into_bytes()))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| {
                        let (code, message) = crate::send::codes::sdk_error_parts(&e);
                        Failure::transient(
                            crate::send::codes::OFFLOAD_FAILED,
                            format!(
                                "PutObject to s3://{}/{key} failed: {code}: {message}",
                                self.bucket
                            ),
                        )
                    })
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::message::encode::{EncodeRules, prepare};

    #[test]
    fn pointer_is_the_extended_client_format() {
        let body = pointer_body("my-bucket", "p/0b7e3c1a-9f3e-4e0c-8a51-1c2d3e4f5a6b");
        assert_eq!(
            body,
            r#"["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"my-bucket","s3Key":"p/0b7e3c1a-9f3e-4e0c-8a51-1c2d3e4f5a6b"}]"#
        );
        let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(v[0], POINTER_CLASS);
        assert_eq!(v[1]["s3BucketName"], "my-bucket");
    }

    #[test]
    fn keys_are_the_prefix_and_a_fresh_uuid() {
        let a = new_key("payloads/");
        let b = new_key("payloads/");
        assert_ne!(a, b);
        let id = a.strip_prefix("payloads/").expect("prefix");
        let parsed = uuid::Uuid::parse_str(id).expect("a UUID");
        assert_eq!(parsed.get_version_num(), 4);
        assert_eq!(id.len(), 36);
    }

    #[test]
    fn pointer_entry_keeps_attributes_and_is_sized_like_any_entry() {
        let message = Message::new(vec![0xFFu8; 3000], 0)
            .attribute(Attribute::string("k", "v"))
            .group_id("g")
            .deduplication_id("d");
        let (_, entry) = prepare(message, &EncodeRules::default());
        let entry = entry.expect("valid");
        assert!(entry.encoded);
        let p = pointer_entry(&entry, "b-1", "k1", SizeAttribute::Extended).expect("fits");
        assert_eq!(p.body, pointer_body("b-1", "k1"));
        let names: Vec<&str> = p.attributes.iter().map(|a| a.name.as_ref()).collect();
        assert_eq!(
            names,
            ["k", "sqs-forwarder.encoding", "ExtendedPayloadSize"]
        );
        let size = &p.attributes[2];
        assert_eq!(size.data_type, "Number");
        assert_eq!(
            size.value,
            crate::AttributeValue::Number(entry.body.len().to_string())
        );
        assert_eq!(p.size, message_size(&p.body, &p.attributes));
        assert_eq!(
            p.size,
            p.body.len() + 1 + 6 + 1 + "sqs-forwarder.encoding".len() + 6 + 6 + 19 + 6 + 4
        );
        assert_eq!(p.group_id.as_deref(), Some("g"));
        assert_eq!(p.deduplication_id.as_deref(), Some("d"));
        let legacy = pointer_entry(&entry, "b-1", "k1", SizeAttribute::Legacy).expect("fits");
        assert_eq!(legacy.attributes[2].name, "SQSLargePayloadSize");
    }

    #[test]
    fn at_most_nine_attributes_ride_with_a_pointer() {
        let mut message = Message::new("x", 0);
        for i in 0..9 {
            message = message.attribute(Attribute::string(format!("a{i}"), "v"));
        }
        let (_, entry) = prepare(message.clone(), &EncodeRules::default());
        assert!(pointer_entry(&entry.expect("valid"), "bkt", "k", SizeAttribute::Extended).is_ok());
        let (_, entry) = prepare(
            message.attribute(Attribute::string("a9", "v")),
            &EncodeRules::default(),
        );
        let e = pointer_entry(&entry.expect("valid"), "bkt", "k", SizeAttribute::Extended)
            .expect_err("ten");
        assert_eq!(e.code, "TooManyAttributes");
        assert!(!e.retryable);
    }

    #[test]
    fn thresholds() {
        let s = OffloadSettings::default();
        assert_eq!(s.threshold_for(1000), 1000);
        assert!(!s.offloads(1000, 1000));
        assert!(s.offloads(1001, 1000));
        let s = OffloadSettings {
            threshold: Some(262_144),
            ..OffloadSettings::default()
        };
        assert_eq!(s.threshold_for(1_048_576), 262_144);
        assert_eq!(s.threshold_for(2048), 2048);
        let s = OffloadSettings {
            always: true,
            ..OffloadSettings::default()
        };
        assert!(s.offloads(1, 1000));
    }

    #[test]
    fn names() {
        assert_eq!(SizeAttribute::Legacy.name(), "SQSLargePayloadSize");
        assert_eq!(SizeAttribute::Extended.name(), "ExtendedPayloadSize");
        assert!(is_reserved("ExtendedPayloadSize") && !is_reserved("extendedpayloadsize"));
    }
}
