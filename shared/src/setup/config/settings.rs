//! What the configuration and the queue make together, once the start-up
//! calls have read the queue: the forwarder's limits, send settings and
//! encoding rules.

use super::Config;
use crate::call::queue::QueueInfo;
use crate::message::encode::EncodeRules;
use crate::message::limits::Limits;
use crate::send::SendSettings;

impl Config {
    /// The limits for this configuration and queue.
    pub fn limits(&self, queue: &QueueInfo) -> Limits {
        let queue_limit = queue
            .max_message_bytes
            .unwrap_or(self.fallback_message_bytes);
        Limits {
            max_entries: self.max_batch_entries,
            max_message_bytes: self
                .max_message_bytes
                .map_or(queue_limit, |c| c.min(queue_limit)),
            max_request_bytes: self.max_batch_bytes,
        }
    }

    /// The sending settings and encoding rules for this configuration and queue.
    pub fn send_settings(&self, queue: &QueueInfo) -> (SendSettings, EncodeRules) {
        (
            SendSettings {
                limits: self.limits(queue),
                max_in_flight: self.max_in_flight,
                max_in_flight_bytes: self.max_in_flight_bytes,
                window: self.window,
                retry: self.retry,
                oversize: self.oversize,
                fifo_order: self.fifo_order,
                call_timeout: self.call_timeout,
                offload: self
                    .offload
                    .as_ref()
                    .map(|o| o.settings.clone())
                    .unwrap_or_default(),
                aggregate: self.aggregate,
            },
            EncodeRules {
                body_encoding: self.body_encoding,
                marker_attribute: self.encoding_attribute.clone(),
                fifo: queue.fifo,
                default_group_id: self.message_group_id.clone(),
                content_based_deduplication: queue.content_based_deduplication,
            },
        )
    }
}
