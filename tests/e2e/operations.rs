//! What an operator relies on in the template: data that outlives the
//! stack (the table, the key with its alias, the bucket), thumbnails no
//! longer referenced expiring, a retention on
//! every log group, the API's throttling and access log, and every route
//! behind the JWT authorizer but the two Meta calls; and every event on the
//! bus, with its schema, kept in the bus's archive.

use adtrail_local::template::{Template, default_path};
use std::path::Path;

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
fn the_bucket_expires_the_thumbnails_an_erasure_tags() {
    use adtrail_store::blobs::UNREFERENCED_TAG;
    let t = template();
    let rules =
        t.raw["Resources"]["ThumbnailBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
            .as_sequence()
            .expect("a lifecycle rule");
    let rule = rules
        .iter()
        .find(|r| r["Id"].as_str() == Some("unreferenced-thumbnails"))
        .expect("the unreferenced thumbnails' rule");
    assert_eq!(rule["Status"].as_str(), Some("Enabled"));
    assert_eq!(rule["Prefix"].as_str(), Some("thumbnails/"));
    let tag = &rule["TagFilters"][0];
    assert_eq!(
        (tag["Key"].as_str(), tag["Value"].as_str()),
        (Some(UNREFERENCED_TAG.0), Some(UNREFERENCED_TAG.1)),
        "the tag the sweeper puts"
    );
    assert!(rule["ExpirationInDays"].as_i64().is_some_and(|d| d >= 1));
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
    assert_eq!(groups.len(), 6, "six functions");
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

#[test]
fn every_api_route_but_metas_webhook_sits_behind_the_jwt_authorizer() {
    let t = template();
    let api = &t.raw["Resources"]["HttpApi"]["Properties"]["Auth"];
    assert_eq!(api["DefaultAuthorizer"].as_str(), Some("Jwt"));
    let events = t.raw["Resources"]["ApiFunction"]["Properties"]["Events"]
        .as_mapping()
        .unwrap();
    // The routes the handler's table marks public (Meta calls them, and
    // the handler checks them itself) are the only ones without the
    // authorizer, in the template and in the OpenAPI document.
    let public: Vec<String> = adtrail_api::ROUTES
        .iter()
        .filter(|r| r.public)
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(public, ["GET /v1/webhooks/meta", "POST /v1/webhooks/meta"]);
    let mut routes: Vec<String> = events
        .values()
        .filter_map(|e| {
            // The default route (no path) sends every other request to the
            // function, which answers 404 or 405 with `Allow` itself.
            let route = format!(
                "{} {}",
                e["Properties"]["Method"].as_str()?,
                e["Properties"]["Path"].as_str()?
            );
            let auth = &e["Properties"]["Auth"];
            // A browser's preflight: no route of the API's own (see
            // identity.rs), outside the authorizer as it carries no token.
            if route == "OPTIONS /{proxy+}" {
                assert_eq!(auth["Authorizer"].as_str(), Some("NONE"), "{route}");
                return None;
            }
            if public.contains(&route) {
                assert_eq!(auth["Authorizer"].as_str(), Some("NONE"), "{route}");
            } else {
                assert!(auth.is_null(), "{route} overrides the authorizer");
            }
            Some(route)
        })
        .collect();
    assert!(
        events.values().any(|e| e["Properties"]["Path"].is_null()
            && e["Properties"]["Method"].is_null()
            && e["Type"].as_str() == Some("HttpApi")),
        "a default route"
    );
    routes.sort();
    // The template, the handler's route table and the OpenAPI document
    // list the same routes.
    let mut table: Vec<String> = adtrail_api::ROUTES
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    table.sort();
    assert_eq!(routes, table, "template routes = the handler's table");
    let doc: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../api/openapi.yaml"))
            .expect("api/openapi.yaml"),
    )
    .expect("yaml");
    let mut documented = vec![];
    for (path, item) in doc["paths"].as_mapping().unwrap() {
        for (method, op) in item.as_mapping().unwrap() {
            let route = format!(
                "{} {}",
                method.as_str().unwrap().to_uppercase(),
                path.as_str().unwrap()
            );
            let open = op["security"].as_sequence().is_some_and(|s| s.is_empty());
            assert_eq!(open, public.contains(&route), "{route}: security");
            documented.push(route);
        }
    }
    documented.sort();
    assert_eq!(
        documented, table,
        "the OpenAPI document = the handler's table"
    );
}

#[test]
fn the_committed_samconfig_names_only_the_templates_parameters() {
    let t = template();
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../samconfig.toml"))
            .expect("samconfig.toml");
    let mut named = 0;
    for line in text
        .lines()
        .filter(|l| l.starts_with("parameter_overrides"))
    {
        let overrides = line.split_once('=').map(|(_, v)| v).unwrap_or_default();
        for pair in overrides.trim().trim_matches('"').split("\\\" ") {
            let name = pair.split('=').next().unwrap_or_default().trim();
            if name.is_empty() {
                continue;
            }
            assert!(
                !t.raw["Parameters"][name].is_null(),
                "samconfig.toml sets {name}, which the template does not take"
            );
            named += 1;
        }
    }
    assert!(
        named >= 8,
        "both businesses' parameters were read ({named})"
    );
    assert!(
        !text.contains("[default"),
        "no default section: plain sam commands stay unaffected"
    );
}

#[test]
fn every_event_has_a_schema_and_the_bus_an_archive() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/schemas");
    let mut names = vec![];
    for entry in std::fs::read_dir(&dir).expect("events/schemas") {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let kind = name.strip_suffix(".v1.json").expect("<DetailType>.v1.json");
        let schema = adtrail_tests::bus::event_schema(kind);
        jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            schema["additionalProperties"],
            serde_json::json!(false),
            "{name} is closed"
        );
        names.push(kind.to_owned());
    }
    names.sort();
    assert_eq!(
        names,
        [
            "AccountSyncFailed",
            "ConnectionExpiringSoon",
            "ConnectionTokenInvalid",
            "ConversionFailed",
            "FormLeadArrived",
            "SyncRequested"
        ]
    );
    // An event that breaks its schema is caught: the check can fail.
    let bad = serde_json::json!({"ownerKey": "o"});
    let schema = adtrail_tests::bus::event_schema("ConnectionExpiringSoon");
    assert!(!jsonschema::is_valid(&schema, &bad));
    let t = template();
    let archive = &t.raw["Resources"]["BusArchive"]["Properties"];
    assert_eq!(
        reference(&archive["RetentionDays"]),
        Some("EventArchiveDays")
    );
    assert_eq!(
        archive["EventPattern"]["source"][0].as_str(),
        Some("adtrail")
    );
}

