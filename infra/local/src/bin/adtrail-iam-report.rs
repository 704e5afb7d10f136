//! The IAM report of a test run: `make test` runs it after the suite, over
//! what each test's gates logged (`ADTRAIL_IAM_LOG_DIR`). It prints every
//! function's calls by operation, the faults injected, and each grant of
//! `template.yaml` that no call used; it fails when any call was refused,
//! or when a grant is unused and not listed in [`KEPT`] with its reason.

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

use adtrail_local::cloud::CallReport;
use adtrail_local::cloud::policy::{Grant, Policy};
use adtrail_local::template::{Template, default_path};

/// Grants no test exercises that stay, and why (the README repeats this).
const KEPT: &[(&str, &str, &str)] = &[
    (
        "ApiFunction",
        "s3:GetObject",
        "presigned thumbnail URLs are signed with the API's role; the SDK presigns without a request",
    ),
    (
        "SyncWorkerFunction",
        "dynamodb:DeleteItem",
        "a re-read day deletes the rows of ads Meta stopped reporting (spend_changes' Delete, proven by its property test, not reached by an e2e scenario yet)",
    ),
];

fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: adtrail-iam-report <dir of call logs>");
        return ExitCode::from(2);
    };
    let template = match Template::load(&default_path()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot read the template: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut total = CallReport::default();
    let mut stacks = 0;
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let Ok(report) = serde_json::from_str::<CallReport>(&text) else {
            continue;
        };
        stacks += 1;
        for (function, ops) in report.calls {
            for (op, n) in ops {
                *total
                    .calls
                    .entry(function.clone())
                    .or_default()
                    .entry(op)
                    .or_default() += n;
            }
        }
        total.used.extend(report.used);
        total.refused.extend(report.refused);
        for (kind, n) in report.faults {
            *total.faults.entry(kind).or_default() += n;
        }
    }
    let policy = Policy::from_template(&template.raw);
    let (ok, text) = judge(&policy, &total, stacks);
    println!("{text}");
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The report's text, and whether the run passes.
fn judge(policy: &Policy, total: &CallReport, stacks: usize) -> (bool, String) {
    let mut out = format!("IAM report over {stacks} local stacks\n");
    for (function, ops) in &total.calls {
        let n: u64 = ops.values().sum();
        out.push_str(&format!("  {function}: {n} calls\n"));
        for (op, n) in ops {
            out.push_str(&format!("    {op:<44} {n:>8}\n"));
        }
    }
    if !total.faults.is_empty() {
        out.push_str("  faults injected (DynamoDB's errors; SQS's and EventBridge's failed batch entries):\n");
        for (kind, n) in &total.faults {
            out.push_str(&format!("    {kind:<44} {n:>8}\n"));
        }
    }
    let unused: BTreeSet<Grant> = policy.grants().difference(&total.used).cloned().collect();
    let mut unexplained = vec![];
    for g in &unused {
        let kept = KEPT
            .iter()
            .find(|(f, a, _)| *f == g.principal && *a == g.action);
        match kept {
            Some((_, _, why)) => out.push_str(&format!(
                "  unused, kept: {} {} on {} ({why})\n",
                g.principal, g.action, g.resource
            )),
            None => unexplained.push(g),
        }
    }
    for g in &unexplained {
        out.push_str(&format!(
            "  UNUSED GRANT: {} ({}) {} on {}: no test called it; remove it or say why it stays\n",
            g.principal, g.policy, g.action, g.resource
        ));
    }
    for r in &total.refused {
        out.push_str(&format!("  REFUSED: {r}\n"));
    }
    let by_function: BTreeMap<&str, usize> = policy.functions().map(|f| (f, 0)).collect();
    for f in by_function.keys() {
        if !total.calls.contains_key(*f) {
            out.push_str(&format!("  note: {f} made no call in this run\n"));
        }
    }
    let ok = total.refused.is_empty() && unexplained.is_empty() && stacks > 0;
    (ok, out)
}
