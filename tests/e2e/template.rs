//! The SAM template against the code: every index and attribute the store
//! queries exists, policies are least-privilege, timeouts fit the lease,
//! and every event fixture under `infra/events/` deserialises into its
//! handler's event type.

use std::path::Path;

use adtrail_local::template::{Template, default_path};
use adtrail_store::keys::INDEXES;
use serde_yaml_ng::Value;

fn template() -> Template {
    Template::load(&default_path()).expect("template.yaml")
}

#[test]
fn every_index_and_attribute_the_store_queries_is_in_the_template() {
    let t = template();
    let attrs = &t.table.attributes;
    assert_eq!(
        t.table
            .keys
            .iter()
            .map(|k| k.name.as_str())
            .collect::<Vec<_>>(),
        ["pk", "sk"]
    );
    for (index, hash, range) in INDEXES {
        let def = t
            .table
            .indexes
            .iter()
            .find(|i| i.name == index)
            .unwrap_or_else(|| panic!("index {index}"));
        assert_eq!(def.keys[0].name, hash, "{index} hash key");
        assert_eq!(def.keys[1].name, range, "{index} range key");
        assert!(
            attrs.contains_key(hash) && attrs.contains_key(range),
            "{index} attributes defined"
        );
    }
    let owner = t.table.indexes.iter().find(|i| i.name == "owner").unwrap();
    for attr in ["siteId", "adAccountId"] {
        assert!(
            owner.non_key.iter().any(|a| a == attr) || owner.projection == "ALL",
            "owner index projects {attr}"
        );
    }
    assert_eq!(attrs["nextSyncAt"], "N");
    assert_eq!(attrs["workAt"], "N");
}

fn statements(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Mapping(m) => {
            if let Some(s) = m.get("Statement") {
                out.extend(s.as_sequence().cloned().unwrap_or_default());
            }
            m.values().for_each(|v| statements(v, out));
        }
        Value::Sequence(s) => s.iter().for_each(|v| statements(v, out)),
        Value::Tagged(t) => statements(&t.value, out),
        _ => {}
    }
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Sequence(s) => s.iter().flat_map(strings).collect(),
        Value::Tagged(t) => strings(&t.value),
        _ => vec![],
    }
}

#[test]
fn no_policy_grants_a_wildcard_action_or_resource() {
    let t = template();
    let resources = t.raw["Resources"].as_mapping().unwrap();
    for (id, resource) in resources {
        let kind = resource["Type"].as_str().unwrap_or("");
        let mut found = vec![];
        statements(&resource["Properties"], &mut found);
        for st in found {
            for action in strings(&st["Action"]) {
                assert!(!action.contains('*'), "{id:?}: action {action}");
            }
            for res in strings(&st["Resource"]) {
                // A key policy's "*" is the key itself; S3 object keys are
                // unknowable, so a key prefix of the stack's own bucket is
                // the narrowest resource there is.
                let key_policy = kind == "AWS::KMS::Key" && res == "*";
                let object_prefix = res.starts_with("${ThumbnailBucket.Arn}/thumbnails/")
                    && res.ends_with("/*")
                    && res.matches('*').count() == 1;
                assert!(
                    !res.contains('*') || key_policy || object_prefix,
                    "{id:?}: resource {res}"
                );
            }
        }
    }
}

#[test]
fn the_worker_stops_within_its_lease_and_the_queue_outlasts_the_worker() {
    let t = template();
    let worker = t.function("SyncWorkerFunction").unwrap();
    // The shortest lease the template's parameter allows, as the code
    // bounds it.
    use adtrail_domain::plan::SyncInterval;
    let interval = &t.raw["Parameters"]["SyncIntervalMinutes"];
    assert_eq!(
        (
            interval["MinValue"].as_i64(),
            interval["MaxValue"].as_i64(),
            interval["Default"].as_i64()
        ),
        (
            Some(SyncInterval::MIN_MINUTES),
            Some(SyncInterval::MAX_MINUTES),
            Some(SyncInterval::DEFAULT.ms() / 60_000)
        )
    );
    let quiet = &t.raw["Parameters"]["QuietSyncIntervalMinutes"];
    assert_eq!(
        (
            quiet["MinValue"].as_i64(),
            quiet["MaxValue"].as_i64(),
            quiet["Default"].as_i64()
        ),
        (
            Some(SyncInterval::MIN_MINUTES),
            Some(SyncInterval::MAX_MINUTES),
            Some(SyncInterval::QUIET_DEFAULT.ms() / 60_000)
        )
    );
    for (var, parameter) in [
        ("SYNC_INTERVAL_MINUTES", "SyncIntervalMinutes"),
        ("QUIET_SYNC_INTERVAL_MINUTES", "QuietSyncIntervalMinutes"),
    ] {
        let set = &t.raw["Globals"]["Function"]["Environment"]["Variables"][var];
        assert!(
            matches!(set, Value::Tagged(r) if r.tag == "!Ref" && r.value.as_str() == Some(parameter)),
            "{var}: {set:?}"
        );
    }
    let lease_secs = SyncInterval::from_minutes(&SyncInterval::MIN_MINUTES.to_string())
        .unwrap()
        .lease_ms()
        / 1_000;
    assert!(
        worker.timeout < lease_secs,
        "worker timeout {} < lease {lease_secs}",
        worker.timeout
    );
    assert!((adtrail_sync_worker::DEADLINE_MARGIN.as_secs() as i64) < worker.timeout);
    let queue = t.queue("SyncQueue").unwrap();
    assert!(queue.visibility_timeout >= worker.timeout);
    assert_eq!(
        queue.consumer.as_ref().map(|c| c.0.as_str()),
        Some("SyncWorkerFunction")
    );
    let (dlq, max) = queue.redrive.clone().expect("a dead-letter queue");
    assert!(max >= 3);
    // Every dead-letter queue has an alarm.
    let resources = t.raw["Resources"].as_mapping().unwrap();
    let alarmed = resources.values().any(|r| {
        r["Type"].as_str() == Some("AWS::CloudWatch::Alarm")
            && serde_yaml_ng::to_string(&r["Properties"]["Dimensions"])
                .unwrap_or_default()
                .contains(&dlq)
    });
    assert!(alarmed, "an alarm on {dlq}");
}