/// EventBridge failing the event on its side three times running (the
/// SDK retries none: the request succeeded): the API puts it again, and it
/// reaches the bus once, by its schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_request_reaches_the_bus_by_its_schema() {
    let h = adtrail_tests::Harness::start().await;
    let tap = h.tap_bus().await;
    h.put_site("loja-x", "BRL").await;
    let faults = &h.runner().stack.cloud.faults;
    faults.set_batch_share(0.0);
    faults.refuse_next_batches(3);
    h.expect(202, "POST", "/v1/sites/loja-x/sync", None).await;
    assert_eq!(faults.injected().get("batch entries failed"), Some(&3));
    let events = tap.take(&h).await;
    let requested = events
        .iter()
        .filter(|e| e.detail_type == "SyncRequested" && e.detail["siteId"] == "loja-x");
    assert_eq!(requested.count(), 1, "{events:?}");
}

#[tokio::test]
async fn sam_local_gets_every_resource_name_of_the_local_stack() {
    let h = adtrail_tests::Harness::start().await;
    let env = adtrail_local::sam_env::env_vars(&h.app);
    let t = template();
    let declared = |v: &Value| -> Vec<String> {
        v.as_mapping()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| reference(v).and(k.as_str()).map(str::to_owned))
            .collect()
    };
    let globals = declared(&t.raw["Globals"]["Function"]["Environment"]["Variables"]);
    for f in &t.functions {
        let vars = &env[f.logical_id.as_str()];
        // Every variable that names one of the stack's resources (a !Ref)
        // has the local stack's name, or no value where the template names
        // a parameter (the log level, the Meta app's secret when none).
        let own = declared(
            &t.raw["Resources"][f.logical_id.as_str()]["Properties"]["Environment"]["Variables"],
        );
        for name in globals.iter().chain(&own) {
            let refers =
                reference(&t.raw["Globals"]["Function"]["Environment"]["Variables"][name.as_str()])
                    .or_else(|| {
                        reference(
                            &t.raw["Resources"][f.logical_id.as_str()]["Properties"]["Environment"]
                                ["Variables"][name.as_str()],
                        )
                    })
                    .unwrap_or_default();
            let is_resource = t.raw["Resources"].get(refers).is_some();
            if is_resource {
                assert!(
                    vars[name.as_str()].as_str().is_some_and(|v| !v.is_empty()),
                    "{}: {name}",
                    f.logical_id
                );
            }
        }
        assert_eq!(
            vars["TABLE_NAME"].as_str(),
            Some(h.store().names.table.as_str())
        );
        for (name, value) in vars.as_object().unwrap() {
            let value = value.as_str().unwrap();
            assert!(
                !value.contains("127.0.0.1"),
                "{name}: {value} is the host's loopback"
            );
        }
    }
    let endpoint = adtrail_local::sam_env::endpoint(&h.app);
    assert!(endpoint.contains("host.docker.internal"), "{endpoint}");
    // The endpoint is the template's, declared only when set.
    let aws = &t.raw["Globals"]["Function"]["Environment"]["Variables"]["AWS_ENDPOINT_URL"];
    assert!(format!("{aws:?}").contains("HasLocalEndpoint"), "{aws:?}");
    assert_eq!(
        t.raw["Parameters"]["LocalEndpointUrl"]["Default"].as_str(),
        Some("")
    );
}

