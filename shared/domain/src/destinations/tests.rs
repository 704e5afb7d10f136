//! The destinations' rules, case by case: slugs, platform ids, credentials
//! (never printed), a slug's platform and archive, each platform's events.

use super::*;

fn destination(platform_account: Account) -> Destination {
    Destination {
        site_id: "s1".into(),
        slug: "tt".into(),
        account: platform_account,
        enabled: true,
        set_by: Some("dashboard:u1".into()),
        sealed_credentials: vec![1],
        credential_version: "v1".into(),
        stopped: false,
        last_error: None,
        created_at: 1,
        updated_at: 1,
        archived_at: None,
    }
}

#[test]
fn slugs_follow_their_grammar() {
    for ok in ["meta", "tiktok-br", "g2", "a"] {
        assert!(Slug::parse("slug", ok).is_ok(), "{ok}");
    }
    let long = "a".repeat(65);
    for bad in [
        "",
        "Meta",
        "2g",
        "tik_tok",
        "tiktok-",
        "-a",
        "a b",
        long.as_str(),
    ] {
        assert_eq!(Slug::parse("slug", bad).unwrap_err().field, "slug", "{bad}");
    }
}

#[test]
fn platform_ids_are_checked_by_their_own_shape() {
    assert_eq!(
        google_customer_id("operatingAccount", "123-456-7890").unwrap(),
        "1234567890"
    );
    assert!(google_customer_id("operatingAccount", "123456789").is_err());
    assert!(google_customer_id("operatingAccount", "12345678901").is_err());
    assert!(google_customer_id("operatingAccount", "1-2-3-4-5-6-7-8-9-0").is_err());
    assert!(snap_pixel_id("pixelId", "4a5b8c1d-0e2f-4a6b-8c9d-0e1f2a3b4c5d").is_ok());
    assert!(snap_pixel_id("pixelId", "4a5b8c1d0e2f4a6b8c9d0e1f2a3b4c5d").is_err());
    assert!(alphanumeric_id("pixelCode", "C4ABCDEF123", 64).is_ok());
    assert!(alphanumeric_id("pixelCode", "C4 AB", 64).is_err());
    assert!(test_event_code("testEventCode", "TEST123").is_ok());
    assert!(test_event_code("testEventCode", "").is_err());
}

#[test]
fn credentials_fit_their_platform_and_never_print() {
    let none = GoogleInput::default();
    let t = Credentials::for_platform(Platform::TikTok, Some("tok-1"), none).unwrap();
    assert_eq!(format!("{t:?}"), "Credentials::Token(<sealed>)");
    assert_eq!(Credentials::from_sealed_text(&t.to_sealed_text()), Some(t));
    let oauth = GoogleInput {
        client_id: Some("cid"),
        client_secret: Some("sec"),
        refresh_token: Some("rt"),
        ..none
    };
    let g = Credentials::for_platform(Platform::Google, None, oauth).unwrap();
    assert!(!format!("{g:?}").contains("sec"));
    assert_eq!(Credentials::from_sealed_text(&g.to_sealed_text()), Some(g));
    let key = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
    let account = GoogleInput {
        client_email: Some("adtrail@loja-x.iam.gserviceaccount.com"),
        private_key: Some(key),
        ..none
    };
    let sa = Credentials::for_platform(Platform::Google, None, account).unwrap();
    assert_eq!(
        format!("{sa:?}"),
        "Credentials::GoogleServiceAccount(<sealed>)"
    );
    assert_eq!(
        Credentials::from_sealed_text(&sa.to_sealed_text()),
        Some(sa)
    );
    let field = |p, token, g| Credentials::for_platform(p, token, g).unwrap_err().field;
    assert_eq!(field(Platform::Google, Some("x"), none), "credentials");
    assert_eq!(field(Platform::Snap, None, oauth), "credentials");
    assert_eq!(field(Platform::TikTok, Some("x"), account), "credentials");
    assert_eq!(
        field(
            Platform::Google,
            None,
            GoogleInput {
                client_id: Some("cid"),
                ..account
            }
        ),
        "credentials",
        "one shape or the other, never both"
    );
    assert_eq!(
        field(
            Platform::Google,
            None,
            GoogleInput {
                client_email: Some("someone@gmail.com"),
                ..account
            }
        ),
        "credentials.clientEmail"
    );
    assert_eq!(
        field(
            Platform::Google,
            None,
            GoogleInput {
                private_key: Some("-----BEGIN RSA PRIVATE KEY-----"),
                ..account
            }
        ),
        "credentials.privateKey"
    );
    let err = Credentials::for_platform(Platform::Pinterest, Some("has space"), none).unwrap_err();
    assert_eq!(err.field, "credentials.accessToken");
    assert!(!err.to_string().contains("has space"));
}

#[test]
fn a_slug_keeps_its_platform_its_archive_and_its_owner() {
    let d = destination(Account::TikTok {
        pixel_code: "C1".into(),
        test_event_code: None,
    });
    assert_eq!(
        may_replace(&d, Platform::TikTok, Some("dashboard:u1"), true),
        Ok(())
    );
    assert_eq!(
        may_replace(&d, Platform::Snap, Some("dashboard:u1"), true),
        Err(Unreplaceable::OtherPlatform(Platform::TikTok))
    );
    assert_eq!(
        may_replace(&d, Platform::TikTok, Some("dashboard:u2"), true),
        Err(Unreplaceable::OtherOwner)
    );
    // The host, not guarding ownership, may replace any owner's.
    assert_eq!(may_replace(&d, Platform::TikTok, None, false), Ok(()));
    let archived = Destination {
        archived_at: Some(5),
        ..d
    };
    assert_eq!(
        may_replace(&archived, Platform::TikTok, None, false),
        Err(Unreplaceable::Archived)
    );
    assert_eq!(archived.state(), DestinationState::Archived);
    assert!(!archived.takes_events());
}

#[test]
fn every_platform_names_every_event_it_sends() {
    for e in EventName::ALL {
        assert_eq!(platform_event(Platform::Meta, e), Some(e.as_str()));
        assert!(platform_event(Platform::Google, e).is_none());
        for p in [Platform::TikTok, Platform::Pinterest, Platform::Snap] {
            assert!(platform_event(p, e).is_some(), "{p:?} {e:?}");
        }
    }
    assert_eq!(
        platform_event(Platform::Snap, EventName::Purchase),
        Some("PURCHASE")
    );
    assert_eq!(
        platform_event(Platform::Pinterest, EventName::Purchase),
        Some("checkout")
    );
    let google = Account::Google {
        operating_account: "1234567890".into(),
        login_account: "1234567890".into(),
        conversion_actions: [(EventName::Purchase, "987".to_owned())].into(),
        validate_only: false,
    };
    assert!(google.sends(EventName::Purchase));
    assert!(!google.sends(EventName::Lead));
}
