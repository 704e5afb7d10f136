//! What the real binaries write besides their answers, as the runtime
//! test (runtime.rs) collects it: metric documents in CloudWatch's
//! Embedded Metric Format, and JSON log lines that say when, where and in
//! which request.

use adtrail_tests::LOJA_PRINCIPAL;
use serde_json::{Value, json};

/// The JSON objects among the lines written that hold `key`.
fn json_lines(written: &str, key: &str) -> Vec<Value> {
    written
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|d| d.get(key).is_some())
        .collect()
}

/// A metric's value in one document, with the document's dimensions.
type Seen = (String, Vec<(String, String)>, f64);

/// Each metric document a process wrote: one JSON line whose `_aws` names
/// the namespace, the dimension set and the metrics, beside their values,
/// the function, the request and the ids it worked on.
pub(crate) fn the_metrics_are_embedded_documents_with_ids_as_properties(written: &str) {
    let documents: Vec<Value> = json_lines(written, "_aws");
    let seen: Vec<Seen> = documents.iter().flat_map(values_of).collect();
    let total = |name: &str, dimension: Option<(&str, &str)>| -> f64 {
        seen.iter()
            .filter(|(n, dims, _)| {
                n == name
                    && match dimension {
                        None => dims.is_empty(),
                        Some((k, v)) => dims.iter().any(|(dk, dv)| dk == k && dv == v),
                    }
            })
            .map(|(_, _, v)| v)
            .sum()
    };
    assert!(
        total("SyncRuns", Some(("Outcome", "succeeded"))) >= 1.0,
        "{seen:?}"
    );
    assert!(total("SpendRowsWritten", None) > 0.0);
    assert!(total("MetaRequests", None) > 0.0);
    assert!(total("MetaLatency", None) > 0.0);
    // The four events Meta took, and the platforms' eight.
    assert!(total("ConversionsSent", None) >= 12.0, "{seen:?}");
    for platform in ["meta", "tiktok", "snap", "google", "pinterest"] {
        assert!(
            total("PlatformRequests", Some(("Platform", platform))) >= 1.0,
            "requests to {platform}: {seen:?}"
        );
    }
    // The run's ids are properties of its documents.
    assert!(
        documents
            .iter()
            .any(|d| d["siteIds"] == json!(["loja-x"])
                && d["adAccountIds"] == json!([LOJA_PRINCIPAL])),
        "a sync run's document lists its site and account"
    );
}

/// One metric document checked (its time, namespace, function, request,
/// bounded dimensions, known metrics with units): each metric's value with
/// the document's dimensions.
fn values_of(d: &Value) -> Vec<Seen> {
    use adtrail_domain::telemetry::METRICS;
    use adtrail_tests::runtime::METRICS_NAMESPACE;
    let mut seen = vec![];
    let aws = &d["_aws"];
    assert!(aws["Timestamp"].as_i64().is_some_and(|t| t > 0), "{d}");
    let cw = &aws["CloudWatchMetrics"][0];
    assert_eq!(cw["Namespace"], METRICS_NAMESPACE, "{d}");
    assert!(
        d["function"]
            .as_str()
            .is_some_and(|f| f.starts_with("adtrail-")),
        "{d}"
    );
    assert!(
        d["requestId"].as_str().is_some_and(|r| !r.is_empty()),
        "{d}"
    );
    let dimensions: Vec<(String, String)> = cw["Dimensions"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let k = k.as_str().unwrap();
            (k.to_owned(), d[k].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    for (k, _) in &dimensions {
        assert!(
            ["Outcome", "Class", "Platform", "Reason"].contains(&k.as_str()),
            "a bounded dimension, never an id: {k}"
        );
    }
    for m in cw["Metrics"].as_array().unwrap() {
        let name = m["Name"].as_str().unwrap();
        let unit = METRICS.iter().find(|(n, _)| *n == name);
        assert!(
            unit.is_some(),
            "{name} is one of the metrics the template reads"
        );
        assert!(m["Unit"].as_str().is_some(), "{name} has a unit");
        let value = match &d[name] {
            Value::Array(values) => values.iter().filter_map(Value::as_f64).sum(),
            v => v.as_f64().expect("a number"),
        };
        seen.push((name.to_owned(), dimensions.clone(), value));
    }
    seen
}

/// Every JSON log line has its time and function at the top; the lines a
/// run or a batch ends with, their request.
pub(crate) fn every_log_line_says_when_where_and_in_which_request(written: &str) {
    let lines: Vec<Value> = json_lines(written, "fields");
    assert!(lines.len() > 100, "the functions logged");
    for l in &lines {
        assert!(
            l["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{l}"
        );
        assert!(
            l["function"]
                .as_str()
                .is_some_and(|f| f.starts_with("adtrail-")),
            "{l}"
        );
    }
    // The API's lines within a request name API Gateway's id of it, the
    // one its answer's `apigw-requestid` header gave the caller.
    let in_requests: Vec<&Value> = lines
        .iter()
        .filter(|l| l["function"] == "adtrail-api" && l["span"]["route"].is_string())
        .collect();
    assert!(
        !in_requests.is_empty(),
        "the API logged within its requests"
    );
    for l in in_requests {
        let id = l["span"]["apigw_request_id"].as_str().unwrap_or("-");
        assert!(id.len() == 36 && id.matches('-').count() == 4, "{l}");
    }
    for summary in ["sync run done", "send batch done", "dispatch done"] {
        let line = lines
            .iter()
            .find(|l| l["fields"]["message"] == summary)
            .unwrap_or_else(|| panic!("a line says {summary}"));
        assert!(
            line["requestId"].as_str().is_some_and(|r| !r.is_empty()),
            "{line}"
        );
    }
    // The dispatcher's tick that leased says how many it leased and sent,
    // once; its ticks with nothing due say nothing.
    let dispatched: Vec<&Value> = lines
        .iter()
        .filter(|l| l["fields"]["message"] == "dispatch done")
        .collect();
    assert_eq!(dispatched.len(), 1, "{dispatched:?}");
    let fields = &dispatched[0]["fields"];
    assert!(fields["leased"].as_u64().is_some_and(|n| n > 0), "{fields}");
    assert_eq!(fields["sent"], fields["leased"], "{fields}");
}
