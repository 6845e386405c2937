//! The root certificates the direct client trusts for `https`: the
//! system's, read once per process.
//!
//! rustls-native-certs, which hyper-rustls's `with_native_roots` asks, reads
//! the system's bundle file and then every file of the certificate
//! directories (`/etc/ssl/certs`, `/etc/pki/tls/certs`), and decodes them with
//! a constant-time base64 decoder: on a Debian host 17.6 million
//! instructions, most of a cold start's (bench/results/profile-init.md), for
//! the same certificates twice (the directory holds the bundle's
//! certificates one per file, deduplicated afterwards). A Lambda image has
//! one bundle (`/etc/pki/tls/certs/ca-bundle.crt`, which its directories
//! only link to), and root certificates are public, so nothing is gained by
//! decoding them in constant time. So:
//!
//! * with `SSL_CERT_FILE` or `SSL_CERT_DIR` set, the roots are read as
//!   before, by rustls-native-certs (those files and directories only);
//! * otherwise the bundle file OpenSSL's probe finds (the first of the
//!   usual places that exists, as rustls-native-certs finds it) is read
//!   alone and its `CERTIFICATE` blocks decoded here; a certificate only in
//!   a directory and not in the bundle (one added without
//!   `update-ca-certificates` or `update-ca-trust`) is not trusted;
//! * without a bundle file, rustls-native-certs reads the directories, as
//!   before.
//!
//! A block that does not decode, or a certificate that does not parse, is
//! left out and counted in a warning; no root at all is an error, as with
//! `with_native_roots`. The roots are read once per process and shared by
//! every direct client (one per target queue).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use base64::Engine;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;

/// The roots read by the first successful [`system`].
static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();

const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
const END: &[u8] = b"-----END CERTIFICATE-----";

/// The system's root certificates (module docs), or why there are none.
pub(super) fn system() -> Result<Arc<RootCertStore>, String> {
    if let Some(roots) = ROOTS.get() {
        return Ok(roots.clone());
    }
    let explicit = ["SSL_CERT_FILE", "SSL_CERT_DIR"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|p| !p.is_empty()));
    let bundle = if explicit {
        None
    } else {
        openssl_probe::probe().cert_file
    };
    let roots = match bundle {
        Some(path) => from_bundle(&path)?,
        None => from_native_certs()?,
    };
    Ok(ROOTS.get_or_init(|| Arc::new(roots)).clone())
}

/// The certificates of one PEM bundle file.
fn from_bundle(path: &Path) -> Result<RootCertStore, String> {
    let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (ders, undecodable) = pem_certificates(&text);
    let (roots, invalid) = store(ders);
    if undecodable + invalid > 0 {
        tracing::warn!(
            bundle = %path.display(), undecodable, invalid, valid = roots.len(),
            "SQS_CLIENT=direct: some root certificates of the bundle were left out"
        );
    }
    if roots.is_empty() {
        return Err(format!(
            "no valid root certificate in {} ({undecodable} undecodable, {invalid} invalid)",
            path.display()
        ));
    }
    Ok(roots)
}

/// The certificates rustls-native-certs finds (`SSL_CERT_FILE`,
/// `SSL_CERT_DIR`, or the certificate directories).
fn from_native_certs() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    if !found.errors.is_empty() {
        tracing::warn!(errors = ?found.errors, "SQS_CLIENT=direct: errors loading the system's root certificates");
    }
    if found.certs.is_empty() {
        return Err(format!(
            "no native root CA certificates found (errors: {:?})",
            found.errors
        ));
    }
    let (roots, invalid) = store(found.certs);
    if roots.is_empty() {
        return Err(format!(
            "no valid native root CA certificates found ({invalid} invalid)"
        ));
    }
    Ok(roots)
}

/// A store of the certificates that parse as trust anchors, and how many
/// did not.
fn store(ders: Vec<CertificateDer<'static>>) -> (RootCertStore, usize) {
    let mut roots = RootCertStore::empty();
    let (_, invalid) = roots.add_parsable_certificates(ders);
    (roots, invalid)
}

/// The DER of every `CERTIFICATE` block of a PEM text (other blocks, such
/// as `TRUSTED CERTIFICATE`, and text between blocks are skipped), and the
/// number of blocks whose base64 did not decode or that had no end line.
fn pem_certificates(text: &[u8]) -> (Vec<CertificateDer<'static>>, usize) {
    let begin = memchr::memmem::Finder::new(BEGIN);
    let end = memchr::memmem::Finder::new(END);
    let mut out = Vec::new();
    let mut bad = 0;
    let mut rest = text;
    let mut base64 = Vec::with_capacity(4096);
    while let Some(at) = begin.find(rest) {
        let after = rest.get(at + BEGIN.len()..).unwrap_or_default();
        let Some(stop) = end.find(after) else {
            bad += 1;
            break;
        };
        let body = after.get(..stop).unwrap_or_default();
        // The block's lines, each without its surrounding whitespace (line
        // breaks, `\r`), put together and decoded at once.
        base64.clear();
        let mut from = 0;
        for newline in memchr::memchr_iter(b'\n', body).chain([body.len()]) {
            if let Some(line) = body.get(from..newline) {
                base64.extend_from_slice(line.trim_ascii());
            }
            from = newline + 1;
        }
        match base64::engine::general_purpose::STANDARD.decode(&base64) {
            Ok(der) if !der.is_empty() => out.push(CertificateDer::from(der)),
            _ => bad += 1,
        }
        rest = after.get(stop + END.len()..).unwrap_or_default();
    }
    (out, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = "-----BEGIN CERTIFICATE-----\nAAEC\nAwQF\n-----END CERTIFICATE-----\n";

    #[test]
    fn certificate_blocks_are_decoded_and_others_skipped() {
        let text = format!(
            "# comment\n{ONE}-----BEGIN TRUSTED CERTIFICATE-----\nBgcI\n-----END TRUSTED CERTIFICATE-----\r\n\
             -----BEGIN CERTIFICATE-----\r\nCQoL\r\n-----END CERTIFICATE-----\r\n"
        );
        let (ders, bad) = pem_certificates(text.as_bytes());
        let ders: Vec<&[u8]> = ders.iter().map(|d| d.as_ref()).collect();
        assert_eq!(ders, [&[0u8, 1, 2, 3, 4, 5][..], &[9, 10, 11][..]]);
        assert_eq!(bad, 0);
    }

    #[test]
    fn broken_blocks_are_counted_not_kept() {
        let text = format!(
            "-----BEGIN CERTIFICATE-----\n!!notbase64\n-----END CERTIFICATE-----\n{ONE}-----BEGIN CERTIFICATE-----\nAAEC"
        );
        let (ders, bad) = pem_certificates(text.as_bytes());
        assert_eq!(ders.len(), 1);
        assert_eq!(bad, 2);
        assert_eq!(pem_certificates(b"").0.len(), 0);
    }

    /// The bundle read here holds the certificates rustls-pki-types's own
    /// PEM reader finds in it (this host's bundle, when it has one).
    #[test]
    fn the_system_bundle_reads_as_rustls_pki_types_reads_it() {
        use rustls::pki_types::pem::PemObject;
        let Some(path) = openssl_probe::probe().cert_file else {
            return;
        };
        let text = std::fs::read(&path).expect("the bundle reads");
        let theirs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&text)
            .collect::<Result<_, _>>()
            .expect("the bundle parses");
        let (ours, bad) = pem_certificates(&text);
        assert_eq!(bad, 0);
        assert_eq!(ours, theirs);
        assert!(!ours.is_empty());
    }
}
