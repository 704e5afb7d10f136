//! What each function costs as a process: its init time, measured by
//! starting the built binary, and the peak memory of this one.

use std::time::Instant;

use crate::median;

/// Init time of each function's release binary: from spawning it to its
/// first call to the Lambda runtime API (`/runtime/invocation/next`), served
/// here by a listener standing in for Lambda. x86_64 binaries of this
/// machine, so a proxy for Lambda's arm64 init, not the figure itself.
pub(crate) async fn init_times(runs: usize) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    for bin in [
        "adtrail-api",
        "adtrail-dispatcher",
        "adtrail-sync-worker",
        "adtrail-sweeper",
        "adtrail-capi-sender",
        "adtrail-leadgen-worker",
    ] {
        let path = target.join("release").join(bin);
        if !path.exists() {
            println!("init time {bin:<22} not built (cargo build --release --bin {bin})");
            continue;
        }
        let mut samples = vec![];
        for _ in 0..runs {
            let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else {
                continue;
            };
            let Ok(addr) = listener.local_addr() else {
                continue;
            };
            let started = Instant::now();
            let child = tokio::process::Command::new(&path)
                .env_clear()
                .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
                .env("AWS_LAMBDA_FUNCTION_NAME", bin)
                .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
                .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
                .env("AWS_REGION", "us-east-1")
                .env("AWS_ACCESS_KEY_ID", "testing")
                .env("AWS_SECRET_ACCESS_KEY", "testing")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .env("AWS_LC_SYS_NO_JITTER_ENTROPY", "1")
                .env("TABLE_NAME", "t")
                .env("SYNC_QUEUE_URL", "http://127.0.0.1:9/q")
                .env("SEND_QUEUE_URL", "http://127.0.0.1:9/s")
                .env("BUS_NAME", "b")
                .env("KEY_ID", "k")
                .env("THUMBNAIL_BUCKET", "b")
                .env("RUST_LOG", "error")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .kill_on_drop(true)
                .spawn();
            let Ok(mut child) = child else { continue };
            if let Ok(Ok((_stream, _))) =
                tokio::time::timeout(std::time::Duration::from_secs(10), listener.accept()).await
            {
                samples.push(started.elapsed().as_secs_f64() * 1_000.0);
            }
            let _ = child.kill().await;
        }
        if samples.is_empty() {
            println!("init time {bin:<22} no call to the runtime API within 10 s");
        } else {
            println!(
                "init time {bin:<22} {:>6.1} ms to the first runtime API call (median of {}, x86_64 release)",
                median(samples.clone()),
                samples.len()
            );
        }
    }
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
