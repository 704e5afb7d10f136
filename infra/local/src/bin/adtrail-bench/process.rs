//! What each function costs as a process: its init time, measured by
//! starting the built binary, and the peak memory of this one.

use std::time::Instant;

use crate::median;

/// The functions measured, and the hello world they are compared with.
pub(crate) const FUNCTIONS: [&str; 6] = [
    "adtrail-api",
    "adtrail-dispatcher",
    "adtrail-sync-worker",
    "adtrail-sweeper",
    "adtrail-capi-sender",
    "adtrail-leadgen-worker",
];
pub(crate) const HELLO: &str = "adtrail-hello";

/// Init time of each function's release binary, as a ratio to a hello-world
/// `lambda_runtime` function built with the same profile: from spawning it
/// to its first call to the Lambda runtime API (`/runtime/invocation/next`),
/// served here by a listener standing in for Lambda. The binaries take
/// turns, round after round, and each ratio is the median of the rounds'
/// own ratios (a function's start over the hello world's in the same round),
/// so a burst of the machine's noise falls on both sides of a ratio. A start
/// takes a few milliseconds: at least 41 rounds cost about a second and hold
/// the median still on a shared machine, where 5 did not.
/// The binaries built for this machine (x86_64 on ours): a proxy for
/// Lambda's arm64 init, whose instructions `infra/tools/init-instructions.sh`
/// counts under qemu.
pub(crate) async fn init_times(runs: usize) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let bins: Vec<&str> = std::iter::once(HELLO).chain(FUNCTIONS).collect();
    let rounds = runs.max(INIT_ROUNDS);
    let mut samples: Vec<Vec<f64>> = vec![vec![]; bins.len()];
    let mut ratios: Vec<Vec<f64>> = vec![vec![]; bins.len()];
    for _ in 0..rounds {
        let mut hello = None;
        for (i, bin) in bins.iter().enumerate() {
            let path = target.join("release").join(bin);
            let Some(ms) = init_once(&path, bin).await else {
                continue;
            };
            samples[i].push(ms);
            if i == 0 {
                hello = Some(ms);
            }
            if let Some(h) = hello {
                ratios[i].push(ms / h.max(0.001));
            }
        }
    }
    for ((bin, s), r) in bins.iter().zip(samples).zip(ratios) {
        if s.is_empty() {
            println!(
                "init time {bin:<22} not measured (cargo build --release -p {bin}, or no call to the runtime API within 10 s)"
            );
            continue;
        }
        let ms = median(s.clone());
        let ratio = if r.is_empty() {
            "no hello world to compare".to_string()
        } else {
            format!("{:.2}x the hello world", median(r))
        };
        println!(
            "init time {bin:<22} {ms:>6.1} ms to the first runtime API call, {ratio} (medians of {} rounds, {} release)",
            s.len(),
            std::env::consts::ARCH
        );
    }
}

/// The fewest rounds of starts the init times are the medians of.
const INIT_ROUNDS: usize = 41;

/// One start of `path`: milliseconds to its first runtime API call.
async fn init_once(path: &std::path::Path, bin: &str) -> Option<f64> {
    if !path.exists() {
        return None;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.ok()?;
    let addr = listener.local_addr().ok()?;
    let started = Instant::now();
    let mut child = tokio::process::Command::new(path)
        .env_clear()
        .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", bin)
        .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("TABLE_NAME", "t")
        .env("SYNC_QUEUE_URL", "http://127.0.0.1:9/q")
        .env("SEND_QUEUE_URL", "http://127.0.0.1:9/s")
        .env("LEADGEN_QUEUE_URL", "http://127.0.0.1:9/l")
        .env("BUS_NAME", "b")
        .env("KEY_ID", "k")
        .env("THUMBNAIL_BUCKET", "b")
        .env("RUST_LOG", "error")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let accepted =
        tokio::time::timeout(std::time::Duration::from_secs(10), listener.accept()).await;
    let ms = started.elapsed().as_secs_f64() * 1_000.0;
    let _ = child.kill().await;
    matches!(accepted, Ok(Ok(_))).then_some(ms)
}

pub(crate) fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
