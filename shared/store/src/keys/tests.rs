//! Tests of [`super`]: keys sort as the queries need, and every parsed key
//! is the key built.

use super::*;

#[test]
fn spend_keys_sort_by_day_then_ad() {
    let a = spend_sk(1_700_000_000_000, "9");
    let b = spend_sk(1_700_086_400_000, "1");
    assert!(a < b);
    assert_eq!(parse_spend_sk(&a), Some((1_700_000_000_000, "9")));
    let chunk = spend_chunk_sk(1_700_000_000_000, 7);
    assert!(day_sk(1_700_000_000_000) < chunk && chunk < a);
    assert!(chunk < format!("{}~", day_sk(1_700_000_000_000)));
    assert_eq!(parse_spend_chunk_sk(&chunk), Some((1_700_000_000_000, 7)));
    assert_eq!(parse_spend_chunk_sk(&a), None);
}

#[test]
fn a_send_batch_member_names_its_row_and_its_counters() {
    let sk = format!("1782820800000#{}", "ab".repeat(32));
    let m = send_batch_member(&sk, "meta-pets", "Purchase");
    assert_eq!(m, format!("{}|meta-pets|Purchase", "ab".repeat(16)));
    assert_eq!(parse_send_batch_member(&m), Some(("meta-pets", "Purchase")));
    assert_eq!(prefix("ação", 2), "aç", "cut between characters");
    assert_eq!(prefix("ab", 5), "ab");
}

#[test]
fn every_parsed_key_is_the_key_built() {
    for dim in [
        RollupDim::Origin("ctwa_ad".into()),
        RollupDim::Ad("123".into()),
    ] {
        assert_eq!(RollupDim::parse(&dim.key()), Some(dim));
    }
    assert_eq!(RollupDim::parse("x#1"), None);
    assert_eq!(parse_conv_pk(&conv_pk("loja-x")), Some("loja-x"));
    assert_eq!(
        parse_send_batch_pk(&send_batch_pk("loja-x")),
        Some("loja-x")
    );
    assert_eq!(parse_conv_pk(&send_batch_pk("loja-x")), None);
    // A batch's key is the prefix of its rows' keys.
    assert!(
        conv_sk(1_700_000_000_000, "e")
            .starts_with(&format!("{}#", send_batch_sk(1_700_000_000_000)))
    );
    assert_eq!(
        parse_count_day_sk(&count_day_sk(86_400_000)),
        Some(86_400_000)
    );
    assert_eq!(
        parse_link_keys(&site_pk("loja-x"), &link_sk("act_1")),
        Some(("loja-x", "act_1"))
    );
    assert_eq!(parse_claim_pk(&claim_pk("act_1")), Some("act_1"));
    assert_eq!(parse_purge_pk(&purge_pk("loja-x")), Some("loja-x"));
    for cadence in [Cadence::Interval, Cadence::Quiet] {
        assert_eq!(parse_slot_shard(slot_shard(cadence)), Some(cadence));
    }
    assert_eq!(parse_slot_shard("due#1"), None);
    assert_eq!(parse_expiry_sk(&expiry_sk(5, "o:1")), Some((5, "o:1")));
    assert!(expiry_sk(5, "a") < expiry_sk(40, "a"));
}

#[test]
fn shards_spread_and_stay_stable() {
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..200 {
        seen.insert(shard_of(&format!("site#act_{i}"), DUE_SHARDS));
    }
    assert_eq!(seen.len(), DUE_SHARDS as usize);
    assert_eq!(shard_of("x", 8), shard_of("x", 8));
}
