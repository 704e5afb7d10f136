//! The log subscriber every Lambda main installs: lambda_runtime's own
//! (JSON when `AWS_LAMBDA_LOG_FORMAT` says so, the level from
//! `AWS_LAMBDA_LOG_LEVEL` or `RUST_LOG`), with one rule on top: the AWS
//! SDK's wire traces stay off at any level. At TRACE the SDK prints whole
//! request and response bodies, and DynamoDB's carry conversion rows with
//! their contact hashes; those targets are held at DEBUG, which prints no
//! body. The Lambda runtime's own targets are held at INFO: at DEBUG and
//! TRACE they print the raw invocation, with the bearer JWT, pasted tokens,
//! login codes and contact hashes.

use tracing_subscriber::filter::{Directive, EnvFilter, LevelFilter};
use tracing_subscriber::fmt::MakeWriter;

/// The SDK's targets that print bodies at TRACE.
pub const WIRE_TARGETS: [&str; 3] = [
    "aws_smithy_runtime",
    "aws_smithy_runtime_api",
    "aws_smithy_http",
];

/// The runtime's targets that print the raw invocation below INFO.
pub const RUNTIME_TARGETS: [&str; 3] =
    ["lambda_runtime", "lambda_runtime_api_client", "lambda_http"];

/// The filter: the configured level, the wire targets capped at DEBUG and
/// the runtime's at INFO (never more verbose than the configured level).
fn filter() -> EnvFilter {
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .ok()
        .and_then(|l| l.parse::<LevelFilter>().ok())
        .unwrap_or(LevelFilter::INFO);
    filter_for(
        level,
        EnvFilter::builder()
            .with_default_directive(level.into())
            .from_env_lossy(),
    )
}

fn filter_for(level: LevelFilter, mut filter: EnvFilter) -> EnvFilter {
    let capped = |max: LevelFilter| std::cmp::min(level, max);
    let directives = WIRE_TARGETS
        .iter()
        .map(|t| format!("{t}={}", capped(LevelFilter::DEBUG)))
        .chain(
            RUNTIME_TARGETS
                .iter()
                .map(|t| format!("{t}={}", capped(LevelFilter::INFO))),
        );
    for directive in directives {
        if let Ok(d) = directive.parse::<Directive>() {
            filter = filter.add_directive(d);
        }
    }
    filter
}

/// Installs the subscriber, writing to stdout (CloudWatch in Lambda).
pub fn init() {
    init_with_writer(std::io::stdout);
}

/// Installs the subscriber with another writer (the secrets test captures
/// it).
pub fn init_with_writer<W>(writer: W)
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt()
        .with_target(false)
        .without_time()
        .with_env_filter(filter())
        .with_writer(writer);
    // A subscriber already installed (a second init in one process) stays.
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_trace_the_runtime_stays_at_info_and_the_wire_at_debug() {
        let text = filter_for(LevelFilter::TRACE, EnvFilter::new("trace")).to_string();
        assert!(text.contains("lambda_runtime=info"), "{text}");
        assert!(text.contains("lambda_http=info"), "{text}");
        assert!(text.contains("aws_smithy_runtime=debug"), "{text}");
        let quiet = filter_for(LevelFilter::WARN, EnvFilter::new("warn")).to_string();
        assert!(
            quiet.contains("lambda_runtime=warn"),
            "never louder: {quiet}"
        );
    }
}
