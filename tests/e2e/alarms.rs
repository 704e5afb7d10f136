//! Alarms that reach a person: the topic CloudWatch can publish to (its own
//! key), an optional e-mail subscription, an alarm on every function's
//! errors and throttles, on every dead-letter queue, the API's 5xx, failed
//! sync runs and the failed-conversion rate; every schedule and the bus rule
//! keep what they could not deliver.

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
