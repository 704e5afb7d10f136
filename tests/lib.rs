//! The end-to-end harness: one local stack per test (its own table, queues,
//! key, bucket and bus in the shared moto server, its own fake Meta), the
//! runner on a virtual clock, and an HTTP client that calls the API as a
//! host's server would, with a bearer token verified like API Gateway does.

pub mod bus;
mod fixtures;
pub mod queues;
pub mod runtime;
mod start;
pub mod table;

pub use fixtures::long_form_lead;

use adtrail_domain::links::SiteAdAccount;
use adtrail_domain::time::VirtualClock;
use adtrail_fake_meta::FakeMeta;
use adtrail_local::Runner;
use adtrail_local::app::App;
use adtrail_store::Store;
use serde_json::{Value, json};

/// 2026-06-30T12:00:00Z: the tests' "now", a Tuesday.
pub const T0: i64 = 1_782_820_800_000;

/// The sample agency's accounts: two BRL (Loja X), two USD (Pet Mania).
pub const LOJA_PRINCIPAL: &str = "act_1029384756";
pub const LOJA_MANAUS: &str = "act_1029384757";
pub const PET_EAST: &str = "act_2038475610";
pub const PET_WEST: &str = "act_2038475611";
pub const TOKEN: &str = "EAAB-sample-agency-token-0001";

pub struct Harness {
    pub app: App,
    pub clock: VirtualClock,
    pub http: reqwest::Client,
}

impl Harness {
    pub fn runner(&self) -> &Runner {
        self.app.runner()
    }
    pub fn store(&self) -> &Store {
        &self.app.runner().stack.store
    }
    pub fn fake(&self) -> &FakeMeta {
        self.app.fake.as_ref().expect("the fake Meta")
    }
    /// The other platforms' fakes.
    pub fn platforms(&self) -> &adtrail_fake_platforms::FakePlatforms {
        self.app.platforms.as_ref().expect("the platforms' fakes")
    }
    pub fn now(&self) -> i64 {
        self.runner().now()
    }

    /// Calls the API with the host's token: the status and the JSON body.
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let token = self.app.host_token();
        self.call_as(Some(&token), method, path, body.map(|b| b.to_string()))
            .await
    }

    /// Calls the API with any token (or none) and a raw body.
    pub async fn call_as(
        &self,
        token: Option<&str>,
        method: &str,
        path: &str,
        body: Option<String>,
    ) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.app.api_url));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b);
        }
        let resp = req.send().await.expect("the local API answers");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Calls the local API with no token: `headers` and the exact `body`
    /// bytes, as Meta calls its webhook. Answers the status, the
    /// content type and the body as text.
    pub async fn call_raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> (u16, String, String) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.app.api_url))
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.expect("the local API answers");
        let status = resp.status().as_u16();
        let kind = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        (status, kind, resp.text().await.unwrap_or_default())
    }

    /// Calls the API as the host and expects `status`: answers the parsed
    /// body, or fails the test showing it.
    pub async fn expect(
        &self,
        status: u16,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Value {
        let (got, answer) = self.call(method, path, body).await;
        assert_eq!(got, status, "{method} {path}: {answer}");
        answer
    }

    /// Registers a site (`PUT /v1/sites/{site}`).
    pub async fn put_site(&self, site: &str, currency: &str) -> Value {
        self.expect(
            200,
            "PUT",
            &format!("/v1/sites/{site}"),
            Some(json!({"name": site, "currency": currency})),
        )
        .await
    }

    /// Links an ad account to a site for `owner` (`201` when new).
    pub async fn link_account(&self, site: &str, account: &str, owner: &str) -> Value {
        self.expect(
            201,
            "PUT",
            &format!("/v1/sites/{site}/ad-accounts/{account}"),
            Some(json!({"ownerKey": owner})),
        )
        .await
    }

    /// `GET /v1/sites/{site}/spend` over UTC days `from..=to`.
    pub async fn spend(&self, site: &str, from: i64, to: i64) -> Value {
        self.expect(
            200,
            "GET",
            &format!("/v1/sites/{site}/spend?from={from}&to={to}"),
            None,
        )
        .await
    }

    /// Two sites, the agency connected as owner `agency`, every account
    /// linked to the site billing in its currency.
    pub async fn link_agency(&self) {
        for (site, currency) in [("loja-x", "BRL"), ("pet-mania", "USD")] {
            self.put_site(site, currency).await;
        }
        self.connect(TOKEN).await;
        for (site, account) in [
            ("loja-x", LOJA_PRINCIPAL),
            ("loja-x", LOJA_MANAUS),
            ("pet-mania", PET_EAST),
            ("pet-mania", PET_WEST),
        ] {
            self.link_account(site, account, "agency").await;
        }
    }

    pub async fn connect(&self, token: &str) -> Value {
        self.expect(
            200,
            "PUT",
            "/v1/meta/connections/agency",
            Some(json!({"accessToken": token})),
        )
        .await
    }

    /// Ticks (advancing the clock a little between) until every linked
    /// account is live or `max` ticks passed.
    pub async fn sync_until_live(&self, max: usize) {
        for _ in 0..max {
            self.runner().tick().await.expect("tick");
            let mut all_live = true;
            for site in ["loja-x", "pet-mania"] {
                for link in self.store().links().site_links(site).await.expect("links") {
                    all_live &= link.last_sync_at.is_some();
                }
            }
            if all_live {
                return;
            }
            self.runner().advance(2_000).await.expect("advance");
        }
    }

    /// The sample agency's accounts backfilled and live, and the clock at
    /// their first live sync: answers that time.
    pub async fn at_first_live_sync(&self) -> i64 {
        self.sync_until_live(10).await;
        let next = self.link("loja-x", LOJA_PRINCIPAL).await.next_sync_at;
        let next = next.expect("due");
        self.runner().set_clock(next).await.expect("clock");
        next
    }

    /// An owner's stored connection.
    pub async fn connection(&self, owner: &str) -> adtrail_store::connections::Connection {
        self.store()
            .connections()
            .get_connection(owner)
            .await
            .expect("read")
            .expect("connected")
    }

    pub async fn link(&self, site: &str, account: &str) -> SiteAdAccount {
        self.store()
            .links()
            .get_link(site, account)
            .await
            .expect("read")
            .expect("linked")
    }

    /// The insights time ranges the fake served for one account, in order.
    pub fn insights_ranges(&self, account: &str) -> Vec<(String, String)> {
        self.fake()
            .requests()
            .iter()
            .filter(|r| {
                r.path == format!("/v25.0/{account}/insights") && !r.query.contains("after=")
            })
            .filter_map(|r| {
                let q: std::collections::HashMap<String, String> = url_decode(&r.query);
                let range: Value = serde_json::from_str(q.get("time_range")?).ok()?;
                Some((
                    range["since"].as_str()?.to_owned(),
                    range["until"].as_str()?.to_owned(),
                ))
            })
            .collect()
    }

    /// Calls the API handler itself, as the host, with other read budgets
    /// (the edges of a report without writing 12,000 rows).
    pub async fn call_with_limits(
        &self,
        limits: adtrail_api::ReportLimits,
        method: &str,
        path: &str,
    ) -> (u16, Value) {
        let api = adtrail_api::Api {
            limits,
            ..self.runner().api.clone()
        };
        call_handler(&api, method, path, b"").await
    }

    /// Every spend row of an account at a site.
    pub async fn all_rows(
        &self,
        site: &str,
        account: &str,
    ) -> Vec<adtrail_domain::spend::SpendRow> {
        self.store()
            .spend()
            .spend_rows(site, account, 0, i64::MAX / 2, usize::MAX)
            .await
            .expect("rows")
            .0
    }

    /// Asserts that every site-day sum equals the rows it sums.
    pub async fn assert_sums_match_rows(&self, site: &str, account: &str) {
        let (rows, _) = self
            .store()
            .spend()
            .spend_rows(site, account, 0, 9_999_999_999_999, usize::MAX)
            .await
            .expect("rows");
        let sums = self
            .store()
            .spend()
            .day_sums(site, account, 0, 9_999_999_999_999)
            .await
            .expect("sums");
        let mut from_rows =
            std::collections::BTreeMap::<i64, adtrail_domain::spend::SpendFigures>::new();
        for r in &rows {
            from_rows.entry(r.day_start).or_default().add(r.figures);
        }
        for (day, sum) in &sums {
            assert_eq!(
                from_rows.get(day).copied().unwrap_or_default(),
                *sum,
                "day {day} of {site}/{account}"
            );
        }
        for day in from_rows.keys() {
            assert!(
                sums.contains_key(day),
                "day {day} of {site}/{account} has rows but no sum"
            );
        }
    }
}

