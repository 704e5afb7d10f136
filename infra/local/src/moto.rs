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
    /// The server ended before it answered (its own message, such as the
    /// launcher's refusal of an unchecked moto version, is in `said`).
    #[error("moto_server ended ({status}) before it answered: {said}")]
    Exited {
        status: std::process::ExitStatus,
        said: String,
    },
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
    /// Its output goes to `adtrail-moto-<port>.log` in the temporary
    /// folder, as with `make test`'s servers.
    ///
    /// # Errors
    /// [`MotoError`] when it cannot start, ends, or does not answer in 30 s.
    pub fn start() -> Result<Self, MotoError> {
        let (path, script) = moto_command();
        Self::launch(&path, &script)
    }

    fn launch(path: &Path, script: &Path) -> Result<Self, MotoError> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(5000);
        let log_path = std::env::temp_dir().join(format!("adtrail-moto-{port}.log"));
        let spawn_error = |source| MotoError::Spawn {
            path: path.display().to_string(),
            source,
        };
        let log = std::fs::File::create(&log_path).map_err(spawn_error)?;
        let mut child = Command::new(path)
            .arg(script)
            .args(["-H", &bind_host(), "-p", &port.to_string()])
            .env("ADTRAIL_MOTO_PARENT", std::process::id().to_string())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(spawn_error)?;
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(Self {
                    url,
                    child: Some(child),
                });
            }
            if let Ok(Some(status)) = child.try_wait() {
                let said = std::fs::read_to_string(&log_path).unwrap_or_default();
                return Err(MotoError::Exited {
                    status,
                    said: last_lines(&said, 5),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Dropping a `Moto` stops its server; one that never answered too.
        drop(Self {
            url: url.clone(),
            child: Some(child),
        });
        Err(MotoError::NoAnswer(url))
    }
}

/// The last `n` lines of a server's log, for an error that quotes it.
fn last_lines(log: &str, n: usize) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that refuses to start (the launcher's check of moto's
    /// version, say) is reported at once with its own words, not after 30 s
    /// as a server that never answered.
    #[test]
    fn a_server_that_ends_is_reported_with_what_it_said() {
        let dir = std::env::temp_dir().join(format!("adtrail-moto-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("refuse.py");
        std::fs::write(&script, "import sys\nsys.exit('refused: moto 9.9.9')\n").unwrap();
        let started = Instant::now();
        let err = Moto::launch(Path::new("python3"), &script).unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        match err {
            MotoError::Exited { status, said } => {
                assert_eq!(status.code(), Some(1));
                assert_eq!(said, "refused: moto 9.9.9");
            }
            other => panic!("expected Exited, got {other}"),
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn last_lines_keeps_the_end() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b / c");
        assert_eq!(last_lines("only", 5), "only");
        assert_eq!(last_lines("", 5), "");
    }
}
