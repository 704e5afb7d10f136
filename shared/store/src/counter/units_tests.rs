//! The request units the counter books for writes, reads and index entries.

use super::*;

#[test]
fn writes_count_kilobytes_twice_in_a_transaction_and_reads_four() {
    let mut u = Units::default();
    let small = r#"{"Item": {"pk": {"S": "a"}, "n": {"N": "12"}}}"#;
    u.request("PutItem", small.as_bytes());
    assert_eq!(u.write, 1.0);
    let big = format!(r#"{{"Item": {{"pk": {{"S": "{}"}}}}}}"#, "x".repeat(1_500));
    u.request("PutItem", big.as_bytes());
    assert_eq!(u.write, 3.0, "1.5 KB is two units");
    let tx = r#"{"TransactItems": [{"Put": {"Item": {"pk": {"S": "a"}}}},
        {"Update": {"Key": {"pk": {"S": "b"}}}}]}"#;
    u.request("TransactWriteItems", tx.as_bytes());
    assert_eq!(u.write, 7.0, "each of a transaction's two items twice");
    let read = u.request("Query", br#"{"ConsistentRead": false}"#);
    let answer = format!(
        r#"{{"Items": [{{"pk": {{"S": "{}"}}}}]}}"#,
        "y".repeat(5_000)
    );
    u.response(&read, answer.as_bytes(), true);
    assert_eq!(u.read, 1.0, "two 4 KB units, halved");
    assert!(u.largest_item >= 1_500);
}

#[test]
fn a_transactions_condition_check_is_billed_as_a_write_of_the_item_it_checks() {
    let mut u = Units::default();
    let check = r#"{"TransactItems": [{"ConditionCheck": {"TableName": "t",
        "Key": {"pk": {"S": "site#s"}, "sk": {"S": "link#a"}},
        "ConditionExpression": "runId = :run"}}]}"#;
    u.request("TransactWriteItems", check.as_bytes());
    assert_eq!((u.write, u.read), (2.0, 0.0), "2 write units, no read");
    // A checked item of 1.5 KB, as a put left it: two kilobytes, twice.
    let big = format!(
        r#"{{"TableName": "t", "Item": {{"pk": {{"S": "site#s"}}, "sk": {{"S": "link#a"}}, "x": {{"S": "{}"}}}}}}"#,
        "x".repeat(1_500)
    );
    let put = u.request("PutItem", big.as_bytes());
    u.response(&put, b"{}", true);
    let before = u.write;
    u.request("TransactWriteItems", check.as_bytes());
    assert_eq!(u.write - before, 4.0);
    assert_eq!(u.by["TxCheck site"], (6.0, 0.0, 0));
}

#[test]
fn an_update_and_a_delete_count_the_item_a_succeeded_put_left() {
    let mut u = Units::default();
    let key = r#"{"pk": {"S": "count#s"}, "sk": {"S": "total"}}"#;
    let big = format!(
        r#"{{"TableName": "t", "Item": {{"pk": {{"S": "count#s"}}, "sk": {{"S": "total"}}, "x": {{"S": "{}"}}}}}}"#,
        "x".repeat(1_500)
    );
    let refused = u.request("PutItem", big.as_bytes());
    u.response(&refused, b"{}", false);
    let add = format!(
        r#"{{"TableName": "t", "Key": {key}, "UpdateExpression": "ADD n :n",
            "ExpressionAttributeValues": {{":n": {{"N": "1"}}}}}}"#
    );
    u.request("UpdateItem", add.as_bytes());
    assert_eq!(
        u.write, 3.0,
        "a refused put left no item: the update is small"
    );
    let put = u.request("PutItem", big.as_bytes());
    u.response(&put, b"{}", true);
    let before = u.write;
    u.request("UpdateItem", add.as_bytes());
    assert_eq!(
        u.write - before,
        2.0,
        "an ADD to a 1.5 KB item writes 2 units"
    );
    let delete = format!(r#"{{"TableName": "t", "Key": {key}}}"#);
    u.request("DeleteItem", delete.as_bytes());
    assert_eq!(u.write - before, 4.0, "and its delete 2");
}

fn update(expression: &str, condition: &str) -> f64 {
    let mut u = Units::default();
    let request = serde_json::json!({
        "Key": {"pk": {"S": "a"}},
        "UpdateExpression": expression,
        "ConditionExpression": condition,
        "ExpressionAttributeNames": {"#status": "status", "#at": "workAt"},
    });
    u.request("UpdateItem", request.to_string().as_bytes());
    u.write - 1.0
}

#[test]
fn index_entries_count_a_unit_each_written_and_two_moved() {
    let mut u = Units::default();
    let put =
        r#"{"Item": {"pk": {"S": "conv#s"}, "workShard": {"S": "send#1"}, "workAt": {"N": "5"}}}"#;
    u.request("PutItem", put.as_bytes());
    assert_eq!(u.write, 2.0, "the item and its work entry");
    let half = r#"{"Item": {"pk": {"S": "a"}, "workShard": {"S": "send#1"}}}"#;
    u.request("PutItem", half.as_bytes());
    assert_eq!(u.write, 3.0, "half an index key is no entry");
    assert_eq!(
        update("SET attempts = :n, workAt = :t", "#status = :p"),
        2.0
    );
    assert_eq!(update("SET a = :a, #at = if_not_exists(#at, :t)", ""), 2.0);
    assert_eq!(
        update("SET #status = :s REMOVE leaseId, workShard, workAt", ""),
        1.0
    );
    assert_eq!(
        update(
            "SET nextSyncAt = :n, dueShard = :d",
            "attribute_not_exists(dueShard)"
        ),
        1.0,
        "a new entry"
    );
    assert_eq!(
        update("SET runId = :r REMOVE dueShard", "attribute_exists(pk)"),
        1.0
    );
    assert_eq!(update("SET a = :a ADD leads :l", ""), 0.0);
    assert_eq!(
        update("set nextSyncAt = :n remove gsi1pk", ""),
        3.0,
        "both indexes, whatever the verbs' case"
    );
}

#[test]
fn a_batch_get_counts_each_key_read_found_or_not() {
    let mut u = Units::default();
    let read = u.request(
        "BatchGetItem",
        br#"{"RequestItems": {"t": {"Keys": [
            {"pk": {"S": "c#1"}}, {"pk": {"S": "c#2"}}, {"pk": {"S": "c#3"}}, {"pk": {"S": "c#4"}}
        ]}}}"#,
    );
    // One found of 5 KB (two units), two missed (one each), one handed
    // back unread; all halved, the read being eventual.
    let answer = format!(
        r#"{{"Responses": {{"t": [{{"pk": {{"S": "c#1"}}, "v": {{"S": "{}"}}}}]}},
            "UnprocessedKeys": {{"t": {{"Keys": [{{"pk": {{"S": "c#4"}}}}]}}}}}}"#,
        "z".repeat(5_000)
    );
    u.response(&read, answer.as_bytes(), true);
    assert_eq!(u.read, 2.0);
}
