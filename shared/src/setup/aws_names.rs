//! Pure checks of AWS names, with no I/O and nothing of the forwarder's own:
//! regions, SQS queue URLs, names and account ids, IAM role ARNs and STS
//! session names and external ids, S3 bucket names and key prefixes.
//!
//! [`crate::setup::config`] uses them to refuse a bad value at cold start;
//! [`crate::setup::client`] and [`crate::call::receive`] read a queue URL's region.

/// Whether `name` has the shape of an AWS region name: `us-east-1`,
/// `us-gov-west-1`, `cn-north-1`, `us-isob-east-1`, `eusc-de-east-1`.
pub fn is_region_name(name: &str) -> bool {
    let parts: Vec<&str> = name.split('-').collect();
    let letters = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase());
    match parts.as_slice() {
        [first, middle @ .., number] => {
            (2..=4).contains(&first.len())
                && letters(first)
                && !middle.is_empty()
                && middle.iter().all(letters)
                && (1..=2).contains(&number.len())
                && number.bytes().all(|b| b.is_ascii_digit())
        }
        _ => false,
    }
}

/// The region an SQS queue URL names, read from its host:
///
/// * `sqs.<region>.amazonaws.com`, in every partition (`amazonaws.com.cn`,
///   ...), and the `sqs-fips.<region>` and VPC endpoint
///   (`vpce-….sqs.<region>.vpce.amazonaws.com`) forms;
/// * the legacy `<region>.queue.amazonaws.com`, and `queue.amazonaws.com`
///   (us-east-1).
///
/// `None` when the host names no region, as local endpoints
/// (`http://127.0.0.1:4566/…`) do.
pub fn region_of_queue_url(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.starts_with('[') {
        return None; // an IPv6 literal
    }
    let host = host.split(':').next()?.to_ascii_lowercase();
    let host = host.trim_end_matches('.');
    if host == "queue.amazonaws.com" {
        return Some("us-east-1".into());
    }
    let labels: Vec<&str> = host.split('.').collect();
    if let Some(pair) = labels
        .windows(2)
        .find(|w| matches!(w[0], "sqs" | "sqs-fips") && is_region_name(w[1]))
    {
        return Some(pair[1].to_owned());
    }
    match labels.as_slice() {
        [region, "queue", _, ..] if is_region_name(region) => Some((*region).to_owned()),
        _ => None,
    }
}

/// Whether `url` has the shape of an SQS queue URL: `http(s)://`, and a last
/// path segment (the queue's name) without `:`.
pub fn is_queue_url(url: &str) -> bool {
    (url.starts_with("https://") || url.starts_with("http://"))
        && url
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .is_some_and(|n| !n.is_empty() && !n.contains(':'))
}

/// Whether `name` is a valid SQS queue name: 1..80 of `A-Za-z0-9-_`, with
/// `.fifo` at the end for FIFO queues.
pub fn is_queue_name(name: &str) -> bool {
    let base = name.strip_suffix(".fifo").unwrap_or(name);
    !base.is_empty()
        && name.len() <= 80
        && base
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether `id` is an AWS account id: 12 digits.
pub fn is_account_id(id: &str) -> bool {
    id.len() == 12 && id.bytes().all(|b| b.is_ascii_digit())
}

/// `arn:<partition>:iam::<account>:role/<path and name>`.
pub fn is_role_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let [prefix, partition, service, region, account, resource] = parts[..] else {
        return false;
    };
    let name = resource.strip_prefix("role/").unwrap_or("");
    prefix == "arn"
        && (partition == "aws" || partition.starts_with("aws-"))
        && service == "iam"
        && region.is_empty()
        && is_account_id(account)
        && !name.is_empty()
        && arn.len() <= 2048
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_+=,.@-/".contains(c))
}

/// STS's RoleSessionName characters, `[\w+=,.@-]`.
fn session_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_+=,.@-".contains(c)
}

/// Whether `name` is a session name STS accepts: 2..64 of `A-Za-z0-9_+=,.@-`.
pub fn is_session_name(name: &str) -> bool {
    (2..=64).contains(&name.len()) && name.chars().all(session_char)
}

/// Whether `id` is an external id STS accepts: 2..1224 of
/// `A-Za-z0-9_+=,.@:/-`.
pub fn is_external_id(id: &str) -> bool {
    (2..=1224).contains(&id.len()) && id.chars().all(|c| session_char(c) || c == ':' || c == '/')
}

/// Whether `name` is a valid S3 bucket name (3..63 of lower-case letters,
/// digits, `.` and `-`, starting and ending with a letter or digit).
pub fn is_bucket_name(name: &str) -> bool {
    let b = name.as_bytes();
    (3..=63).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'.' | b'-'))
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && !name.contains("..")
}