/// `sam build` runs `cargo lambda build` in each function's CodeUri: the
/// function's own crate, so cargo resolves that crate's features alone and
/// the binary links only its SDK clients. From the workspace root
/// (`CodeUri: .`) cargo would unify every member's features into each one.
#[test]
fn each_function_builds_from_its_own_crate() {
    let t = template();
    let root = default_path()
        .parent()
        .expect("the template's folder")
        .to_path_buf();
    let mut functions = 0;
    for (id, resource) in t.raw["Resources"].as_mapping().expect("resources") {
        if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        functions += 1;
        let id = id.as_str().unwrap_or_default();
        assert_eq!(
            resource["Metadata"]["BuildMethod"].as_str(),
            Some("rust-cargolambda"),
            "{id}"
        );
        let binary = resource["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap_or_else(|| panic!("{id} names its binary"));
        let code_uri = resource["Properties"]["CodeUri"]
            .as_str()
            .unwrap_or_else(|| panic!("{id} has a CodeUri"));
        assert_ne!(
            code_uri.trim_end_matches('/'),
            ".",
            "{id} builds from the root"
        );
        let manifest = std::fs::read_to_string(root.join(code_uri).join("Cargo.toml"))
            .unwrap_or_else(|e| panic!("{id}: {code_uri}/Cargo.toml: {e}"));
        assert!(
            manifest.contains(&format!("name = \"{binary}\"")),
            "{id}: {code_uri} is the crate of {binary}"
        );
        assert!(
            !manifest.contains("[workspace]"),
            "{id}: {code_uri} is a member"
        );
        // Linked at a fixed address, as the hello world it is measured against.
        assert!(
            manifest.contains(LINK_SCRIPT),
            "{id}: {code_uri} {LINK_SCRIPT}"
        );
    }
    assert_eq!(functions, 6, "every function checked");
    let hello = std::fs::read_to_string(root.join("infra/hello/Cargo.toml")).expect("hello");
    assert!(hello.contains(LINK_SCRIPT), "infra/hello {LINK_SCRIPT}");
}

/// The build script every function and the hello world link with.
const LINK_SCRIPT: &str = "build = \"../../infra/build/lambda-link.rs\"";
