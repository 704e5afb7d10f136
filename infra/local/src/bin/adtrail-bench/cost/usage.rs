//! The units AWS bills, as the bench counts them: what a piece of work
//! used ([`Usage`]) and the prices it is multiplied by ([`Prices`]).

use adtrail_local::app::App;
use adtrail_store::counter::EMPTY_RECEIVES;
use serde::Deserialize;

use crate::Error;

/// Log bytes Lambda itself writes for an invocation in the JSON log format
/// (`platform.start`, about 125 bytes, and `platform.report`, about 215),
/// from the examples in Lambda's telemetry documentation: the function's
/// own lines and metric documents are counted as the bench writes them.
pub(super) const PLATFORM_LOG_BYTES_PER_INVOCATION: f64 = 340.0;
/// An API request's access log line, the template's format with typical
/// values (about 215 bytes) rounded up.
pub(super) const LOG_BYTES_PER_API_REQUEST: f64 = 300.0;

#[derive(Debug, Deserialize)]
pub(super) struct Prices {
    pub(super) date: String,
    pub(super) lambda_arm_gb_second: f64,
    pub(super) lambda_request: f64,
    pub(super) dynamodb_write_request_unit: f64,
    pub(super) dynamodb_read_request_unit: f64,
    pub(super) sqs_request: f64,
    pub(super) kms_request: f64,
    pub(super) kms_key_month: f64,
    pub(super) eventbridge_custom_event: f64,
    pub(super) secretsmanager_secret_month: f64,
    pub(super) secretsmanager_request: f64,
    pub(super) http_api_request: f64,
    pub(super) s3_put_request: f64,
    pub(super) cloudwatch_logs_ingested_gb: f64,
    pub(super) cloudwatch_dashboard_month: f64,
    pub(super) cloudwatch_alarm_month: f64,
    pub(super) cloudwatch_metric_month: f64,
    pub(super) xray_trace_recorded: f64,
}

pub(super) fn prices() -> Result<Prices, Error> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../prices/us-east-1.json");
    Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
}

/// What a piece of work used, in the units AWS bills.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Usage {
    pub(super) gb_seconds: f64,
    pub(super) invocations: f64,
    pub(super) write_units: f64,
    pub(super) read_units: f64,
    pub(super) sqs: f64,
    pub(super) kms: f64,
    pub(super) events: f64,
    pub(super) secrets: f64,
    pub(super) api: f64,
    pub(super) s3: f64,
    pub(super) log_bytes: f64,
}

impl Usage {
    /// What the stack's clients counted, and the functions' invocations
    /// and handler time, each at its memory size in the template.
    pub(super) fn counted(app: &App) -> Self {
        let runner = app.runner();
        let c = &runner.stack.store.counter;
        let raw = &runner.stack.template.raw;
        let global = raw["Globals"]["Function"]["MemorySize"]
            .as_f64()
            .unwrap_or(128.0);
        let (mut gb_seconds, mut invocations, mut logged) = (0.0, 0.0, 0.0);
        for (function, taken) in runner.handler_time.snapshot() {
            let mb = raw["Resources"][function.as_str()]["Properties"]["MemorySize"]
                .as_f64()
                .unwrap_or(global);
            gb_seconds += taken.ms / 1_000.0 * mb / 1_024.0;
            invocations += taken.invocations as f64;
            logged += taken.log_bytes as f64;
        }
        Usage {
            gb_seconds,
            invocations,
            write_units: c.write_units(),
            read_units: c.read_units(),
            // A receive that returned nothing is the event sources'
            // pollers' own, priced once in the idle stack.
            sqs: c.get("sqs").saturating_sub(c.get(EMPTY_RECEIVES)) as f64,
            kms: c.get("kms") as f64,
            events: c.get("eventbridge") as f64,
            secrets: c.get("secretsmanager") as f64,
            api: 0.0,
            s3: c.get("s3") as f64,
            log_bytes: logged + invocations * PLATFORM_LOG_BYTES_PER_INVOCATION,
        }
    }

    pub(super) fn scaled(self, k: f64) -> Self {
        Usage {
            gb_seconds: self.gb_seconds * k,
            invocations: self.invocations * k,
            write_units: self.write_units * k,
            read_units: self.read_units * k,
            sqs: self.sqs * k,
            kms: self.kms * k,
            events: self.events * k,
            secrets: self.secrets * k,
            api: self.api * k,
            s3: self.s3 * k,
            log_bytes: self.log_bytes * k,
        }
    }

    pub(super) fn minus(self, o: Self) -> Self {
        self.plus(o.scaled(-1.0))
    }

    pub(super) fn plus(self, o: Self) -> Self {
        Usage {
            gb_seconds: self.gb_seconds + o.gb_seconds,
            invocations: self.invocations + o.invocations,
            write_units: self.write_units + o.write_units,
            read_units: self.read_units + o.read_units,
            sqs: self.sqs + o.sqs,
            kms: self.kms + o.kms,
            events: self.events + o.events,
            secrets: self.secrets + o.secrets,
            api: self.api + o.api,
            s3: self.s3 + o.s3,
            log_bytes: self.log_bytes + o.log_bytes,
        }
    }

    /// Dollars X-Ray would add with the template's `Tracing` set to
    /// `Active`, at most: every invocation a trace. Lambda records the
    /// first of each second and 5% of the rest, and no one can change that
    /// rate, so this is the bill of any function called less than once a
    /// second (https://docs.aws.amazon.com/lambda/latest/dg/services-xray.html).
    pub(super) fn tracing(&self, p: &Prices) -> f64 {
        self.invocations * p.xray_trace_recorded
    }

    /// Dollars by service: Lambda, DynamoDB, SQS, CloudWatch Logs, KMS,
    /// the rest (EventBridge, Secrets Manager, API Gateway, S3). Logs and
    /// KMS stand apart: with DynamoDB they are what an idle account costs.
    pub(super) fn cost(&self, p: &Prices) -> [(&'static str, f64); 6] {
        let lambda = self.gb_seconds * p.lambda_arm_gb_second + self.invocations * p.lambda_request;
        let dynamodb = self.write_units * p.dynamodb_write_request_unit
            + self.read_units * p.dynamodb_read_request_unit;
        let sqs = self.sqs * p.sqs_request;
        let logs = self.log_bytes / 1e9 * p.cloudwatch_logs_ingested_gb;
        let kms = self.kms * p.kms_request;
        let rest = self.events * p.eventbridge_custom_event
            + self.secrets * p.secretsmanager_request
            + self.api * p.http_api_request
            + self.s3 * p.s3_put_request;
        [
            ("lambda", lambda),
            ("dynamodb", dynamodb),
            ("sqs", sqs),
            ("logs", logs),
            ("kms", kms),
            ("the rest", rest),
        ]
    }
}