/// At the end of each test: what the functions called is written for the
/// run's IAM report (`ADTRAIL_IAM_LOG_DIR`), and a call a role does not
/// allow fails the test, naming the call and the missing grant, even when
/// the code under test swallowed AWS's refusal.
impl Drop for Harness {
    fn drop(&mut self) {
        let report = self.runner().stack.cloud.report();
        if let Some(dir) = std::env::var_os("ADTRAIL_IAM_LOG_DIR") {
            let dir = std::path::PathBuf::from(dir);
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("{}.json", uuid::Uuid::new_v4().simple()));
            if let Ok(text) = serde_json::to_string(&report) {
                let _ = std::fs::write(file, text);
            }
        }
        if std::thread::panicking() && !report.faults.is_empty() {
            let faults = &self.runner().stack.cloud.faults;
            eprintln!(
                "DynamoDB and batch faults injected in this test: {:?} (shares {} and {}, seed {}: ADTRAIL_DDB_FAULTS, ADTRAIL_BATCH_FAULTS and ADTRAIL_FAULT_SEED replay them)",
                report.faults,
                faults.share(),
                faults.batch_share(),
                faults.seed(),
            );
        }
        if !report.refused.is_empty() && !std::thread::panicking() {
            panic!(
                "calls the template's roles do not allow:\n{}",
                report.refused.join("\n")
            );
        }
    }
}

/// Calls an API handler directly, as the host, with claims in API
/// Gateway's shape: for a handler built with other parts than the stack's.
pub async fn call_handler(
    api: &adtrail_api::Api,
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, Value) {
    let claims: std::collections::HashMap<String, String> = [
        ("sub".to_owned(), "host".to_owned()),
        ("scope".to_owned(), "adtrail:host".to_owned()),
    ]
    .into();
    let uri: lambda_http::http::Uri = path.parse().expect("path");
    let event = adtrail_local::http::api_gateway_event(
        &method.parse().expect("method"),
        &uri,
        &Default::default(),
        body,
        Some(&claims),
    );
    let response = adtrail_api::handle(
        api,
        lambda_http::request::from_str(&event.to_string()).expect("event"),
    )
    .await
    .expect("an answer");
    let status = response.status().as_u16();
    let body = match response.body() {
        lambda_http::Body::Text(t) => serde_json::from_str(t).expect("json"),
        other => panic!("unexpected body {other:?}"),
    };
    (status, body)
}

pub fn url_decode(query: &str) -> std::collections::HashMap<String, String> {
    url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect()
}

pub mod capi;
