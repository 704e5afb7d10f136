//! Every HTTPS call a function makes, on one stack: reqwest (hyper 1) over
//! rustls with aws-lc, trusting the Mozilla root program's certificates
//! that `webpki-roots` compiles in.
//!
//! - [`platforms`]: the calls to the ad platforms (Meta's Graph API and
//!   its CDN through `adtrail-meta`, the others through
//!   `adtrail-platforms`), on one client the process builds at its first
//!   call.
//! - [`sdk`]: the AWS SDK's clients, whose HTTP client is this same
//!   reqwest (`adtrail_store::sdk` hands it to them).
//! - [`deadline`]: how long a call to a platform may wait within its
//!   invocation's time.
//!
//! Why one stack of our choosing rather than each library's default:
//! - **Size.** One HTTP client instead of two (the SDK's and reqwest's) is
//!   one copy of the connection code, and one TLS library rather than the
//!   SDK's legacy rustls 0.21 beside reqwest's.
//! - **Cold starts.** Each default reads and parses the system's
//!   certificate bundle, again for every client built (the SDK's clients at
//!   their construction, by design): that parse was most of a function's
//!   init time. The compiled-in roots are ready without reading a file.
//!   The cost is that the roots are those of the build, as they are in
//!   any binary built with `webpki-roots`: a rebuild takes a newer list.
//! - **Post-quantum key exchange.** The handshake offers X25519MLKEM768
//!   first (rustls's `prefer-post-quantum`), then the classical groups
//!   (X25519 among them) for a server without it: what a token or
//!   a hashed e-mail crosses the network under cannot be recorded today
//!   and decrypted by a quantum computer later. Only aws-lc has it among
//!   rustls's providers; ring, which these binaries used before, does not,
//!   and rustls 0.23.48 deprecates its ring provider for that. aws-lc is
//!   about 0.65 MB more of each x86_64 binary than ring (the largest arm64
//!   binary, the api's, is 6.4 MB with it, under the 8 MB budget), and a
//!   few tenths of a millisecond more of each start.

use std::sync::{Arc, OnceLock};

pub mod deadline;
pub mod sdk;

pub use deadline::{Deadline, call_timeout};

/// A client builder on the shared TLS configuration; the caller sets its
/// timeouts and redirect policy ([`platforms`], and the SDK's clients in
/// `sdk.rs`).
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().tls_backend_preconfigured(tls().clone())
}

/// The process's client for the ad platforms, built at its first call and
/// shared after (one connection pool for Meta and the others).
///
/// - **Lazy.** Most of the API's requests call no platform; a client built
///   at start would be init time they all pay. A warm process builds it
///   once.
/// - **No redirects.** No platform's API answers with one; a redirect
///   (from a CDN's thumbnail above all) is an answer, not followed.
/// - **Timeouts per request.** Each caller sets its request's timeout
///   (`RequestBuilder::timeout`): Meta's is configured, the CDN's and the
///   other platforms' are fixed. Connecting is bounded here, at 5 s.
pub fn platforms() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        // Only a TLS backend reqwest does not know fails a build, and the
        // configuration is rustls, always (the test below builds it).
        client_builder()
            .connect_timeout(std::time::Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a reqwest client on the shared rustls configuration")
    })
}

/// The process's TLS client configuration, made at its first use.
fn tls() -> &'static rustls::ClientConfig {
    static CONFIG: OnceLock<rustls::ClientConfig> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("aws-lc offers TLS 1.2 and 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
        // HTTP/1.1 only: reqwest is built without `http2` (see the
        // workspace's Cargo.toml).
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        config
    })
}

/// A server that takes connections and never answers, for the tests of
/// the callers' timeouts: the shared client has none of its own.
#[cfg(feature = "test-util")]
pub fn silent_server() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    addr
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The environment variable that makes the test below its own child.
    const CHILD: &str = "ADTRAIL_FIRST_RANDOM_CHILD";

    /// This process's CPU time so far, in clock ticks (Linux's
    /// `/proc/self/stat`: user and system time, fields 14 and 15).
    fn cpu_ticks() -> Option<u64> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let (_, fields) = stat.rsplit_once(')')?;
        let fields: Vec<&str> = fields.split_whitespace().collect();
        Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
    }

    /// aws-lc's first random bytes in a process (a cold start's first TLS
    /// handshake asks for them) cost the kernel's getrandom, microseconds,
    /// and not CPU-jitter entropy, tens of milliseconds of CPU:
    /// `.cargo/config.toml` turns jitter off. Measured in CPU time, which a
    /// busy machine does not stretch, in a child process of its own, where
    /// nothing asked for random bytes before. A tick is 10 ms; jitter cost
    /// four to seven here.
    #[test]
    fn the_first_random_bytes_come_from_the_kernel() {
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        if std::env::var_os(CHILD).is_some() {
            let before = cpu_ticks().expect("/proc/self/stat");
            let mut bytes = [0u8; 32];
            provider.secure_random.fill(&mut bytes).unwrap();
            let after = cpu_ticks().expect("/proc/self/stat");
            println!("first-random-ticks={}", after - before);
            return;
        }
        if cpu_ticks().is_none() {
            return; // no /proc (a Mac): nothing to measure with
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "tests::the_first_random_bytes_come_from_the_kernel",
            ])
            .args(["--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let ticks: u64 = text
            .split("first-random-ticks=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("the child's answer: {text}"));
        assert!(
            ticks <= 1,
            "the first random bytes took {ticks} ticks of CPU: is AWS_LC_SYS_NO_JITTER_ENTROPY set?"
        );
    }

    #[test]
    fn every_client_shares_one_configuration_on_aws_lc_with_the_mozilla_roots() {
        assert!(std::ptr::eq(tls(), tls()));
        let provider = tls().crypto_provider();
        let suites = |p: &rustls::crypto::CryptoProvider| {
            p.cipher_suites
                .iter()
                .map(|s| s.suite())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            suites(provider),
            suites(&rustls::crypto::aws_lc_rs::default_provider())
        );
        // The hybrid post-quantum group is offered first; the classical
        // groups follow it, for servers that lack the hybrid.
        let groups: Vec<_> = provider.kx_groups.iter().map(|g| g.name()).collect();
        assert_eq!(groups.first(), Some(&rustls::NamedGroup::X25519MLKEM768));
        assert!(groups.contains(&rustls::NamedGroup::X25519));
        assert_eq!(tls().alpn_protocols, [b"http/1.1".to_vec()]);
        client_builder().build().unwrap();
        assert!(std::ptr::eq(platforms(), platforms()));
    }
}
