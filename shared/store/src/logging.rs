//! The log subscriber every Lambda main installs: lambda_runtime's own
//! (JSON when `AWS_LAMBDA_LOG_FORMAT` says so, the level from
//! `AWS_LAMBDA_LOG_LEVEL` or `RUST_LOG`), with one rule on top: the AWS
//! SDK's wire traces stay off at any level. At TRACE the SDK prints whole
//! request and response bodies, and DynamoDB's carry conversion rows with
//! their contact hashes; those targets are held at DEBUG, which prints no
//! body. The Lambda runtime's own targets are held at INFO: at DEBUG and
//! TRACE they print the raw invocation, with the bearer JWT, pasted tokens,
//! login codes and contact hashes.
//!
//! In JSON, each line carries at its top level what CloudWatch Logs
//! Insights filters on first: `timestamp`, `level`, `requestId` (lifted
//! from the runtime's invocation span) and `function`; the event's own
//! fields stay under `fields`, its spans' under `span`.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields, MakeWriter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

/// The SDK's targets that print bodies at TRACE.
pub const WIRE_TARGETS: [&str; 3] = [
    "aws_smithy_runtime",
    "aws_smithy_runtime_api",
    "aws_smithy_http",
];

/// The runtime's targets that print the raw invocation below INFO.
pub const RUNTIME_TARGETS: [&str; 3] =
    ["lambda_runtime", "lambda_runtime_api_client", "lambda_http"];

/// The filter: the configured level (`RUST_LOG` may also name targets),
/// the wire targets capped at DEBUG and the runtime's at INFO (never more
/// verbose than the configured level). A `Targets` filter, not an
/// `EnvFilter`: no span or field directives are needed, and EnvFilter's
/// regex engine is a few hundred kilobytes of every binary.
fn filter() -> Targets {
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .ok()
        .and_then(|l| l.parse::<LevelFilter>().ok())
        .unwrap_or(LevelFilter::INFO);
    // A RUST_LOG that does not parse (a span directive) is ignored whole,
    // as EnvFilter's `from_env_lossy` ignored its bad parts.
    let named = std::env::var("RUST_LOG")
        .ok()
        .and_then(|l| l.parse::<Targets>().ok())
        .unwrap_or_default();
    filter_for(level, named)
}

fn filter_for(level: LevelFilter, named: Targets) -> Targets {
    let capped = |max: LevelFilter| std::cmp::min(level, max);
    named
        .with_default(level)
        .with_targets(WIRE_TARGETS.map(|t| (t, capped(LevelFilter::DEBUG))))
        .with_targets(RUNTIME_TARGETS.map(|t| (t, capped(LevelFilter::INFO))))
}

/// Installs the subscriber, writing to stdout (CloudWatch in Lambda).
pub fn init() {
    init_with_writer(std::io::stdout);
    log_panics();
}

/// A panic is one structured error line before the process ends. The
/// functions' release build aborts on panic (no unwinding tables: smaller
/// binaries); Lambda then reports the invocation failed and retries it as
/// it would an error (an SQS batch comes back after its visibility
/// timeout, API Gateway answers 500), and the next one starts a fresh
/// process. A message written in the code (`expect("…")`) is shown; any
/// other (an error's `Debug`) is withheld, as it may carry a value.
pub fn log_panics() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<&'static str>()
            .copied()
            .unwrap_or("(a message with values, withheld)");
        tracing::error!(location = %location, message, "the function panicked");
    }));
}

/// Installs the subscriber with another writer (the secrets test captures
/// it).
pub fn init_with_writer<W>(writer: W)
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").ok();
    let format = if json {
        Format::Json { function }
    } else {
        Format::Text
    };
    init_as(writer, format);
}

/// How the lines are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// For a terminal.
    Text,
    /// One JSON object a line, as Lambda's `LogFormat: JSON` takes them,
    /// naming the function.
    Json { function: Option<String> },
}