#[test]
fn the_sender_batches_and_its_retries_never_reach_the_dead_letter_queue() {
    let t = template();
    let sender = t.function("CapiSenderFunction").unwrap();
    let lease_secs = adtrail_domain::capi::SEND_LEASE_MS / 1_000;
    assert!(
        sender.timeout < lease_secs,
        "an attempt ends within its lease"
    );
    let queue = t.queue("SendQueue").unwrap();
    assert!(queue.visibility_timeout >= sender.timeout);
    let (function, batch) = queue.consumer.clone().expect("a consumer");
    assert_eq!(function, "CapiSenderFunction");
    assert!(batch >= 100, "large batches, grouped by pixel: {batch}");
    let events = &t.raw["Resources"]["CapiSenderFunction"]["Properties"]["Events"]["SendQueue"]["Properties"];
    assert!(
        events["MaximumBatchingWindowInSeconds"]
            .as_i64()
            .unwrap_or(0)
            >= 1
    );
    assert_eq!(
        strings(&events["FunctionResponseTypes"]),
        ["ReportBatchItemFailures"]
    );
    // Three attempts, and a wait for a held lease on each, never exhaust
    // the receive limit.
    let (dlq, max) = queue.redrive.clone().expect("a dead-letter queue");
    assert!(
        max >= 3 * adtrail_domain::capi::MAX_ATTEMPTS,
        "maxReceiveCount {max}"
    );
    let resources = t.raw["Resources"].as_mapping().unwrap();
    assert!(resources.values().any(|r| {
        r["Type"].as_str() == Some("AWS::CloudWatch::Alarm")
            && serde_yaml_ng::to_string(&r["Properties"]["Dimensions"])
                .unwrap_or_default()
                .contains(&dlq)
    }));
}

