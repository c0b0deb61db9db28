//! TLS for `https://` servers: rustls with the ring provider, the platform's root certificates
//! (webpki-roots when the machine has none), and a server's own `caFile` for a private CA.
//!
//! The HTTP client of a remote server (its MCP requests and its OAuth requests alike,
//! `http_client/`) is built on this configuration, so every request to that server trusts the
//! same roots. The platform's roots are read once
//! per daemon: reading the system bundle costs milliseconds and it does not change under us.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::{self, RootCertStore};

/// Why a server's HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The `caFile` could not be read or holds no certificate.
    #[error("caFile {path}: {reason}; expected a readable PEM file with at least one certificate")]
    CaFile {
        /// The file as configured.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// rustls refused the configuration (not expected with the ring provider).
    #[error("cannot set up TLS: {0}")]
    Setup(String),
}

/// The platform's root certificates, or Mozilla's (webpki-roots) when the system has no bundle.
fn platform_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let loaded = rustls_native_certs::load_native_certs();
        if !loaded.errors.is_empty() {
            tracing::debug!(
                errors = loaded.errors.len(),
                "some system certificates were unreadable"
            );
        }
        loaded.certs
    })
}

/// The certificates of a PEM file.
fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let error = |reason: String| TlsError::CaFile {
        path: path.to_owned(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|err| error(format!("cannot read it ({err})")))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| error(format!("is not valid PEM ({err})")))?;
    if certs.is_empty() {
        return Err(error("holds no \"BEGIN CERTIFICATE\" block".to_owned()));
    }
    Ok(certs)
}

/// The rustls configuration for one server: the platform's roots plus its `caFile`'s.
pub(crate) fn client_config(ca_file: Option<&Path>) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = RootCertStore::empty();
    let platform = platform_roots();
    if platform.is_empty() {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    } else {
        // A malformed system certificate is skipped, as every TLS client does.
        let _ = roots.add_parsable_certificates(platform.iter().cloned());
    }
    if let Some(path) = ca_file {
        for cert in read_ca_file(path)? {
            roots.add(cert).map_err(|err| TlsError::CaFile {
                path: path.to_owned(),
                reason: format!("holds a certificate rustls cannot use ({err})"),
            })?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| TlsError::Setup(err.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// The rustls certificate error somewhere in `error`'s chain, worded for a person, if there is
/// one: "the certificate is signed by an unknown issuer", for instance.
pub(crate) fn certificate_problem(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(error);
    while let Some(current) = next {
        if let Some(rustls::Error::InvalidCertificate(problem)) =
            current.downcast_ref::<rustls::Error>()
        {
            return Some(describe(problem));
        }
        // hyper-util boxes the rustls error inside an io::Error, itself inside another,
        // and io::Error's `source` skips the error it wraps: look inside each one.
        if let Some(io) = current.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(problem) = certificate_problem(inner)
        {
            return Some(problem);
        }
        next = current.source();
    }
    None
}

fn describe(problem: &rustls::CertificateError) -> String {
    use rustls::CertificateError as E;
    match problem {
        E::UnknownIssuer => {
            "it is signed by an unknown issuer (self-signed or a private CA)".into()
        }
        E::Expired | E::ExpiredContext { .. } => "it has expired".into(),
        E::NotValidForName | E::NotValidForNameContext { .. } => {
            "it is not valid for this host name".into()
        }
        other => format!("{other:?}"),
    }
}

/// The message for a server whose certificate was refused: what happened and the option that fixes
/// a private CA.
pub(crate) fn untrusted_message(problem: &str) -> String {
    format!(
        "the server's TLS certificate is not trusted: {problem}; if the server uses a private or \
         self-signed CA, set \"caFile\" in its config to that CA's PEM certificate"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_ca_file_is_named_with_what_was_expected() {
        let err = client_config(Some(Path::new("/nonexistent/ca.pem"))).unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with("caFile /nonexistent/ca.pem: cannot read it"),
            "{message}"
        );
        assert!(
            message.contains("expected a readable PEM file"),
            "{message}"
        );
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused() {
        let dir = std::env::temp_dir().join(format!("tls-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("empty.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let message = client_config(Some(&path)).unwrap_err().to_string();
        assert!(
            message.contains("holds no \"BEGIN CERTIFICATE\" block"),
            "{message}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn certificate_errors_are_found_inside_io_errors() {
        let rustls_error =
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::other(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls_error,
        ));
        let problem = certificate_problem(&io).unwrap();
        assert!(problem.contains("unknown issuer"), "{problem}");
        assert!(untrusted_message(&problem).contains("\"caFile\""));
        assert_eq!(certificate_problem(&std::io::Error::other("reset")), None);
    }
}
