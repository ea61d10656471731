//! TLS for the HTTP transport (`--tls-cert`, `--tls-key`): the server configuration loaded from
//! PEM files at start, and the handshake of each connection before hyper sees a byte.
//!
//! rustls with the ring provider, TLS 1.3 and 1.2 only (rustls has no older version), ALPN
//! `http/1.1`, no client certificates, no 0-RTT data. The files are the operator's and read
//! once, each capped at [`MAX_TLS_FILE_BYTES`]; what they hold never reaches a message (PEM
//! parse errors can quote a line of the file, so every failure is a fixed [`TlsError`]).
//!
//! The handshake is the peer's and bounded like a first request: it must finish before the
//! connection's first-request deadline, and it runs under the connection slot taken at accept.
//! Layers, from the socket up: `TcpStream` → [`Watched`] (the write watchdog sees the socket's
//! progress, not the plaintext's) → TLS → hyper.

use std::fmt;
use std::io::{self, Read};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use super::write_timeout::Watched;
use crate::limits::{MAX_TLS_BUFFERED_BYTES, MAX_TLS_FILE_BYTES};

/// A TLS server configuration: a certificate chain and its key, checked to match.
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tls { .. }")
    }
}

/// Why the TLS files cannot be used; fixed texts, never what the files hold.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The certificate file could not be opened or read.
    #[error("the TLS certificate file cannot be read ({0:?})")]
    CertUnreadable(io::ErrorKind),
    /// The certificate file is larger than [`MAX_TLS_FILE_BYTES`].
    #[error("the TLS certificate file is larger than {MAX_TLS_FILE_BYTES} bytes")]
    CertTooLarge,
    /// The certificate file holds no well-formed PEM `CERTIFICATE` block.
    #[error("the TLS certificate file holds no PEM certificate")]
    NoCertificate,
    /// The key file could not be opened or read.
    #[error("the TLS key file cannot be read ({0:?})")]
    KeyUnreadable(io::ErrorKind),
    /// The key file is larger than [`MAX_TLS_FILE_BYTES`].
    #[error("the TLS key file is larger than {MAX_TLS_FILE_BYTES} bytes")]
    KeyTooLarge,
    /// The key file holds no PKCS#8, PKCS#1 or SEC1 private key that rustls can use.
    #[error("the TLS key file holds no usable private key (PKCS#8, PKCS#1 or SEC1 PEM)")]
    NoKey,
    /// The key is not the one the first certificate was issued for.
    #[error("the TLS key does not match the certificate")]
    KeyMismatch,
    /// rustls refused the certificate and key for another reason.
    #[error("the TLS certificate and key were refused")]
    Refused,
}

impl Tls {
    /// Reads the certificate chain (`cert`: PEM, the server's certificate first) and its
    /// private key (`key`: PEM) and builds the server configuration.
    ///
    /// # Errors
    ///
    /// A [`TlsError`] saying which file is unusable and why, in fixed words.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let cert_pem = read_capped(cert).map_err(|fault| match fault {
            ReadFault::Io(kind) => TlsError::CertUnreadable(kind),
            ReadFault::TooLarge => TlsError::CertTooLarge,
        })?;
        let key_pem = read_capped(key).map_err(|fault| match fault {
            ReadFault::Io(kind) => TlsError::KeyUnreadable(kind),
            ReadFault::TooLarge => TlsError::KeyTooLarge,
        })?;
        Self::from_pem(&cert_pem, &key_pem)
    }

    /// Builds the configuration from PEM text already read.
    fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<Self, TlsError> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<_, _>>()
            .map_err(|_| TlsError::NoCertificate)?;
        if chain.is_empty() {
            return Err(TlsError::NoCertificate);
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| TlsError::NoKey)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|_| TlsError::Refused)?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|error| match error {
                rustls::Error::InconsistentKeys(_) => TlsError::KeyMismatch,
                rustls::Error::General(_) => TlsError::NoKey,
                _ => TlsError::Refused,
            })?;
        // hyper serves HTTP/1.1 only; a client offering only h2 is refused in the handshake.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }
}