/// [`init_with_writer`] in the format given (the bench counts the bytes of
/// the JSON lines a function would write in Lambda).
pub fn init_as<W>(writer: W, format: Format)
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    // The formatter lets every level through; the `Targets` layer decides.
    let builder = tracing_subscriber::fmt()
        .with_target(false)
        .with_max_level(LevelFilter::TRACE)
        .with_writer(writer);
    // A subscriber already installed (a second init in one process) stays.
    let _ = if let Format::Json { function } = format {
        builder
            .fmt_fields(JsonFields::new())
            .event_format(LambdaJson { function })
            .finish()
            .with(filter())
            .try_init()
    } else {
        // CloudWatch stamps each line; a terminal reader has the order.
        builder.without_time().finish().with(filter()).try_init()
    };
}

/// One JSON object per event, with the invocation's id and the function
/// at the top level.
struct LambdaJson {
    function: Option<String>,
}

impl<S, N> FormatEvent<S, N> for LambdaJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = FieldMap::default();
        event.record(&mut fields);
        // The spans' fields, outermost first, as `JsonFields` kept them.
        let mut span = Map::new();
        for s in ctx
            .event_scope()
            .into_iter()
            .flat_map(|scope| scope.from_root())
        {
            let extensions = s.extensions();
            let Some(kept) = extensions.get::<FormattedFields<N>>() else {
                continue;
            };
            if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(kept) {
                span.extend(map);
            }
        }
        let mut line = Map::new();
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        line.insert("timestamp".into(), now.into());
        line.insert("level".into(), event.metadata().level().as_str().into());
        if let Some(id) = span.remove("requestId") {
            line.insert("requestId".into(), id);
        }
        if let Some(function) = &self.function {
            line.insert("function".into(), function.as_str().into());
        }
        line.insert("fields".into(), Value::Object(fields.0));
        if !span.is_empty() {
            line.insert("span".into(), Value::Object(span));
        }
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// An event's fields as JSON values.
#[derive(Default)]
struct FieldMap(Map<String, Value>);

impl Visit for FieldMap {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
}

/// A log writer a test reads back.
#[cfg(test)]
#[derive(Clone, Default)]
pub(crate) struct Lines(pub(crate) std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

#[cfg(test)]
impl Lines {
    /// What was written so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[cfg(test)]
impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_line_carries_the_time_the_request_and_the_function_at_its_top() {
        let lines = Lines::default();
        let out = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .fmt_fields(JsonFields::new())
            .event_format(LambdaJson {
                function: Some("adtrail-sync-worker".into()),
            })
            .with_writer(move || out.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let invoke = tracing::info_span!("Lambda runtime invoke", requestId = "req-1");
            let _i = invoke.enter();
            let run = tracing::info_span!("sync_run", site_id = "loja-x");
            let _r = run.enter();
            tracing::info!(rows_written = 3_u64, done = true, "sync run done");
        });
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        let line: Value = serde_json::from_str(text.trim()).expect(&text);
        assert_eq!(line["requestId"], "req-1");
        assert_eq!(line["function"], "adtrail-sync-worker");
        assert_eq!(line["level"], "INFO");
        let time = line["timestamp"].as_str().unwrap();
        assert!(chrono::DateTime::parse_from_rfc3339(time).is_ok(), "{time}");
        assert_eq!(line["fields"]["message"], "sync run done");
        assert_eq!(line["fields"]["rows_written"], 3);
        assert_eq!(line["fields"]["done"], true);
        assert_eq!(line["span"]["site_id"], "loja-x");
        assert!(
            line["span"].get("requestId").is_none(),
            "lifted, not repeated"
        );
    }

    #[test]
    fn at_trace_the_runtime_stays_at_info_and_the_wire_at_debug() {
        let text = filter_for(LevelFilter::TRACE, Targets::new()).to_string();
        assert!(text.contains("lambda_runtime=info"), "{text}");
        assert!(text.contains("lambda_http=info"), "{text}");
        assert!(text.contains("aws_smithy_runtime=debug"), "{text}");
        let quiet = filter_for(LevelFilter::WARN, "adtrail=debug".parse().unwrap()).to_string();
        assert!(
            quiet.contains("lambda_runtime=warn"),
            "never louder: {quiet}"
        );
    }
}