/// Whether `prefix` is a usable key prefix: at most 512 of S3's "safe"
/// key characters (`A-Za-z0-9` and `!-_.*'()/`).
pub fn is_key_prefix(prefix: &str) -> bool {
    prefix.len() <= 512
        && prefix.bytes().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'!' | b'-' | b'_' | b'.' | b'*' | b'\'' | b'(' | b')' | b'/'
                )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_from_every_queue_url_form() {
        let cases = [
            (
                "https://sqs.eu-west-3.amazonaws.com/123456789012/q",
                Some("eu-west-3"),
            ),
            (
                "https://sqs.us-east-1.amazonaws.com/123456789012/q.fifo",
                Some("us-east-1"),
            ),
            (
                "https://sqs.us-gov-west-1.amazonaws.com/123456789012/q",
                Some("us-gov-west-1"),
            ),
            (
                "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q",
                Some("cn-north-1"),
            ),
            (
                "https://sqs.cn-northwest-1.amazonaws.com.cn/123456789012/q",
                Some("cn-northwest-1"),
            ),
            (
                "https://sqs.us-iso-east-1.c2s.ic.gov/123456789012/q",
                Some("us-iso-east-1"),
            ),
            (
                "https://sqs.eusc-de-east-1.amazonaws.eu/123456789012/q",
                Some("eusc-de-east-1"),
            ),
            (
                "https://sqs-fips.us-east-2.amazonaws.com/123456789012/q",
                Some("us-east-2"),
            ),
            (
                "https://sqs.ap-southeast-2.api.aws/123456789012/q",
                Some("ap-southeast-2"),
            ),
            (
                "https://vpce-0a1b2c3d-4e5f.sqs.eu-central-1.vpce.amazonaws.com/123456789012/q",
                Some("eu-central-1"),
            ),
            // Legacy forms.
            (
                "https://ap-northeast-1.queue.amazonaws.com/123456789012/q",
                Some("ap-northeast-1"),
            ),
            (
                "https://cn-north-1.queue.amazonaws.com.cn/123456789012/q",
                Some("cn-north-1"),
            ),
            (
                "https://queue.amazonaws.com/123456789012/q",
                Some("us-east-1"),
            ),
            // Case, ports, a trailing dot.
            (
                "HTTPS://SQS.EU-WEST-1.AMAZONAWS.COM/123456789012/Q",
                Some("eu-west-1"),
            ),
            (
                "https://sqs.eu-west-1.amazonaws.com:443/123456789012/q",
                Some("eu-west-1"),
            ),
            (
                "https://sqs.eu-west-1.amazonaws.com./123456789012/q",
                Some("eu-west-1"),
            ),
            // LocalStack's regional host names the region too.
            (
                "http://sqs.eu-west-1.localhost.localstack.cloud:4566/000000000000/q",
                Some("eu-west-1"),
            ),
            // Local endpoints and hosts that name no region.
            ("http://127.0.0.1:4566/123456789012/q", None),
            ("http://localhost:4566/123456789012/q", None),
            ("http://[::1]:4566/123456789012/q", None),
            ("https://sqs.amazonaws.com/123456789012/q", None),
            ("https://queues.example.com/123456789012/q", None),
            (
                "https://sqs.not-a-region.amazonaws.com/123456789012/q",
                None,
            ),
        ];
        for (url, region) in cases {
            assert_eq!(region_of_queue_url(url).as_deref(), region, "{url}");
        }
    }

    #[test]
    fn region_names() {
        for ok in [
            "us-east-1",
            "eu-central-2",
            "ap-southeast-7",
            "us-gov-east-1",
            "cn-north-1",
            "us-isob-east-1",
            "eusc-de-east-1",
            "il-central-1",
        ] {
            assert!(is_region_name(ok), "{ok}");
        }
        for bad in [
            "",
            "us",
            "us-east",
            "us-east-",
            "useast-1",
            "us_east_1",
            "US-EAST-1",
            "us-east-123",
            "u-east-1",
            "local",
        ] {
            assert!(!is_region_name(bad), "{bad}");
        }
    }

    #[test]
    fn bucket_and_key_prefix_names() {
        assert!(is_bucket_name("my-bucket.payloads1"));
        for bad in ["ab", "My-Bucket", "-b-", "b..c", "b_c", &"a".repeat(64)] {
            assert!(!is_bucket_name(bad), "{bad}");
        }
        assert!(is_key_prefix(""));
        assert!(is_key_prefix("kinesis-to-sqs/payloads/"));
        assert!(!is_key_prefix("a b/"));
        assert!(!is_key_prefix("é/"));
    }
}
