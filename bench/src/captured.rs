//! The request bodies the stub captured (`GET /__captured?epoch=N`), as the
//! floors read them back.

use bytes::Bytes;

/// Split what `GET /__captured` returns into `(target, body)` pairs.
pub fn parse_captured(mut data: &[u8]) -> Result<Vec<(String, Bytes)>, String> {
    fn take<'a>(data: &mut &'a [u8]) -> Result<&'a [u8], String> {
        if data.len() < 4 {
            return Err("truncated capture".into());
        }
        let (len, rest) = data.split_at(4);
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        if rest.len() < len {
            return Err("truncated capture".into());
        }
        let (item, rest) = rest.split_at(len);
        *data = rest;
        Ok(item)
    }
    let mut out = Vec::new();
    while !data.is_empty() {
        let target = String::from_utf8_lossy(take(&mut data)?).into_owned();
        let body = Bytes::copy_from_slice(take(&mut data)?);
        out.push((target, body));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_bodies_round_trip() {
        let mut data = Vec::new();
        for (t, b) in [
            ("A", &b"{}"[..]),
            ("AmazonSQS.SendMessageBatch", b"{\"x\":1}"),
        ] {
            data.extend_from_slice(&(t.len() as u32).to_le_bytes());
            data.extend_from_slice(t.as_bytes());
            data.extend_from_slice(&(b.len() as u32).to_le_bytes());
            data.extend_from_slice(b);
        }
        let parsed = parse_captured(&data).expect("well formed");
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[1].0, "AmazonSQS.SendMessageBatch");
        assert_eq!(&parsed[1].1[..], b"{\"x\":1}");
        assert!(parse_captured(&data[..data.len() - 1]).is_err());
    }
}
