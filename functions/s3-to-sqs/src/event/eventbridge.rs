//! An S3 event through EventBridge: its source and versions checked, its
//! `detail` read, and its `detail-type` named in the notification
//! vocabulary, so that one filter and one message shape serve both ways.

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqs_forwarder::event_reader::Misread;

use super::{EventError, Incoming, ObjectEvent, TIME_FORMAT, Via, located};

/// The event as `T`, or why not, naming the field at fault
/// (`detail.object: missing field ...`).
fn typed<T: serde::de::DeserializeOwned>(event: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(event).map_err(|e| {
        located(Misread {
            path: Some(e.path().to_string()).filter(|p| p != "."),
            error: e.inner().to_string(),
        })
    })
}

/// `detail` of an S3 event through EventBridge.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
struct Detail {
    #[serde(default)]
    version: Option<String>,
    bucket: DetailBucket,
    object: DetailObject,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    deletion_type: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
struct DetailBucket {
    name: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
struct DetailObject {
    key: String,
    #[serde(default)]
    size: Option<i64>,
    #[serde(default)]
    etag: Option<String>,
    #[serde(default)]
    version_id: Option<String>,
    #[serde(default)]
    sequencer: Option<String>,
}

pub(super) fn parse_eventbridge(event: Value) -> Result<Incoming, EventError> {
    let source = event.get("source").and_then(Value::as_str).unwrap_or("");
    if source != "aws.s3" {
        return Err(EventError::NotS3(format!(
            "an EventBridge event from {source:?}, not aws.s3"
        )));
    }
    for (place, version) in [
        ("EventBridge event", event.get("version")),
        (
            "EventBridge event detail",
            event.get("detail").and_then(|d| d.get("version")),
        ),
    ] {
        match version {
            None => {}
            Some(Value::String(v)) if v == "0" => {}
            Some(v) => {
                return Err(EventError::UnknownVersion {
                    place: place.into(),
                    version: v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                });
            }
        }
    }
    let parsed: EventBridgeEvent<Detail> = typed(event)
        .map_err(|e| EventError::Malformed(format!("not an S3 event from EventBridge: {e}")))?;
    let detail = parsed.detail;
    if detail.bucket.name.is_empty() || detail.object.key.is_empty() {
        return Err(EventError::Malformed(
            "the EventBridge event has an empty bucket name or object key".into(),
        ));
    }
    let event_name = eventbridge_event_name(
        &parsed.detail_type,
        detail.reason.as_deref(),
        detail.deletion_type.as_deref(),
    );
    Ok(Incoming::Objects(vec![ObjectEvent {
        via: Via::EventBridge,
        event_name,
        event_time: parsed.time.map(|t| t.format(TIME_FORMAT).to_string()),
        region: parsed.region,
        bucket: detail.bucket.name,
        key: detail.object.key,
        size: detail.object.size,
        etag: detail.object.etag,
        version_id: detail.object.version_id,
        sequencer: detail.object.sequencer,
        detail_type: Some(parsed.detail_type),
        reason: detail.reason,
    }]))
}

/// The notification event name for an EventBridge `detail-type` (with its
/// `reason` and `deletion-type`), so that filters and consumers see one
/// vocabulary. A detail type this function does not know keeps its own name.
pub fn eventbridge_event_name(
    detail_type: &str,
    reason: Option<&str>,
    deletion_type: Option<&str>,
) -> String {
    let name = match detail_type {
        "Object Created" => match reason {
            Some("PutObject") => "ObjectCreated:Put",
            Some("POST Object") => "ObjectCreated:Post",
            Some("CopyObject") => "ObjectCreated:Copy",
            Some("CompleteMultipartUpload") => "ObjectCreated:CompleteMultipartUpload",
            _ => "ObjectCreated",
        },
        "Object Deleted" => {
            let marker = deletion_type == Some("Delete Marker Created");
            match (reason == Some("Lifecycle Expiration"), marker) {
                (true, true) => "LifecycleExpiration:DeleteMarkerCreated",
                (true, false) => "LifecycleExpiration:Delete",
                (false, true) => "ObjectRemoved:DeleteMarkerCreated",
                (false, false) => "ObjectRemoved:Delete",
            }
        }
        "Object Restore Initiated" => "ObjectRestore:Post",
        "Object Restore Completed" => "ObjectRestore:Completed",
        "Object Restore Expired" => "ObjectRestore:Delete",
        "Object Tags Added" => "ObjectTagging:Put",
        "Object Tags Deleted" => "ObjectTagging:Delete",
        "Object ACL Updated" => "ObjectAcl:Put",
        "Object Storage Class Changed" => "LifecycleTransition",
        "Object Access Tier Changed" => "IntelligentTiering",
        other => other,
    };
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::tests::objects;

    #[test]
    fn sample_eventbridge_created_keeps_the_key_as_is() {
        let o = objects("s3-eventbridge-object-created.json");
        assert_eq!(o.len(), 1);
        let e = &o[0];
        assert_eq!(e.via, Via::EventBridge);
        assert_eq!(e.event_name, "ObjectCreated:Put");
        assert_eq!(e.detail_type.as_deref(), Some("Object Created"));
        assert_eq!(e.reason.as_deref(), Some("PutObject"));
        // Not URL-encoded in EventBridge: a '+' is a '+'.
        assert_eq!(e.key, "exports/2026-11-29/sales+returns é.csv");
        assert_eq!(e.event_time.as_deref(), Some("2026-11-29T10:20:00.000Z"));
        assert_eq!(e.size, Some(1024));
        assert_eq!(e.sequencer.as_deref(), Some("617f08299329d189"));
        assert_eq!(
            e.version_id.as_deref(),
            Some("IYV3p45BT0ac8hjHg1houSdS1a.Mro8e")
        );
    }

    #[test]
    fn sample_eventbridge_deleted() {
        let o = objects("s3-eventbridge-object-deleted.json");
        assert_eq!(o[0].event_name, "ObjectRemoved:DeleteMarkerCreated");
        assert_eq!(o[0].size, None);
    }

    #[test]
    fn eventbridge_names() {
        let n = eventbridge_event_name;
        assert_eq!(
            n("Object Created", Some("CopyObject"), None),
            "ObjectCreated:Copy"
        );
        assert_eq!(n("Object Created", None, None), "ObjectCreated");
        assert_eq!(
            n(
                "Object Deleted",
                Some("DeleteObject"),
                Some("Permanently Deleted")
            ),
            "ObjectRemoved:Delete"
        );
        assert_eq!(
            n(
                "Object Deleted",
                Some("Lifecycle Expiration"),
                Some("Delete Marker Created")
            ),
            "LifecycleExpiration:DeleteMarkerCreated"
        );
        assert_eq!(n("Object Tags Added", None, None), "ObjectTagging:Put");
        assert_eq!(n("Something New", None, None), "Something New");
    }
}
