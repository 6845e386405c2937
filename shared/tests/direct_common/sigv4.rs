//! A SigV4 verifier written from AWS's specification (canonical request,
//! string to sign, derived key), independent of the `aws-sigv4` crate the
//! clients sign with: what SQS checks of a request. Pinned to AWS's
//! published example in `direct_signature.rs`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// One received request, as the verifier sees it.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    /// The path as it came on the wire (percent-encoded).
    pub path: String,
    /// The query as it came on the wire, without `?`.
    pub query: String,
    /// Every header, names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    /// The request as wiremock recorded it.
    pub fn from(r: &wiremock::Request) -> Self {
        Self {
            method: r.method.as_str().to_owned(),
            path: r.url.path().to_owned(),
            query: r.url.query().unwrap_or("").to_owned(),
            headers: r
                .headers
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_ascii_lowercase(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: r.body.clone(),
        }
    }

    /// The first value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// HMAC-SHA256 of `data` under `key`.
pub fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// The hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// RFC 3986 encoding as SigV4 asks: unreserved characters kept, `/` kept
/// when `keep_slash`, every other byte `%XX` in upper case.
pub fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b'/' if keep_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `s` percent-decoded.
pub fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// The canonical request of SigV4 for `r`, signing `signed` (lower-case
/// names, as listed in the `Authorization` header). Services other than S3
/// encode the path once more on top of its wire form.
pub fn canonical_request(r: &Received, signed: &[&str]) -> Result<String, String> {
    let path = if r.path.is_empty() { "/" } else { &r.path };
    let mut query: Vec<(String, String)> = r
        .query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                uri_encode(&percent_decode(k), false),
                uri_encode(&percent_decode(v), false),
            )
        })
        .collect();
    query.sort();
    let query = query
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let mut headers = String::new();
    for name in signed {
        let values: Vec<String> = r
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        if values.is_empty() {
            return Err(format!("signed header {name} is not in the request"));
        }
        headers.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    Ok(format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        r.method,
        uri_encode(path, true),
        query,
        headers,
        signed.join(";"),
        sha256_hex(&r.body)
    ))
}

/// The SigV4 signature of `canonical` at `date_time` in `scope`.
pub fn signature(secret: &str, date_time: &str, scope: &[&str; 4], canonical: &str) -> String {
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{date_time}\n{}\n{}",
        scope.join("/"),
        sha256_hex(canonical.as_bytes())
    );
    let mut key = hmac(format!("AWS4{secret}").as_bytes(), scope[0].as_bytes());
    for part in &scope[1..] {
        key = hmac(&key, part.as_bytes());
    }
    hex::encode(hmac(&key, string_to_sign.as_bytes()))
}

/// What SQS would check of `r`: the `Authorization` header's form and
/// scope, that the host, the date and every `x-amz-*` header are signed,
/// that the date is within the allowed skew of `now`, and the signature.
pub fn verify(
    r: &Received,
    access_key: &str,
    secret: &str,
    region: &str,
    service: &str,
    now: SystemTime,
) -> Result<(), String> {
    let auth = r.header("authorization").ok_or("no authorization header")?;
    let rest = auth
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or("not AWS4-HMAC-SHA256")?;
    let mut credential = None;
    let mut signed = None;
    let mut given = None;
    for part in rest.split(", ") {
        match part.split_once('=') {
            Some(("Credential", v)) => credential = Some(v),
            Some(("SignedHeaders", v)) => signed = Some(v),
            Some(("Signature", v)) => given = Some(v),
            _ => return Err(format!("unexpected part {part:?}")),
        }
    }
    let (credential, signed, given) = (
        credential.ok_or("no Credential")?,
        signed.ok_or("no SignedHeaders")?,
        given.ok_or("no Signature")?,
    );
    let c: Vec<&str> = credential.split('/').collect();
    let [key, date, in_region, in_service, terminator] = c[..] else {
        return Err(format!("credential {credential:?} has not five parts"));
    };
    if key != access_key {
        return Err(format!("access key {key}"));
    }
    if (in_region, in_service, terminator) != (region, service, "aws4_request") {
        return Err(format!("scope {credential}"));
    }
    let date_time = r.header("x-amz-date").ok_or("no x-amz-date")?;
    if !date_time.starts_with(date) || date.len() != 8 {
        return Err(format!(
            "x-amz-date {date_time} outside the scope's day {date}"
        ));
    }
    let signed: Vec<&str> = signed.split(';').collect();
    let mut sorted = signed.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted != signed {
        return Err("SignedHeaders not sorted and unique".into());
    }
    for required in ["host", "x-amz-date"] {
        if !signed.contains(&required) {
            return Err(format!("{required} is not signed"));
        }
    }
    for (name, _) in &r.headers {
        if name.starts_with("x-amz-") && !signed.contains(&name.as_str()) {
            return Err(format!("{name} is sent but not signed"));
        }
    }
    let at = parse_amz_date(date_time).ok_or("x-amz-date not YYYYMMDDTHHMMSSZ")?;
    let skew = now
        .duration_since(at)
        .or_else(|e| Ok::<_, String>(e.duration()))?;
    if skew > Duration::from_secs(300) {
        return Err(format!("x-amz-date {date_time} is {skew:?} from now"));
    }
    let canonical = canonical_request(r, &signed)?;
    let expected = signature(
        secret,
        date_time,
        &[date, region, service, "aws4_request"],
        &canonical,
    );
    if expected != given {
        return Err(format!(
            "signature {given} != {expected}\ncanonical request:\n{canonical}"
        ));
    }
    Ok(())
}

/// `YYYYMMDDTHHMMSSZ` as a time (days from civil date, proleptic Gregorian).
pub fn parse_amz_date(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(4..6)?, n(6..8)?);
    let (hh, mm, ss) = (n(9..11)?, n(11..13)?, n(13..15)?);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3_600 + mm * 60 + ss;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}
