//! Counting what a filter matches, per status: narrowed by kind and failure class only (or by
//! nothing), the count comes from the trigger-kept `operation_counts` and must equal what counting
//! the table says, through inserts, updates (claims, failures, endings) and removals; narrowed by
//! anything else, the table is counted.

mod common;

use std::collections::BTreeMap;

use oprec_core::operator::{CountMatchingParams, OperationFilter};
use oprec_core::{FailureClass, OperatorStore, Status, TerminalReason};
use oprec_postgres::PgStore;

/// What counting the table says for `condition`, per status.
async fn counted_plainly(store: &PgStore, condition: &str) -> BTreeMap<Status, u64> {
    let rows: Vec<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT status, count(*)::int8 FROM operations WHERE {condition} GROUP BY status"
    )))
    .fetch_all(store.pool())
    .await
    .unwrap();
    rows.into_iter()
        .map(|(s, n)| (s.parse().unwrap(), u64::try_from(n).unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_by_kind_and_class_counts_what_the_table_holds() {
    let store = common::fresh_store(4).await;
    // 600 operations of three kinds, in every status, some of them failed before.
    sqlx::query(
        "INSERT INTO operations (id, kind, payload, status, attempt, max_attempts, \
             next_eligible_at, last_failure_class, last_error, terminal_reason, created_at, \
             updated_at, terminal_at, claim_token, lease_until)
         SELECT gen_random_uuid(), 'k' || (g % 3), '{}', s, 1, 5, now(),
                CASE WHEN g % 4 = 0 THEN 'transient' WHEN g % 4 = 1 THEN 'permanent' END,
                CASE WHEN g % 4 < 2 THEN '{\"summary\": \"failed\"}'::jsonb END,
                CASE WHEN s = 'dead' THEN 'attempts_exhausted' END, now(), now(),
                CASE WHEN s IN ('succeeded', 'dead', 'cancelled') THEN now() END,
                CASE WHEN s = 'running' THEN gen_random_uuid() END,
                CASE WHEN s = 'running' THEN now() + interval '1 minute' END
         FROM (SELECT g, (ARRAY['pending', 'running', 'held', 'succeeded', 'dead',
                                'cancelled'])[1 + g % 6] AS s
               FROM generate_series(1, 600) g) AS x",
    )
    .execute(store.pool())
    .await
    .unwrap();
    let filters = |kinds: &[&str], classes: &[FailureClass]| OperationFilter {
        kinds: kinds.iter().map(|k| (*k).to_owned()).collect(),
        classes: classes.to_vec(),
        ..Default::default()
    };
    let cases = [
        (filters(&[], &[]), "true"),
        (filters(&["k1"], &[]), "kind = 'k1'"),
        (
            filters(&[], &[FailureClass::Transient]),
            "last_failure_class = 'transient'",
        ),
        (
            filters(
                &["k0", "k2"],
                &[FailureClass::Transient, FailureClass::Permanent],
            ),
            "kind IN ('k0', 'k2') AND last_failure_class IN ('transient', 'permanent')",
        ),
        (filters(&["no.such.kind"], &[]), "kind = 'no.such.kind'"),
        // Not from the counts: the table is counted.
        (
            OperationFilter {
                reasons: vec![TerminalReason::AttemptsExhausted],
                ..filters(&["k1"], &[])
            },
            "kind = 'k1' AND terminal_reason = 'attempts_exhausted'",
        ),
    ];
    let check = |store: PgStore| {
        let cases = cases.clone();
        async move {
            for (filter, condition) in cases {
                let got = store
                    .operation_count_matching(CountMatchingParams {
                        filter: filter.clone(),
                    })
                    .await
                    .unwrap();
                assert_eq!(got, counted_plainly(&store, condition).await, "{condition}");
            }
        }
    };
    check(store.clone()).await;
    // Changes: pending ones fail, running ones succeed, some go away.
    for statement in [
        "UPDATE operations SET last_failure_class = 'permanent' WHERE status = 'pending' \
         AND kind = 'k1'",
        "UPDATE operations SET status = 'succeeded', claim_token = NULL, lease_until = NULL, \
         terminal_at = now() WHERE status = 'running'",
        "DELETE FROM operations WHERE status = 'cancelled' AND kind = 'k2'",
    ] {
        sqlx::query(statement).execute(store.pool()).await.unwrap();
    }
    check(store.clone()).await;
    let all = store
        .operation_count_matching(CountMatchingParams {
            filter: OperationFilter::default(),
        })
        .await
        .unwrap();
    assert_eq!(all.values().sum::<u64>(), 500, "{all:?}");
    assert!(!all.contains_key(&Status::Running), "{all:?}");
}