enum ReadFault {
    Io(io::ErrorKind),
    TooLarge,
}

/// The file at `path`, whole, if it holds at most [`MAX_TLS_FILE_BYTES`].
fn read_capped(path: &Path) -> Result<Vec<u8>, ReadFault> {
    let file = std::fs::File::open(path).map_err(|error| ReadFault::Io(error.kind()))?;
    let mut bytes = Vec::new();
    file.take(MAX_TLS_FILE_BYTES.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|error| ReadFault::Io(error.kind()))?;
    if u64::try_from(bytes.len()).map_or(true, |len| len > MAX_TLS_FILE_BYTES) {
        return Err(ReadFault::TooLarge);
    }
    Ok(bytes)
}

/// A connection's byte stream as hyper sees it: the watched socket, or TLS over it.
pub(super) enum Stream<S> {
    /// Plain HTTP.
    Plain(Watched<S>),
    /// HTTPS: the handshake is done.
    Tls(Box<TlsStream<Watched<S>>>),
}

impl<S: AsyncRead + AsyncWrite + Unpin> Stream<S> {
    /// `socket` as hyper's stream: as it is without TLS, else once its handshake completed
    /// before `deadline`. `None` (the connection is to be dropped) when the handshake failed
    /// or did not finish in time; that is the peer's doing, logged at `debug`.
    pub(super) async fn open(
        tls: Option<&Tls>,
        socket: Watched<S>,
        deadline: Instant,
    ) -> Option<Self> {
        let Some(tls) = tls else {
            return Some(Self::Plain(socket));
        };
        match tokio::time::timeout_at(deadline, tls.acceptor.accept(socket)).await {
            Ok(Ok(mut stream)) => {
                stream
                    .get_mut()
                    .1
                    .set_buffer_limit(Some(MAX_TLS_BUFFERED_BYTES));
                Some(Self::Tls(Box::new(stream)))
            }
            Ok(Err(error)) => {
                tracing::debug!(kind = ?error.kind(), "TLS handshake failed");
                None
            }
            Err(_elapsed) => {
                tracing::debug!("connection closed: no TLS handshake within the first deadline");
                None
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Stream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(stream) => Pin::new(stream).poll_read(cx, buf),
            Self::Tls(stream) => Pin::new(stream.as_mut()).poll_read(cx, buf),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Stream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(stream) => Pin::new(stream).poll_write(cx, buf),
            Self::Tls(stream) => Pin::new(stream.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(stream) => Pin::new(stream).poll_write_vectored(cx, bufs),
            Self::Tls(stream) => Pin::new(stream.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Self::Plain(stream) => stream.is_write_vectored(),
            Self::Tls(stream) => stream.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(stream) => Pin::new(stream).poll_flush(cx),
            Self::Tls(stream) => Pin::new(stream.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(stream) => Pin::new(stream).poll_shutdown(cx),
            Self::Tls(stream) => Pin::new(stream.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOT_PEM: &[u8] = b"-----BEGIN PRIVATE KEY-----\nSECRET-BYTES\n";

    #[test]
    fn files_without_pem_are_refused_with_fixed_texts() {
        assert!(matches!(
            Tls::from_pem(b"", b""),
            Err(TlsError::NoCertificate)
        ));
        assert!(matches!(
            Tls::from_pem(NOT_PEM, b""),
            Err(TlsError::NoCertificate)
        ));
        for error in [
            TlsError::NoCertificate,
            TlsError::NoKey,
            TlsError::KeyMismatch,
        ] {
            assert!(!error.to_string().contains("SECRET"));
        }
    }

    #[test]
    fn a_missing_file_names_which_one_and_the_kind_only() {
        let missing = Path::new("/nonexistent/airlock-test/cert.pem");
        assert_eq!(
            Tls::from_pem_files(missing, missing).unwrap_err(),
            TlsError::CertUnreadable(io::ErrorKind::NotFound)
        );
        assert_eq!(
            TlsError::CertUnreadable(io::ErrorKind::NotFound).to_string(),
            "the TLS certificate file cannot be read (NotFound)"
        );
    }
}
