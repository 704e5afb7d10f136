//! Alarms that reach a person: the topic CloudWatch can publish to (its own
//! key), an optional e-mail subscription, an alarm on every function's
//! errors and throttles, on every dead-letter queue, the API's 5xx, failed
//! sync runs and the failed-conversion rate; every schedule and the bus rule
//! keep what they could not deliver; the README says what to do for each.

use adtrail_local::template::{Template, default_path};
use serde_yaml_ng::{Mapping, Value};

fn template() -> Template {
    Template::load(&default_path()).expect("template.yaml")
}

/// The logical id a `!Ref` or `!GetAtt X.Y` names.
fn names(v: &Value) -> Option<&str> {
    match v {
        Value::Tagged(t) if t.tag == "!Ref" => t.value.as_str(),
        Value::Tagged(t) if t.tag == "!GetAtt" => t.value.as_str()?.split('.').next(),
        _ => None,
    }
}

fn of_type<'t>(r: &'t Mapping, kind: &str) -> Vec<(&'t str, &'t Value)> {
    r.iter()
        .filter(|(_, v)| v["Type"].as_str() == Some(kind))
        .filter_map(|(k, v)| Some((k.as_str()?, v)))
        .collect()
}

#[test]
fn the_alarm_topic_reaches_an_optional_address_under_a_key_cloudwatch_may_use() {
    let t = template();
    let r = &t.raw["Resources"];
    assert_eq!(
        t.raw["Parameters"]["AlarmEmail"]["Default"].as_str(),
        Some("")
    );
    let sub = &r["AlarmEmailSubscription"];
    assert_eq!(sub["Condition"].as_str(), Some("HasAlarmEmail"));
    assert_eq!(names(&sub["Properties"]["Endpoint"]), Some("AlarmEmail"));
    assert_eq!(names(&sub["Properties"]["TopicArn"]), Some("AlarmTopic"));
    assert_eq!(sub["Properties"]["Protocol"].as_str(), Some("email"));

    // Not alias/aws/sns: CloudWatch cannot use the AWS-managed key.
    let key = names(&r["AlarmTopic"]["Properties"]["KmsMasterKeyId"]).expect("a key of its own");
    let statements = r[key]["Properties"]["KeyPolicy"]["Statement"]
        .as_sequence()
        .expect("statements");
    let cloudwatch = statements
        .iter()
        .find(|s| s["Principal"]["Service"].as_str() == Some("cloudwatch.amazonaws.com"))
        .expect("a statement for CloudWatch");
    let actions: Vec<&str> = cloudwatch["Action"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(actions, ["kms:Decrypt", "kms:GenerateDataKey"]);
    assert_eq!(
        names(&t.raw["Outputs"]["AlarmTopicArn"]["Value"]),
        Some("AlarmTopic")
    );
}

#[test]
fn every_function_queue_and_failure_has_an_alarm_that_notifies() {
    let t = template();
    let r = t.raw["Resources"].as_mapping().unwrap();
    let alarms = of_type(r, "AWS::CloudWatch::Alarm");
    for (id, a) in &alarms {
        let actions = a["Properties"]["AlarmActions"].as_sequence();
        assert!(
            actions.is_some_and(|a| a.iter().any(|x| names(x) == Some("AlarmTopic"))),
            "{id} notifies the topic"
        );
    }
    let watched = |namespace: &str, metric: &str, dimension: &str| -> Vec<&str> {
        alarms
            .iter()
            .map(|(_, a)| &a["Properties"])
            .filter(|p| p["Namespace"].as_str() == Some(namespace))
            .filter(|p| p["MetricName"].as_str() == Some(metric))
            .filter_map(|p| {
                p["Dimensions"]
                    .as_sequence()?
                    .iter()
                    .find(|d| d["Name"].as_str() == Some(dimension))
                    .and_then(|d| names(&d["Value"]))
            })
            .collect()
    };
    let functions: Vec<&str> = of_type(r, "AWS::Serverless::Function")
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(functions.len(), 6);
    for metric in ["Errors", "Throttles"] {
        let mut got = watched("AWS/Lambda", metric, "FunctionName");
        got.sort();
        let mut want = functions.clone();
        want.sort();
        assert_eq!(got, want, "every function's {metric}");
    }
    // Every dead-letter queue: each queue's redrive target, and the one
    // the schedules and the bus rule deliver their failures to.
    let mut dead: Vec<&str> = of_type(r, "AWS::SQS::Queue")
        .into_iter()
        .filter_map(|(_, q)| names(&q["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]))
        .chain(["EventsDeadLetterQueue"])
        .collect();
    dead.sort();
    let mut got = watched("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName");
    got.sort();
    assert_eq!(got, dead);
    assert_eq!(dead.len(), 4, "sync, send, leadgen and the events'");
    assert_eq!(
        watched("AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName"),
        ["SendQueue"]
    );
    assert_eq!(watched("AWS/ApiGateway", "5xx", "ApiId"), ["HttpApi"]);

    // adtrail's own metrics: the names the functions write.
    let own = |id: &str| r[&Value::from(id)]["Properties"].clone();
    let failed_runs = own("SyncRunsFailedAlarm");
    assert_eq!(failed_runs["MetricName"].as_str(), Some("SyncRuns"));
    assert_eq!(
        failed_runs["Dimensions"][0]["Value"].as_str(),
        Some("failed")
    );
    let rate = own("ConversionsFailedRateAlarm");
    let metrics: Vec<&str> = rate["Metrics"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|m| m["MetricStat"]["Metric"]["MetricName"].as_str())
        .collect();
    assert_eq!(metrics, ["ConversionsFailed", "ConversionsSent"]);
}

#[test]
fn every_schedule_and_the_bus_rule_keep_what_they_could_not_deliver() {
    let t = template();
    let r = t.raw["Resources"].as_mapping().unwrap();
    let mut events = 0;
    for (id, f) in of_type(r, "AWS::Serverless::Function") {
        for (name, e) in f["Properties"]["Events"].as_mapping().into_iter().flatten() {
            if !matches!(e["Type"].as_str(), Some("ScheduleV2" | "EventBridgeRule")) {
                continue;
            }
            events += 1;
            assert_eq!(
                names(&e["Properties"]["DeadLetterConfig"]["Arn"]),
                Some("EventsDeadLetterQueue"),
                "{id}.{name:?}"
            );
        }
    }
    assert_eq!(events, 3, "two schedules and the bus rule");
    // The bus rule writes with the queue's leave, for this stack's bus only.
    let policy = &r[&Value::from("EventsDeadLetterQueuePolicy")]["Properties"];
    let s = &policy["PolicyDocument"]["Statement"][0];
    assert_eq!(
        s["Principal"]["Service"].as_str(),
        Some("events.amazonaws.com")
    );
    assert_eq!(s["Action"].as_str(), Some("sqs:SendMessage"));
    let source = match &s["Condition"]["ArnLike"]["aws:SourceArn"] {
        Value::Tagged(t) if t.tag == "!Sub" => t.value.as_str().unwrap_or_default(),
        other => panic!("a !Sub naming the bus: {other:?}"),
    };
    assert!(source.ends_with(":rule/${Bus}/*"), "{source}");
}

/// A `!Sub` string with each `${Name}` replaced by `Name`.
fn substituted(v: &Value) -> String {
    let Value::Tagged(t) = v else {
        panic!("a !Sub: {v:?}")
    };
    assert_eq!(t.tag, "!Sub");
    let text = t.value.as_str().expect("a !Sub string");
    let (mut out, mut rest) = (String::new(), text);
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find('}').expect("a closed ${…}") + at;
        out.push_str(&rest[at + 2..end]);
        rest = &rest[end + 1..];
    }
    out + rest
}

#[test]
fn the_dashboard_shows_every_metric_the_functions_write_and_every_queue_and_function() {
    use adtrail_domain::telemetry::METRICS;
    let t = template();
    let r = t.raw["Resources"].as_mapping().unwrap();
    // The functions write under the namespace the alarms and the
    // dashboard read.
    let namespace =
        substituted(&t.raw["Globals"]["Function"]["Environment"]["Variables"]["METRICS_NAMESPACE"]);
    assert_eq!(namespace, "adtrail/AWS::StackName");
    let dashboard = &r[&Value::from("Dashboard")]["Properties"];
    let body: serde_json::Value =
        serde_json::from_str(&substituted(&dashboard["DashboardBody"])).expect("JSON");
    let (shown, searched) = dashboard_lines(&body, &namespace);
    for (name, _) in METRICS {
        assert!(
            shown.iter().any(|(ns, n, _)| *ns == namespace && n == name)
                || searched.iter().any(|n| n == name),
            "the dashboard shows {name}"
        );
    }
    // Nothing of the stack's own is shown that no function writes, and no
    // id is a dimension.
    for (ns, name, dims) in &shown {
        if *ns == namespace {
            assert!(METRICS.iter().any(|(n, _)| n == name), "{name} is written");
            assert!(dims.len() <= 2, "{name}: one bounded dimension at most");
        }
    }
    every_function_and_queue_is_shown(r, &shown);
    alarms_read_what_the_functions_write(r);
}

/// A metric the dashboard shows: its namespace, its name, its dimensions.
type Line = (String, String, Vec<String>);

/// The dashboard's metric lines: those it shows (namespace, name,
/// dimensions) and the names its SEARCH expressions find, each under the
/// stack's namespace.
fn dashboard_lines(body: &serde_json::Value, namespace: &str) -> (Vec<Line>, Vec<String>) {
    let mut shown: Vec<(String, String, Vec<String>)> = vec![];
    let mut searched: Vec<String> = vec![];
    for w in body["widgets"].as_array().unwrap() {
        for line in w["properties"]["metrics"].as_array().unwrap() {
            let line = line.as_array().unwrap();
            if let Some(expression) = line[0]["expression"].as_str() {
                // SEARCH('{"<namespace>",<Dimension>} MetricName="<name>"', …)
                assert!(
                    expression.contains(&format!("{{\"{namespace}\",")),
                    "{expression}"
                );
                let name = expression.split("MetricName=\"").nth(1).unwrap();
                searched.push(name[..name.find('"').unwrap()].to_owned());
                continue;
            }
            let text: Vec<String> = line
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            shown.push((text[0].clone(), text[1].clone(), text[2..].to_vec()));
        }
    }
    (shown, searched)
}

/// Each function's and each queue's figures are on the dashboard.
fn every_function_and_queue_is_shown(r: &Mapping, shown: &[Line]) {
    let names_shown = |ns: &str, dimension: &str| -> Vec<String> {
        let mut v: Vec<String> = shown
            .iter()
            .filter(|(n, _, d)| n == ns && d.first().map(String::as_str) == Some(dimension))
            .map(|(_, _, d)| d[1].clone())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let mut functions: Vec<String> = of_type(r, "AWS::Serverless::Function")
        .into_iter()
        .map(|(id, _)| id.to_owned())
        .collect();
    functions.sort();
    assert_eq!(names_shown("AWS/Lambda", "FunctionName"), functions);
    let mut queues: Vec<String> = of_type(r, "AWS::SQS::Queue")
        .into_iter()
        .map(|(id, _)| format!("{id}.QueueName"))
        .collect();
    queues.sort();
    assert_eq!(names_shown("AWS/SQS", "QueueName"), queues);
}

/// The alarms on the stack's own metrics read names the functions write.
fn alarms_read_what_the_functions_write(r: &Mapping) {
    use adtrail_domain::telemetry::METRICS;
    for (id, a) in of_type(r, "AWS::CloudWatch::Alarm") {
        let p = &a["Properties"];
        let mut own: Vec<&str> = p["Metrics"]
            .as_sequence()
            .into_iter()
            .flatten()
            .filter_map(|m| m["MetricStat"]["Metric"]["MetricName"].as_str())
            .collect();
        // The stack's namespace is a !Sub; the AWS/… ones are plain text.
        if p["Namespace"].as_str().is_none() && p["MetricName"].as_str().is_some() {
            own.extend(p["MetricName"].as_str());
        }
        for name in own {
            assert!(METRICS.iter().any(|(n, _)| *n == name), "{id}: {name}");
        }
    }
}

/// An operator paged by an alarm finds it in the README's runbook: a row
/// whose first cell names it, or, for a function's errors and throttles,
/// names each function's `ErrorsAlarm` or `ThrottlesAlarm`.
#[test]
fn the_readme_says_what_to_do_when_each_alarm_fires() {
    let t = template();
    let r = t.raw["Resources"].as_mapping().unwrap();
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"),
    )
    .expect("README.md");
    let runbook = readme
        .split("### When an alarm fires")
        .nth(1)
        .and_then(|rest| rest.split("\n### ").next())
        .expect("a runbook section");
    let rows: Vec<&str> = runbook.lines().filter(|l| l.starts_with("| ")).collect();
    let first_cells: Vec<&str> = rows.iter().filter_map(|r| r.split(" | ").next()).collect();
    for (id, a) in of_type(r, "AWS::CloudWatch::Alarm") {
        let mut names = vec![format!("`{id}`")];
        if a["Properties"]["Namespace"].as_str() == Some("AWS/Lambda") {
            for kind in ["ErrorsAlarm", "ThrottlesAlarm"] {
                if id.ends_with(kind) {
                    names.push(format!("each function's `{kind}`"));
                }
            }
        }
        assert!(
            first_cells
                .iter()
                .any(|c| names.iter().any(|n| c.contains(n.as_str()))),
            "{id}: no runbook row names it ({names:?})"
        );
    }
}
