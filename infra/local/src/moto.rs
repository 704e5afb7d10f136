//! The AWS emulator: moto in server mode from the project's virtualenv,
//! started on a free port unless `ADTRAIL_MOTO_URLS` (several, taken in
//! turn: one moto server is one Python thread, so the test run spreads its
//! stacks over one server a core) or `AWS_ENDPOINT_URL` names one already
//! running, and the SDK configuration that points every client at it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aws_config::{BehaviorVersion, Region, SdkConfig};

/// A moto server this process started; stopped when dropped.
#[derive(Debug)]
pub struct Moto {
    pub url: String,
    child: Option<Child>,
}

impl Drop for Moto {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The project's virtualenv Python and the moto launcher beside this crate
/// (`infra/moto/server.py`, moto with its transactions made linear-time and
/// thread-safe); `ADTRAIL_PYTHON` overrides the interpreter.
pub fn moto_command() -> (PathBuf, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = std::env::var_os("ADTRAIL_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv/bin/python"));
    (python, root.join("infra/moto/server.py"))
}

#[derive(Debug, thiserror::Error)]
pub enum MotoError {
    #[error("moto_server could not start from {path} (run `make venv` first)")]
    Spawn {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("moto_server did not answer on {0}")]
    NoAnswer(String),
}

impl Moto {
    /// The next of the emulators `ADTRAIL_MOTO_URLS` names, the one
    /// `AWS_ENDPOINT_URL` names, or a new one.
    ///
    /// # Errors
    /// [`MotoError`] when a new server cannot start.
    pub fn ensure() -> Result<Self, MotoError> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let urls: Vec<String> = std::env::var("ADTRAIL_MOTO_URLS")
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        if !urls.is_empty() {
            let i = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % urls.len();
            return Ok(Self {
                url: urls[i].clone(),
                child: None,
            });
        }
        if let Ok(url) = std::env::var("AWS_ENDPOINT_URL") {
            return Ok(Self { url, child: None });
        }
        Self::start()
    }

    /// Starts `moto_server` on a free loopback port and waits for it.
    ///
    /// # Errors
    /// [`MotoError`] when it cannot start or does not answer in 30 s.
    pub fn start() -> Result<Self, MotoError> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(5000);
        let (path, script) = moto_command();
        let child = Command::new(&path)
            .arg(&script)
            .args(["-H", &bind_host(), "-p", &port.to_string()])
            .env("ADTRAIL_MOTO_PARENT", std::process::id().to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| MotoError::Spawn {
                path: path.display().to_string(),
                source,
            })?;
        let url = format!("http://127.0.0.1:{port}");
        let moto = Self {
            url: url.clone(),
            child: Some(child),
        };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(moto);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(MotoError::NoAnswer(url))
    }
}

/// The address the local stack's servers listen on: loopback, unless
/// `ADTRAIL_BIND_HOST` says otherwise (`0.0.0.0` for `sam local`, whose
/// containers reach the host from outside its loopback).
pub fn bind_host() -> String {
    std::env::var("ADTRAIL_BIND_HOST").unwrap_or_else(|_| "127.0.0.1".into())
}

/// An SDK configuration for the emulator at `url`: dummy credentials, one
/// region, no instance metadata lookups.
pub async fn sdk_config(url: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(url)
        .region(Region::new("us-east-1"))
        .http_client(adtrail_http::sdk::client())
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "testing", "testing", None, None, "local",
        ))
        .load()
        .await
}
