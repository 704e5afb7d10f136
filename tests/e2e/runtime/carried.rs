//! What the runtime scenario carries that no process may write: the
//! secrets, the contact data, the host's calls that bring them in, and
//! the list of them named for the search.

use adtrail_fake_meta::{FAKE_APP_SECRET, FAKE_WEBHOOK_VERIFY_TOKEN, LOJA_PIXEL};
use adtrail_tests::*;
use serde_json::{Value, json};

pub(super) const PIXEL_TOKEN: &str = "EAAB-loja-own-pixel-token-0009";
const LOGIN_CODE: &str = "sys-code-runtime-7";
/// A phone sent as `meta` by mistake.
const PLAIN_PHONE: &str = "5511988887777";

/// What the scenario carries that no process may write: contact data
/// (hashed by the host, and plain from a storefront) and each platform's
/// credentials.
pub(super) struct Carried {
    plain_phone: &'static str,
    hashes: [String; 2],
    meta: Value,
    contact: Value,
    /// The plain contact's values, as a log line could spell them.
    plain: [&'static str; 8],
    contact_hashes: [String; 3],
    service_account: adtrail_fake_platforms::ServiceAccountKey,
    /// Per destination: its platform, its ids and its credentials.
    credentials: [(&'static str, Value, Value); 5],
}

pub(super) fn carried(h: &Harness) -> Carried {
    let plain_phone = PLAIN_PHONE;
    let hashes = [
        adtrail_domain::contact::sha256_hex(plain_phone),
        adtrail_domain::contact::sha256_hex("contact-runtime"),
    ];
    let meta = json!({"ph": [hashes[0]], "externalId": hashes[1]});
    // A storefront's plain contact, and each platform's credentials.
    let contact = json!({"email": "zuleika.runtime@example.com", "phone": "+55 11 97777-6666",
        "firstName": "Zuleika", "ip": "203.0.113.77", "userAgent": "AdtrailRuntimeAgent/9.9",
        "fbc": "fb.1.1554763741205.RuntimeClick", "ttclid": "E.C.P.RuntimeTikTok"});
    let plain = [
        "zuleika.runtime@example.com",
        "97777-6666",
        "5511977776666",
        "Zuleika",
        "203.0.113.77",
        "AdtrailRuntimeAgent/9.9",
        "RuntimeClick",
        "RuntimeTikTok",
    ];
    let contact_hashes = [
        adtrail_domain::contact::sha256_hex("zuleika.runtime@example.com"),
        adtrail_domain::contact::sha256_hex("5511977776666"),
        adtrail_domain::contact::sha256_hex("+5511977776666"),
    ];
    let service_account = h.platforms().google_service_account();
    let credentials = [
        (
            "tiktok",
            json!({"pixelCode": "C4RUNTIME"}),
            json!({"accessToken": "tiktok-runtime-secret"}),
        ),
        (
            "google",
            json!({"operatingAccount": "1234567890", "conversionActions": {"purchase": "42"}}),
            json!({"clientId": "google-runtime-client", "clientSecret": "google-runtime-secret", "refreshToken": "google-runtime-refresh"}),
        ),
        (
            "google",
            json!({"operatingAccount": "1234567890", "conversionActions": {"purchase": "43"}}),
            json!({"clientEmail": service_account.client_email, "privateKey": service_account.private_key}),
        ),
        (
            "pinterest",
            json!({"adAccountId": "549755885175"}),
            json!({"accessToken": "pinterest-runtime-secret"}),
        ),
        (
            "snap",
            json!({"pixelId": "4a5b8c1d-0e2f-4a6b-8c9d-0e1f2a3b4c5d"}),
            json!({"accessToken": "snap-runtime-secret"}),
        ),
    ];
    Carried {
        plain_phone,
        hashes,
        meta,
        contact,
        plain,
        contact_hashes,
        service_account,
        credentials,
    }
}

/// The host's calls: a site, a connection and a login, an account, the
/// pixel with its own token, a board, a lead with `meta` hashes and a
/// plain phone by mistake, a destination on each platform, a storefront
/// purchase and a lead change with a plain contact.
pub(super) fn host_calls(s: &Carried, now: i64) -> Vec<(&'static str, String, Value)> {
    [
        (
            "PUT",
            "/v1/sites/loja-x",
            json!({"name": "Loja X", "currency": "BRL", "country": "BR"}),
        ),
        (
            "PUT",
            "/v1/meta/connections/agency",
            json!({"accessToken": TOKEN}),
        ),
        (
            "POST",
            "/v1/meta/connections/agency/login",
            json!({"code": LOGIN_CODE, "redirectUri": "https://app.example.com/meta/retorno"}),
        ),
        (
            "PUT",
            &format!("/v1/sites/loja-x/ad-accounts/{LOJA_PRINCIPAL}"),
            json!({"ownerKey": "agency"}),
        ),
        (
            "PUT",
            "/v1/sites/loja-x/pixel",
            json!({"pixelId": LOJA_PIXEL.0, "accessToken": PIXEL_TOKEN}),
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
            json!({"leadKey": "ana", "changeId": "r1", "occurredAt": now, "origin": "organic", "meta": s.meta}),
        ),
        (
            "POST",
            "/v1/sites/loja-x/leads/ana/stage",
            json!({"changeId": "r2", "occurredAt": now, "column": "agendado", "meta": {"ph": [s.plain_phone]}}),
        ),
    ]
    .into_iter()
    .map(|(m, p, b)| (m, p.to_owned(), b))
    .chain(s.credentials.iter().enumerate().map(|(i, (platform, ids, creds))| {
        let mut body = ids.clone();
        body["platform"] = json!(platform);
        body["credentials"] = creds.clone();
        ("PUT", format!("/v1/sites/loja-x/destinations/{platform}-{i}"), body)
    }))
    .chain(std::iter::once((
            "POST",
            "/v1/sites/loja-x/events".to_owned(),
            json!({"events": [{"eventId": "order-runtime", "event": "purchase", "occurredAt": now,
                "actionSource": "website", "eventSourceUrl": "https://loja-x.example/checkout",
                "valueCents": 1990, "currency": "BRL", "contact": s.contact}]}),
        )))
    // A lead's change with the same plain contact, fanned out to every
    // destination.
    .chain(std::iter::once((
        "POST",
        "/v1/sites/loja-x/leads".to_owned(),
        json!({"leadKey": "zu", "changeId": "r3", "occurredAt": now, "origin": "organic",
            "column": "agendado", "contact": s.contact}),
    )))
    .collect::<Vec<_>>()
}

/// Every secret the scenario carried, named.
pub(super) fn secrets_of(
    carried: &Carried,
    jwt: &str,
    signature: String,
    form_answers: [&'static str; 3],
) -> Vec<(&'static str, String)> {
    let Carried {
        plain_phone,
        hashes,
        plain,
        contact_hashes,
        service_account,
        credentials,
        ..
    } = carried;
    [
        ("the connection token", TOKEN.to_owned()),
        ("the pixel's token", PIXEL_TOKEN.to_owned()),
        ("the login code", LOGIN_CODE.to_owned()),
        ("the app secret", FAKE_APP_SECRET.to_owned()),
        (
            "the webhook's verify token",
            FAKE_WEBHOOK_VERIFY_TOKEN.to_owned(),
        ),
        ("a webhook delivery's signature", signature.clone()),
        (
            "a Page's token",
            adtrail_fake_meta::page_token(adtrail_fake_meta::SAMPLE_PAGES[0].0),
        ),
        ("a contact hash", hashes[0].clone()),
        ("a contact hash", hashes[1].clone()),
        ("the plain phone", (*plain_phone).to_owned()),
        ("the bearer JWT", jwt.split('.').nth(2).unwrap().to_owned()),
    ]
    .into_iter()
    .chain(
        plain
            .iter()
            .map(|p| ("a plain contact value", (*p).to_owned())),
    )
    .chain(
        form_answers
            .iter()
            .map(|a| ("a form lead's answer", (*a).to_owned())),
    )
    .chain(
        contact_hashes
            .iter()
            .map(|h| ("a posted contact's hash", h.clone())),
    )
    .chain(credentials.iter().flat_map(|(_, _, creds)| {
        creds
            .as_object()
            .unwrap()
            .values()
            .map(|v| ("a destination's credential", v.as_str().unwrap().to_owned()))
            .collect::<Vec<_>>()
    }))
    // A line of the service account's key, should any part of it leak.
    .chain(
        service_account
            .private_key
            .lines()
            .nth(3)
            .map(|line| ("a line of a service account's key", line.to_owned())),
    )
    .collect::<Vec<_>>()
}
