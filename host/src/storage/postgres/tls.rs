//! TLS to Postgres (issue 43) with libpq's `sslmode` semantics, through
//! rustls. Managed Postgres services require or default to TLS, and a
//! database on another machine reached in clear text leaks every memory.
//!
//! The URL's query says it, as libpq reads it:
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `prefer` (the default) | if the server offers it | not checked |
//! | `require` | always | not checked (checked as `verify-ca` when `sslrootcert` is given, as libpq does) |
//! | `verify-ca` | always | signed by a trusted root |
//! | `verify-full` | always | signed by a trusted root and issued for the host name in the URL |
//!
//! `sslrootcert=PATH` names a PEM file of trusted roots; `sslrootcert=system`
//! (or none) the system's store (`/etc/ssl/certs`), after libpq's own
//! `~/.postgresql/root.crt` when that file exists.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use anyhow::{Context, bail};
use postgres::config::SslMode;
use postgres::{Client, NoTls};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// libpq's `sslmode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    fn parse(s: &str) -> anyhow::Result<Self> {
        Ok(match s {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            // libpq's `allow` tries clear text first: a server that offers
            // both would be reached without TLS, so mnemo does not offer it.
            other => bail!(
                "sslmode={other} is not one of disable, prefer, require, verify-ca, verify-full"
            ),
        })
    }
}

/// What a URL asks for: the driver's configuration (without the two TLS
/// keys it does not know) and how to check the server.
pub struct Target {
    config: postgres::Config,
    mode: Mode,
    root_cert: Option<String>,
}

impl Target {
    pub fn parse(url: &str) -> anyhow::Result<Self> {
        let mut parsed = url::Url::parse(url).context("the database URL is not a URL")?;
        let (mut mode, mut root_cert) = (Mode::Prefer, None);
        let mut rest = Vec::new();
        for (key, value) in parsed.query_pairs() {
            match key.as_ref() {
                "sslmode" => mode = Mode::parse(&value)?,
                "sslrootcert" => root_cert = Some(value.into_owned()),
                _ => rest.push((key.into_owned(), value.into_owned())),
            }
        }
        if rest.is_empty() {
            parsed.set_query(None);
        } else {
            parsed.query_pairs_mut().clear().extend_pairs(rest);
        }
        let mut config =
            postgres::Config::from_str(parsed.as_str()).context("reading the database URL")?;
        config.ssl_mode(match mode {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        });
        // libpq: `require` with a root certificate checks the chain.
        if mode == Mode::Require && root_cert.is_some() {
            mode = Mode::VerifyCa;
        }
        Ok(Self {
            config,
            mode,
            root_cert,
        })
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Opens the connection; a failure says what to change.
    pub fn connect(&self) -> anyhow::Result<Client> {
        let client = match self.mode {
            Mode::Disable => self.config.connect(NoTls),
            _ => self
                .config
                .connect(MakeRustlsConnect::new(self.client_config()?)),
        };
        client.map_err(|e| {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(inner) = source {
                text = format!("{text}: {inner}");
                source = inner.source();
            }
            let hint = hint(self.mode, &text);
            anyhow::Error::new(e).context(hint)
        })
    }

    fn client_config(&self) -> anyhow::Result<ClientConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .context("setting up TLS")?;
        let verifier: Arc<dyn ServerCertVerifier> = match self.mode {
            Mode::Disable | Mode::Prefer | Mode::Require => Arc::new(Unchecked(provider)),
            Mode::VerifyCa | Mode::VerifyFull => {
                let roots = roots(self.root_cert.as_deref())?;
                let chain = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .context("setting up the certificate check")?;
                if self.mode == Mode::VerifyFull {
                    chain
                } else {
                    Arc::new(ChainOnly(chain))
                }
            }
        };
        Ok(builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth())
    }
}

/// Connects to `url` as its `sslmode` says.
pub fn connect(url: &str) -> anyhow::Result<Client> {
    Target::parse(url)?.connect()
}

/// What a failed connection's operator should change, by what failed.
fn hint(mode: Mode, error: &str) -> String {
    let lower = error.to_lowercase();
    if lower.contains("ssl required")
        || lower.contains("no pg_hba.conf entry") && lower.contains("no encryption")
    {
        "the server accepts only TLS connections: set sslmode=require, verify-ca or verify-full"
            .into()
    } else if lower.contains("not valid for name") {
        "the server's certificate was not issued for the host name in the URL (sslmode=verify-full checks it; connect by the name the certificate names)".into()
    } else if lower.contains("unknownissuer") || lower.contains("unknown issuer") {
        "the server's certificate is not signed by a trusted root: give its CA with sslrootcert=PATH".into()
    } else if lower.contains("server does not support tls")
        || lower.contains("server does not support ssl")
    {
        format!(
            "sslmode={} needs TLS, which this server does not offer",
            name(mode)
        )
    } else {
        format!("connecting with sslmode={}", name(mode))
    }
}

fn name(mode: Mode) -> &'static str {
    match mode {
        Mode::Disable => "disable",
        Mode::Prefer => "prefer",
        Mode::Require => "require",
        Mode::VerifyCa => "verify-ca",
        Mode::VerifyFull => "verify-full",
    }
}

/// The trusted roots: a PEM file, or libpq's `~/.postgresql/root.crt`, or
/// the system's store.
fn roots(root_cert: Option<&str>) -> anyhow::Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    let file = match root_cert {
        Some("system") => None,
        Some(path) => Some(PathBuf::from(path)),
        None => std::env::var_os("HOME")
            .map(|home| Path::new(&home).join(".postgresql/root.crt"))
            .filter(|p| p.is_file()),
    };
    match file {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(&path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .with_context(|| format!("reading sslrootcert {}", path.display()))?;
            let (added, _) = store.add_parsable_certificates(certs);
            if added == 0 {
                bail!("sslrootcert {} holds no certificate", path.display());
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                bail!("no trusted root certificates in the system's store: give sslrootcert=PATH");
            }
        }
    }
    Ok(store)
}

/// `prefer` and `require`: encrypted, the certificate not checked (a
/// handshake's signatures still are).
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a trusted root; the name is not
/// checked.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