#[test]
fn every_function_is_arm64_on_al2023_built_with_cargo_lambda() {
    let t = template();
    let globals = &t.raw["Globals"]["Function"];
    assert_eq!(globals["Runtime"].as_str(), Some("provided.al2023"));
    assert_eq!(strings(&globals["Architectures"]), ["arm64"]);
    let resources = t.raw["Resources"].as_mapping().unwrap();
    let mut binaries = vec![];
    for r in resources
        .values()
        .filter(|r| r["Type"].as_str() == Some("AWS::Serverless::Function"))
    {
        assert_eq!(
            r["Metadata"]["BuildMethod"].as_str(),
            Some("rust-cargolambda")
        );
        binaries.push(
            r["Metadata"]["BuildProperties"]["Binary"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
        assert!(r["Properties"]["Events"].as_mapping().is_some());
    }
    binaries.sort();
    assert_eq!(
        binaries,
        [
            "adtrail-api",
            "adtrail-capi-sender",
            "adtrail-dispatcher",
            "adtrail-leadgen-worker",
            "adtrail-sweeper",
            "adtrail-sync-worker"
        ]
    );
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../infra/events")
            .join(name),
    )
    .expect(name)
}

#[test]
fn every_event_fixture_deserialises_into_its_handlers_event_type() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../infra/events");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let text = fixture(&name);
        if name.starts_with("api-") {
            let req =
                lambda_http::request::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            adtrail_api::auth::Caller::from_request(&req, &Default::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        } else if name.starts_with("dispatcher-") || name.starts_with("sweeper-") {
            serde_json::from_str::<
                aws_lambda_events::eventbridge::EventBridgeEvent<serde_json::Value>,
            >(&text)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        } else if name.starts_with("sync-worker-") {
            let event: aws_lambda_events::sqs::SqsEvent =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            for r in event.records {
                serde_json::from_str::<adtrail_store::queue::SyncMessage>(
                    r.body.as_deref().unwrap(),
                )
                .unwrap();
            }
        } else if name.starts_with("capi-sender-") {
            let event: aws_lambda_events::sqs::SqsEvent =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            for r in event.records {
                serde_json::from_str::<adtrail_store::queue::SendMessage>(
                    r.body.as_deref().unwrap(),
                )
                .unwrap();
            }
        } else if name.starts_with("leadgen-worker-") {
            let event: aws_lambda_events::sqs::SqsEvent =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            for r in event.records {
                serde_json::from_str::<adtrail_store::queue::LeadgenMessage>(
                    r.body.as_deref().unwrap(),
                )
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        } else {
            panic!("{name}: a fixture for no known function");
        }
        seen += 1;
    }
    assert!(seen >= 5);
}

#[test]
fn every_object_in_the_contract_is_closed() {
    let doc: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../api/openapi.yaml"))
            .expect("api/openapi.yaml"),
    )
    .expect("yaml");
    // A clause of `anyOf`/`oneOf`/`not` without a type of its own only
    // constrains the object it sits in (which is closed), so it is no
    // object definition.
    fn walk(v: &Value, at: &str, open: &mut Vec<String>, objects: &mut usize) {
        match v {
            Value::Mapping(m) => {
                let clause = ["/anyOf[", "/oneOf[", "/not"].iter().any(|c| {
                    at.rsplit_once('/')
                        .is_some_and(|(_, last)| format!("/{last}").starts_with(c))
                }) && m.get("type").is_none();
                let is_object = (m.get("properties").is_some() && !clause)
                    || m.get("type").and_then(Value::as_str) == Some("object");
                if is_object {
                    *objects += 1;
                    // `false`, or a schema for every value (a map).
                    match m.get("additionalProperties") {
                        Some(Value::Bool(false)) | Some(Value::Mapping(_)) => {}
                        _ => open.push(at.to_owned()),
                    }
                }
                for (k, child) in m {
                    walk(
                        child,
                        &format!("{at}/{}", k.as_str().unwrap_or("?")),
                        open,
                        objects,
                    );
                }
            }
            Value::Sequence(s) => {
                for (i, child) in s.iter().enumerate() {
                    walk(child, &format!("{at}[{i}]"), open, objects);
                }
            }
            _ => {}
        }
    }
    let (mut open, mut objects) = (vec![], 0);
    walk(&doc, "", &mut open, &mut objects);
    assert!(
        objects > 50,
        "the walk saw the document's objects ({objects})"
    );
    assert!(
        open.is_empty(),
        "objects without additionalProperties: false: {open:?}"
    );
    // Every operation declares the statuses every route can answer: behind
    // the authorizer, 400, 401 and 403; Meta's webhook (no bearer token),
    // 400 and 503 (Lead Ads off).
    for (path, item) in doc["paths"].as_mapping().unwrap() {
        for (method, op) in item.as_mapping().unwrap() {
            let statuses = op["responses"].as_mapping().unwrap();
            let public = op["security"].as_sequence().is_some_and(|s| s.is_empty());
            let expected: &[&str] = if public {
                &["400", "503"]
            } else {
                &["400", "401", "403"]
            };
            for status in expected {
                assert!(
                    statuses.contains_key(status),
                    "{method:?} {path:?} declares {status}"
                );
            }
        }
    }
}

#[test]
fn the_contract_lists_every_error_code_an_answer_can_carry() {
    use adtrail_domain::error_codes::ErrorCode;
    let doc: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../api/openapi.yaml"))
            .expect("api/openapi.yaml"),
    )
    .expect("yaml");
    let listed: Vec<&str> =
        doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]
            .as_sequence()
            .expect("the Error schema's codes")
            .iter()
            .filter_map(Value::as_str)
            .collect();
    // 405 answers with its own `Allow` header and is never documented per
    // operation; INTERNAL is the answer no contract promises.
    for code in ErrorCode::ALL {
        if matches!(code, ErrorCode::MethodNotAllowed | ErrorCode::Internal) {
            continue;
        }
        assert!(
            listed.contains(&code.as_str()),
            "{} is missing from the Error schema",
            code.as_str()
        );
    }
}

/// X-Ray bills each trace an `Active` function records, at a sampling
/// rate Lambda does not let anyone change: off unless the stack asks, and
/// no role may write traces while it is off.
#[test]
fn x_ray_is_off_unless_asked_for_and_its_policy_with_it() {
    let t = template();
    let tracing = &t.raw["Parameters"]["Tracing"];
    assert_eq!(tracing["Default"].as_str(), Some("PassThrough"));
    let set = &t.raw["Globals"]["Function"]["Tracing"];
    assert!(
        matches!(set, Value::Tagged(r) if r.tag == "!Ref" && r.value.as_str() == Some("Tracing")),
        "{set:?}"
    );
    for (id, r) in t.raw["Resources"].as_mapping().unwrap() {
        for arn in r["Properties"]["ManagedPolicyArns"]
            .as_sequence()
            .into_iter()
            .flatten()
        {
            let text = serde_yaml_ng::to_string(arn).unwrap();
            if text.contains("AWSXray") {
                assert!(
                    matches!(arn, Value::Tagged(r) if r.tag == "!If" && r.value[0].as_str() == Some("TracingOn")),
                    "{id:?}: {text}"
                );
            }
        }
    }
}
