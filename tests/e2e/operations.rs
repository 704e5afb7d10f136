//! What an operator relies on in the template: data that outlives the
//! stack (the table, the key with its alias, the bucket), a retention on
//! every log group, the API's throttling and access log.

use adtrail_local::template::{Template, default_path};
use serde_yaml_ng::Value;

fn template() -> Template {
    Template::load(&default_path()).expect("template.yaml")
}

/// The logical id a `!Ref` names.
fn reference(v: &Value) -> Option<&str> {
    match v {
        Value::Tagged(t) if t.tag == "!Ref" => t.value.as_str(),
        _ => v["Ref"].as_str(),
    }
}

#[test]
fn the_data_outlives_the_stack() {
    let t = template();
    let r = &t.raw["Resources"];
    for id in ["Table", "TokenKey", "TokenKeyAlias", "ThumbnailBucket"] {
        assert_eq!(r[id]["DeletionPolicy"].as_str(), Some("Retain"), "{id}");
        assert_eq!(
            r[id]["UpdateReplacePolicy"].as_str(),
            Some("Retain"),
            "{id}"
        );
    }
    assert_eq!(
        r["Table"]["Properties"]["DeletionProtectionEnabled"].as_bool(),
        Some(true)
    );
    assert_eq!(
        reference(&r["TokenKeyAlias"]["Properties"]["TargetKeyId"]),
        Some("TokenKey"),
        "the alias names the key"
    );
}

#[test]
fn every_function_logs_to_a_group_with_the_stacks_retention() {
    let t = template();
    let r = t.raw["Resources"].as_mapping().unwrap();
    let mut groups = vec![];
    for (id, res) in r {
        match res["Type"].as_str() {
            Some("AWS::Serverless::Function") => {
                let group = reference(&res["Properties"]["LoggingConfig"]["LogGroup"])
                    .unwrap_or_else(|| panic!("{id:?} names its group"));
                groups.push(group.to_owned());
            }
            Some("AWS::Logs::LogGroup") => {
                assert_eq!(
                    reference(&res["Properties"]["RetentionInDays"]),
                    Some("LogRetentionDays"),
                    "{id:?} keeps lines as long as the stack says"
                );
            }
            _ => {}
        }
    }
    assert_eq!(groups.len(), 5, "five functions");
    for g in &groups {
        assert_eq!(
            r.get(Value::from(g.as_str()))
                .and_then(|v| v["Type"].as_str()),
            Some("AWS::Logs::LogGroup"),
            "{g}"
        );
    }
    assert_eq!(
        t.raw["Parameters"]["LogRetentionDays"]["Default"].as_u64(),
        Some(30)
    );
}

#[test]
fn the_api_is_throttled_tighter_on_reports_and_logs_each_request() {
    let t = template();
    let api = &t.raw["Resources"]["HttpApi"]["Properties"];
    let default = api["DefaultRouteSettings"]["ThrottlingRateLimit"]
        .as_u64()
        .expect("a default rate");
    for route in ["GET /v1/reports/leads", "GET /v1/reports/daily"] {
        let rate = api["RouteSettings"][route]["ThrottlingRateLimit"]
            .as_u64()
            .unwrap_or_else(|| panic!("{route} has its own rate"));
        assert!(rate < default, "{route}");
        // The route exists in the handler's table.
        assert!(
            adtrail_api::ROUTES
                .iter()
                .any(|r| format!("{} {}", r.method, r.path) == route),
            "{route}"
        );
    }
    let format = api["AccessLogSettings"]["Format"]
        .as_str()
        .expect("a format");
    let line: serde_json::Value =
        serde_json::from_str(format).expect("the access log line is JSON");
    for field in ["requestId", "status", "responseLatencyMs", "routeKey"] {
        assert!(line.get(field).is_some(), "the access log has {field}");
    }
    for secret in ["authorization", "header", "body", "querystring"] {
        assert!(
            !format.to_ascii_lowercase().contains(secret),
            "the access log never carries a request's {secret}"
        );
    }
}
