//! The environment `sam local invoke` and `sam local start-api` give each
//! function to run against `make local`'s stack: every variable the
//! template declares for it that names one of the stack's resources or the
//! fakes, with the names `make local` made, and addresses a container
//! reaches the host at (`ADTRAIL_SAM_HOST`, `host.docker.internal` by
//! default). SAM only overrides variables the template declares, so the
//! emulator's address comes in through the template's `LocalEndpointUrl`
//! parameter (`AWS_ENDPOINT_URL`, declared only when it is set).

use serde_json::{Map, Value};

use crate::app::App;

/// The host a container reaches this machine at.
fn sam_host() -> String {
    std::env::var("ADTRAIL_SAM_HOST").unwrap_or_else(|_| "host.docker.internal".into())
}

/// `url` as a container sees it.
fn from_container(url: &str) -> String {
    let host = sam_host();
    url.replace("127.0.0.1", &host).replace("0.0.0.0", &host)
}

/// The value the local stack gives `variable`, if it is one of its own.
fn value_of(app: &App, variable: &str) -> Option<String> {
    let n = &app.runner().stack.store.names;
    Some(match variable {
        "TABLE_NAME" => n.table.clone(),
        "SYNC_QUEUE_URL" => from_container(&n.sync_queue_url),
        "SEND_QUEUE_URL" => from_container(&n.send_queue_url),
        "LEADGEN_QUEUE_URL" => from_container(n.leadgen_queue_url.as_deref()?),
        "BUS_NAME" => n.bus.clone(),
        "KEY_ID" => n.key_id.clone(),
        "THUMBNAIL_BUCKET" => n.bucket.clone(),
        "META_APP_SECRET_ID" => n.meta_app_secret.clone()?,
        "META_GRAPH_URL" => from_container(&app.fake.as_ref()?.url()),
        "LEAD_ADS" => "on".into(),
        _ => return None,
    })
}

/// The emulator's address as a container sees it: the template's
/// `LocalEndpointUrl` (`sam local … --parameter-overrides
/// LocalEndpointUrl=<this>`).
pub fn endpoint(app: &App) -> String {
    from_container(&app.moto.url)
}

/// The file's JSON (`--env-vars`): each function's variables, by its
/// logical id.
pub fn env_vars(app: &App) -> Value {
    let raw = &app.runner().stack.template.raw;
    let declared = |v: &serde_yaml_ng::Value| -> Vec<String> {
        v.as_mapping()
            .into_iter()
            .flatten()
            .filter_map(|(k, _)| k.as_str().map(str::to_owned))
            .collect()
    };
    let globals = declared(&raw["Globals"]["Function"]["Environment"]["Variables"]);
    let mut functions = Map::new();
    for f in &app.runner().stack.template.functions {
        let own = declared(
            &raw["Resources"][f.logical_id.as_str()]["Properties"]["Environment"]["Variables"],
        );
        let vars: Map<String, Value> = globals
            .iter()
            .chain(&own)
            .filter_map(|v| Some((v.clone(), Value::String(value_of(app, v)?))))
            .collect();
        functions.insert(f.logical_id.clone(), Value::Object(vars));
    }
    Value::Object(functions)
}
