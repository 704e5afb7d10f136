//! The policy check against the real template, and against the template as
//! it was at commit 19a168b (two grants short), which it must refuse.

use super::calls::{Call, Need, Target};
use super::policy::Policy;
use super::*;

fn template_text() -> String {
    std::fs::read_to_string(crate::template::default_path()).expect("template.yaml")
}

fn policy_of(text: &str) -> Policy {
    Policy::from_template(&serde_yaml_ng::from_str(text).expect("yaml"))
}

fn resources() -> Resources {
    Resources {
        tables: [("t-Table".to_owned(), "Table".to_owned())].into(),
        queues: [("t-SendQueue".to_owned(), "SendQueue".to_owned())].into(),
        keys: [("k1".to_owned(), "TokenKey".to_owned())].into(),
        ..Resources::default()
    }
}

fn call(service: &'static str, operation: &str, needs: &[(&str, Target)]) -> Call {
    Call {
        service,
        operation: operation.into(),
        needs: needs
            .iter()
            .map(|(a, t)| Need {
                action: (*a).into(),
                target: t.clone(),
            })
            .collect(),
        context: Default::default(),
    }
}

fn table(index: Option<&str>) -> Target {
    Target::Table {
        name: "t-Table".into(),
        index: index.map(str::to_owned),
    }
}

/// The two calls the review found refused in a real account.
fn day_one_calls() -> [(&'static str, Call); 2] {
    [
        (
            "SyncWorkerFunction",
            call(
                "dynamodb",
                "BatchGetItem",
                &[("dynamodb:BatchGetItem", table(None))],
            ),
        ),
        (
            "CapiSenderFunction",
            call(
                "dynamodb",
                "Query",
                &[("dynamodb:Query", table(Some("owner")))],
            ),
        ),
    ]
}

#[test]
fn the_template_allows_the_calls_the_review_found_refused() {
    let cloud = Cloud::new(policy_of(&template_text()), resources(), Faults::default());
    for (function, call) in day_one_calls() {
        assert_eq!(cloud.judge(function, &call), Ok(()), "{function}");
    }
}

#[test]
fn the_template_of_19a168b_is_refused_naming_the_missing_grants() {
    // 19a168b's sync worker had no BatchGetItem, and its sender queried
    // no index.
    let remove = |text: &str, grant: &str| {
        let out = text.replacen(grant, "", 1);
        assert_ne!(out, text, "the grant to remove is in the template: {grant}");
        out
    };
    let old = remove(
        &template_text(),
        "                  # The catalog entries of the ads that brought leads.\n                  - dynamodb:BatchGetItem\n",
    );
    let old = remove(
        &old,
        "              # are found in the owner index.\n              - Effect: Allow\n                Action: dynamodb:Query\n                Resource: !Sub \"${Table.Arn}/index/owner\"\n",
    );
    let cloud = Cloud::new(policy_of(&old), resources(), Faults::default());
    let said: Vec<String> = day_one_calls()
        .iter()
        .map(|(f, c)| cloud.judge(f, c).expect_err("refused"))
        .collect();
    assert!(
        said[0].contains("SyncWorkerFunction called dynamodb:BatchGetItem")
            && said[0].contains(
                "add dynamodb:BatchGetItem on arn:aws:dynamodb:::table/Table to SyncWorkerRole"
            ),
        "{}",
        said[0]
    );
    assert!(
        said[1].contains("dynamodb:Query on arn:aws:dynamodb:::table/Table/index/owner"),
        "{}",
        said[1]
    );
    assert_eq!(cloud.report().refused.len(), 2);
}

#[test]
fn each_role_unseals_only_the_purposes_it_needs() {
    let cloud = Cloud::new(policy_of(&template_text()), resources(), Faults::default());
    let key = Target::Key { id: "k1".into() };
    let with = |action: &str, purpose: &str| {
        let mut c = call(
            "kms",
            action.trim_start_matches("kms:"),
            &[(action, key.clone())],
        );
        c.context.insert("owner".into(), "o".into());
        c.context.insert("purpose".into(), purpose.into());
        c
    };
    let connection = "meta-connection-token";
    let pixel = "meta-pixel-token";
    let cases = [
        ("ApiFunction", "kms:Encrypt", connection, true),
        ("ApiFunction", "kms:Encrypt", pixel, true),
        ("ApiFunction", "kms:Decrypt", connection, true),
        ("ApiFunction", "kms:Decrypt", pixel, false),
        ("SyncWorkerFunction", "kms:Decrypt", connection, true),
        ("SyncWorkerFunction", "kms:Decrypt", pixel, false),
        ("SyncWorkerFunction", "kms:Encrypt", connection, false),
        ("CapiSenderFunction", "kms:Decrypt", connection, true),
        ("CapiSenderFunction", "kms:Decrypt", pixel, true),
        ("CapiSenderFunction", "kms:Decrypt", "anything-else", false),
        ("SweeperFunction", "kms:Decrypt", connection, false),
        ("DispatcherFunction", "kms:Decrypt", connection, false),
    ];
    for (function, action, purpose, allowed) in cases {
        let verdict = cloud.judge(function, &with(action, purpose));
        assert_eq!(
            verdict.is_ok(),
            allowed,
            "{function} {action} {purpose}: {verdict:?}"
        );
    }
}

#[test]
fn roles_reach_only_their_own_queue_and_index() {
    let cloud = Cloud::new(policy_of(&template_text()), resources(), Faults::default());
    let send = Target::Queue {
        url: "http://h/123/t-SendQueue".into(),
    };
    let refused = [
        (
            "DispatcherFunction",
            call("sqs", "SendMessage", &[("sqs:SendMessage", send.clone())]),
        ),
        (
            "DispatcherFunction",
            call(
                "dynamodb",
                "Query",
                &[("dynamodb:Query", table(Some("owner")))],
            ),
        ),
        (
            // It erases a site query by query, never by a scan.
            "SweeperFunction",
            call("dynamodb", "Scan", &[("dynamodb:Scan", table(None))]),
        ),
        (
            "ApiFunction",
            call("dynamodb", "Scan", &[("dynamodb:Scan", table(None))]),
        ),
    ];
    for (function, c) in refused {
        assert!(
            cloud.judge(function, &c).is_err(),
            "{function} {:?}",
            c.needs
        );
    }
    let allowed = call("sqs", "SendMessageBatch", &[("sqs:SendMessage", send)]);
    assert_eq!(cloud.judge("SweeperFunction", &allowed), Ok(()));
}

#[test]
fn globs_match_as_iam_does() {
    use super::policy::glob;
    assert!(glob(
        "arn:aws:s3:::B/thumbnails/*",
        "arn:aws:s3:::B/thumbnails/a/b.jpg"
    ));
    assert!(!glob("arn:aws:s3:::B/thumbnails/*", "arn:aws:s3:::B/other"));
    assert!(glob("*", "anything"));
    assert!(glob("dynamodb:Get*", "dynamodb:GetItem"));
    assert!(!glob(
        "arn:aws:dynamodb:::table/Table",
        "arn:aws:dynamodb:::table/Table/index/owner"
    ));
}
