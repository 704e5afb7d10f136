//! Secrets never leave: the production log subscriber (every main's,
//! JSON, at TRACE) is captured for a whole scenario, with every API answer
//! and every event put on the bus, and searched for the Meta tokens, raw and
//! URL-encoded, and for the contact data of conversions (the hashes a host
//! sends as `meta`, and a plain phone sent there by mistake). A control line that plants the token must be found, so the
//! search is proven to look where the logs go.

use std::io::Write;
use std::sync::{Arc, Mutex};

use adtrail_fake_meta::{Knobs, Throttle};
use adtrail_tests::*;
use serde_json::{Value, json};

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber_writer::MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

mod tracing_subscriber_writer {
    pub use lambda_runtime::tracing::subscriber::fmt::MakeWriter;
}

fn encoded(token: &str) -> String {
    url::form_urlencoded::byte_serialize(token.as_bytes()).collect()
}

/// Tokens of the scenario: the agency's refused one and its second.
const REFUSED: &str = "EAAB-invalid-refused-token-42";
const SECOND: &str = "EAAB-second-agency-token-0003";
/// A plain phone a host sends as `meta` by mistake.
const PLAIN_PHONE: &str = "5511999991234";
/// Facebook Login's codes: a system user token's and a user token's.
const LOGIN_CODES: [&str; 2] = ["secret-login-code-4711", "secret-user-token-code-99"];
/// A form lead's answers: a person's name, e-mail and phone.
const FORM_ANSWERS: [&str; 3] = ["Lia Segredo", "lia.segredo@example.com", "+5511955554444"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_appears_in_any_log_line_answer_or_event() {
    // SAFETY: set before any thread of this test process reads them.
    unsafe {
        std::env::set_var("AWS_LAMBDA_LOG_LEVEL", "trace");
        std::env::set_var("AWS_LAMBDA_LOG_FORMAT", "json");
    }
    let logs = Capture::default();
    adtrail_store::logging::init_with_writer(logs.clone());

    let h = Harness::start().await;
    // Tap the bus, as a host subscribes to it.
    let tap = h.tap_bus().await;

    let mut answers: Vec<Value> = vec![];
    syncs_throttles_and_a_dying_token(&h, &mut answers).await;
    // Conversions: contact hashes go to Meta and nowhere else; a plain phone
    // sent by mistake as `meta` is ignored without being repeated.
    let hashes = [
        adtrail_domain::contact::sha256_hex(PLAIN_PHONE),
        adtrail_domain::contact::sha256_hex("contact-ana"),
    ];
    conversions_with_contact_hashes(&h, &mut answers, &hashes).await;
    facebook_logins(&h, &mut answers).await;
    a_form_lead_with_a_persons_answers(&h, &mut answers).await;

    let tapped = tap.take(&h).await;
    let events: Vec<String> = tapped.iter().map(|e| e.raw.clone()).collect();
    let kinds: Vec<String> = tapped.iter().map(|e| e.detail_type.clone()).collect();
    assert!(kinds.iter().any(|k| k == "AccountSyncFailed"), "{kinds:?}");
    assert!(
        kinds.iter().any(|k| k == "ConnectionTokenInvalid"),
        "{kinds:?}"
    );
    assert!(kinds.iter().any(|k| k == "ConversionFailed"), "{kinds:?}");
    let log_text = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    let found = Haystacks {
        logs: log_text,
        answers: serde_json::to_string(&answers).unwrap(),
        events: events.join("\n"),
        table: h.table_text().await,
    };
    assert!(
        found.logs.len() > 10_000,
        "the capture saw the run's logs ({} bytes)",
        found.logs.len()
    );
    found.hold_no_secret(&h);
    found.hold_no_contact_data(&hashes);
    control_lines_are_found(&logs, &hashes);
}

/// The agency linked and synced; a refused token, a throttle
/// (`AccountSyncFailed`), the token dying (`ConnectionTokenInvalid`), a
/// new token; the reads that show connections, status and spend.
async fn syncs_throttles_and_a_dying_token(h: &Harness, answers: &mut Vec<Value>) {
    let (refused, second) = (REFUSED, SECOND);
    h.link_agency().await;
    answers.push(
        h.call(
            "PUT",
            "/v1/meta/connections/agency",
            Some(json!({"accessToken": refused})),
        )
        .await
        .1,
    );
    h.sync_until_live(10).await;
    // A throttle (AccountSyncFailed), a token dying (ConnectionTokenInvalid), a new token.
    h.fake().set_knobs(Knobs {
        throttle: Some(Throttle {
            code: 4,
            remaining: 1,
            regain_minutes: 61,
            only_path: None,
        }),
        ..Knobs::default()
    });
    h.runner().advance(45 * 60_000).await.unwrap();
    h.runner().tick().await.unwrap();
    h.fake().kill_token(TOKEN);
    h.runner().advance(3 * 3_600_000).await.unwrap();
    h.runner().tick().await.unwrap();
    answers.push(h.connect(second).await);
    h.runner().tick().await.unwrap();
    for path in [
        "/v1/meta/connections/agency",
        "/v1/meta/status?siteIds=loja-x,pet-mania",
    ] {
        answers.push(h.call("GET", path, None).await.1);
    }
    let day = T0 - T0 % 86_400_000;
    answers.push(
        h.call(
            "GET",
            &format!(
                "/v1/sites/loja-x/spend?from={}&to={day}",
                day - 29 * 86_400_000
            ),
            None,
        )
        .await
        .1,
    );
}

/// A pixel, a board and its event map, a lead's changes with `meta`
/// hashes (one a plain phone by mistake), and a permission failure that
/// puts `ConversionFailed` on the bus.
async fn conversions_with_contact_hashes(
    h: &Harness,
    answers: &mut Vec<Value>,
    hashes: &[String; 2],
) {
    let plain_phone = PLAIN_PHONE;
    let meta = json!({"ph": [hashes[0]], "externalId": hashes[1]});
    for (method, path, body) in [
        (
            "PUT",
            "/v1/sites/loja-x/pixel",
            json!({"pixelId": adtrail_fake_meta::LOJA_PIXEL.0, "ownerKey": "agency"}),
        ),
        (
            "PUT",
            "/v1/sites/loja-x/pipeline",
            json!({"columns": [{"key": "agendado", "name": "Agendado"}]}),
        ),
        (
            "PUT",
            "/v1/sites/loja-x/event-map",
            json!({"columns": {"agendado": "Schedule"}, "sendLeadEvent": true}),
        ),
        (
            "POST",
            "/v1/sites/loja-x/leads",
            json!({"leadKey": "ana", "changeId": "s1", "occurredAt": h.now(), "origin": "organic", "meta": meta}),
        ),
        (
            "POST",
            "/v1/sites/loja-x/leads/ana/stage",
            json!({"changeId": "s2", "occurredAt": h.now(), "column": "agendado", "meta": {"ph": [plain_phone]}}),
        ),
        (
            "POST",
            "/v1/sites/loja-x/leads/ana/stage",
            json!({"changeId": "s3", "occurredAt": h.now(), "stage": "won", "revenueCents": 45_990, "meta": meta}),
        ),
    ] {
        let (status, body) = h.call(method, path, Some(body)).await;
        assert!(status < 300, "{path}: {body}");
        answers.push(body);
    }
    h.runner().drain().await.unwrap();
    // A permission failure puts ConversionFailed on the bus.
    h.fake().tune(|k| k.deny_events = true);
    let (_, body) = h
        .call("POST", "/v1/sites/loja-x/leads", Some(json!({"leadKey": "bia", "changeId": "s4", "occurredAt": h.now(), "origin": "organic", "meta": meta})))
        .await;
    answers.push(body);
    h.runner().drain().await.unwrap();
    assert_eq!(
        h.fake().accepted_events().len(),
        2,
        "Lead and Purchase reached Meta"
    );
    for path in [
        "/v1/sites/loja-x/conversions",
        "/v1/meta/status?siteIds=loja-x",
        "/v1/sites/loja-x/event-map",
    ] {
        answers.push(h.call("GET", path, None).await.1);
    }
}

/// Facebook Login: a system user token (with `/debug_token`, whose
/// query carries the token) and a user token traded for a long-lived one.
async fn facebook_logins(h: &Harness, answers: &mut Vec<Value>) {
    let login_codes = LOGIN_CODES;
    for (owner, code) in [("login-a", login_codes[0]), ("login-b", login_codes[1])] {
        let (s, body) = h
            .call(
                "POST",
                &format!("/v1/meta/connections/{owner}/login"),
                Some(json!({"code": code, "redirectUri": "https://app.example.com/cb"})),
            )
            .await;
        assert_eq!(s, 200, "{body}");
        answers.push(body);
        answers.push(
            h.call("GET", &format!("/v1/meta/connections/{owner}"), None)
                .await
                .1,
        );
    }
}

/// Lead Ads: a form lead on Loja X's Page, with a person's answers. The
/// one-lead read shows them (to the host, by design); nothing else may:
/// no log line, other answer, event or item.
async fn a_form_lead_with_a_persons_answers(h: &Harness, answers: &mut Vec<Value>) {
    let form_answers = FORM_ANSWERS;
    h.expect(
        201,
        "PUT",
        &format!("/v1/sites/loja-x/pages/{}", adtrail_fake_meta::LOJA_PAGE),
        Some(json!({"ownerKey": "agency"})),
    )
    .await;
    let lead = h
        .fake()
        .submit_lead(adtrail_fake_meta::Submission {
            page_id: adtrail_fake_meta::LOJA_PAGE.into(),
            form_id: adtrail_fake_meta::SAMPLE_FORMS[0].0.into(),
            ad_id: None,
            answers: ["full_name", "email", "phone_number"]
                .iter()
                .zip(form_answers)
                .map(|(k, v)| ((*k).to_owned(), vec![v.to_owned()]))
                .collect(),
            delivery: adtrail_fake_meta::Delivery::Twice,
        })
        .await
        .unwrap();
    h.runner().drain().await.unwrap();
    answers.push(h.call("GET", "/v1/sites/loja-x/form-leads", None).await.1);
    let read = h
        .call(
            "GET",
            &format!("/v1/sites/loja-x/form-leads/{}", lead.leadgen_id),
            None,
        )
        .await
        .1;
    assert!(
        read.to_string().contains(form_answers[1]),
        "the host reads them"
    );
}

/// Where a secret must not be: every log line, answer, event and item.
struct Haystacks {
    logs: String,
    answers: String,
    events: String,
    table: String,
}

impl Haystacks {
    /// The Meta tokens raw and URL-encoded; the login's codes, the app's
    /// secret, every token Meta issued, the Pages' tokens, the webhook's
    /// verify token and a form lead's answers, in items too.
    fn hold_no_secret(&self, h: &Harness) {
        for token in [TOKEN, REFUSED, SECOND] {
            self.lack(token);
        }
        let issued: Vec<String> = h
            .fake()
            .requests()
            .iter()
            .filter_map(|r| r.authorization.as_deref()?.strip_prefix("Bearer "))
            .filter(|t| t.starts_with("EAAS-") || t.starts_with("EAAL-") || t.starts_with("EAAU-"))
            .map(str::to_owned)
            .collect();
        assert!(
            issued.len() >= 2,
            "the logins' tokens were used: {issued:?}"
        );
        for needle in LOGIN_CODES
            .iter()
            .map(|c| (*c).to_owned())
            .chain([adtrail_fake_meta::FAKE_APP_SECRET.to_owned()])
            .chain(issued)
            // The Pages' tokens the connects listed (Lead Ads is on locally),
            // the webhook's verify token, a form lead's answers.
            .chain(
                adtrail_fake_meta::SAMPLE_PAGES
                    .iter()
                    .map(|(id, _, _)| adtrail_fake_meta::page_token(id)),
            )
            .chain([adtrail_fake_meta::FAKE_WEBHOOK_VERIFY_TOKEN.to_owned()])
            .chain(FORM_ANSWERS.map(str::to_owned))
        {
            assert!(!self.table.contains(&needle), "an item carries {needle}");
            self.lack(&needle);
        }
    }

    /// `needle`, raw and URL-encoded, in no log line, answer or event.
    fn lack(&self, needle: &str) {
        for needle in [needle.to_owned(), encoded(needle)] {
            assert!(!self.logs.contains(&needle), "a log line carries {needle}");
            assert!(
                !self.answers.contains(&needle),
                "an answer carries {needle}"
            );
            assert!(!self.events.contains(&needle), "an event carries {needle}");
        }
    }

    /// The hashes and the plain phone: a log line that has one is shown
    /// with the value masked.
    fn hold_no_contact_data(&self, hashes: &[String; 2]) {
        let log_text = &self.logs;
        for needle in hashes.iter().map(String::as_str).chain([PLAIN_PHONE]) {
            if let Some(at) = log_text.find(needle) {
                let start = log_text[..at].rfind('\n').map_or(0, |i| i + 1);
                let end = log_text[at..].find('\n').map_or(log_text.len(), |i| at + i);
                let line: String = log_text[start..end]
                    .replace(needle, "<HERE>")
                    .chars()
                    .take(1500)
                    .collect();
                panic!("a log line carries contact data: {line}");
            }
            assert!(
                !self.answers.contains(needle),
                "an answer carries contact data"
            );
            assert!(
                !self.events.contains(needle),
                "an event carries contact data"
            );
        }
    }
}

/// The control: a token and a hash planted in a log line are found where
/// we looked.
fn control_lines_are_found(logs: &Capture, hashes: &[String; 2]) {
    tracing::warn!(planted = TOKEN, "control line");
    let log_text = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        log_text.contains(TOKEN),
        "the search would have found a leak"
    );
    tracing::warn!(planted = %hashes[0], "control line for contact data");
    let log_text = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        log_text.contains(&hashes[0]),
        "the search would have found a hash"
    );
}
