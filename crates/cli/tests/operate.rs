//! The operator's round trip on SQLite: migrate, enqueue (one, with a key, from standard input,
//! many), then list and show in text and JSON.

mod common;

use common::Oprec;

#[test]
fn migrate_enqueue_list_and_show() {
    let o = Oprec::new();
    let text = o.run(&["migrate"]).ok().to_owned();
    assert!(
        text.contains("migrated") && text.contains("oprec.db"),
        "{text}"
    );
    assert_eq!(o.run(&["migrate", "--json"]).json()["migrated"], true);
    // A schema that runs no demo gets no demo table; `--demo` adds it.
    let demo_table = || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(&o.url)
                .await
                .unwrap();
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM sqlite_master WHERE name = 'demo_effects'",
            )
            .fetch_one(&mut c)
            .await
            .unwrap()
        })
    };
    assert_eq!(demo_table(), 0, "migrate without --demo made demo_effects");
    assert!(o.run(&["migrate", "--demo"]).ok().contains("demo_effects"));
    assert_eq!(demo_table(), 1);

    let plain = o.run(&["enqueue", "--kind", "demo.noop", "--payload", "{\"n\": 1}"]);
    let id = plain.ok().trim().to_owned();
    assert_eq!(id.len(), 36, "a bare id: {id}");
    let flaky = o.enqueue("demo.flaky", r#"{"fail_times": 2, "class": "transient"}"#);

    let list = o.run(&["ops", "list"]).ok().to_owned();
    let header = list.lines().next().unwrap();
    for column in [
        "ID",
        "KIND",
        "STATUS",
        "ATTEMPT",
        "NEXT ELIGIBLE",
        "LAST CLASS",
        "LAST ERROR",
    ] {
        assert!(header.contains(column), "{header}");
    }
    assert!(list.contains(&id) && list.contains(&flaky), "{list}");
    assert!(
        list.contains("demo.flaky") && list.contains("pending"),
        "{list}"
    );

    let all = o.run(&["ops", "list", "--json"]).json();
    assert_eq!(all.as_array().unwrap().len(), 2);
    let only = o
        .run(&[
            "ops",
            "list",
            "--kind",
            "demo.flaky",
            "--status",
            "pending",
            "--json",
        ])
        .json();
    assert_eq!(only.as_array().unwrap().len(), 1);
    assert_eq!(only[0]["id"], flaky.as_str());
    let none = o.run(&["ops", "list", "--status", "dead", "--json"]).json();
    assert_eq!(none.as_array().unwrap().len(), 0);
    // Newest first: the page after the newest (flaky) holds the older one.
    let after = o.run(&["ops", "list", "--after", &flaky, "--json"]).json();
    assert_eq!(
        after.as_array().unwrap().len(),
        1,
        "keyset page after the first"
    );
    assert_eq!(after[0]["id"], id.as_str());
    let after = o
        .run(&["ops", "list", "--oldest-first", "--after", &id, "--json"])
        .json();
    assert_eq!(after[0]["id"], flaky.as_str(), "oldest first on request");
    let limited = o.run(&["ops", "list", "--limit", "1"]).ok().to_owned();
    assert!(limited.contains("--after"), "says how to page: {limited}");

    let shown = o.run(&["ops", "show", &flaky]).ok().to_owned();
    for field in ["id", "kind", "status", "attempt", "dependency", "payload"] {
        assert!(
            shown.lines().any(|l| l.starts_with(field)),
            "{field}: {shown}"
        );
    }
    assert!(
        shown.contains("demo-provider") && shown.contains("no attempts yet"),
        "{shown}"
    );
    let detail = o.show(&flaky);
    assert_eq!(detail["operation"]["kind"], "demo.flaky");
    assert_eq!(detail["operation"]["status"], "pending");
    assert_eq!(detail["operation"]["payload"]["fail_times"], 2);
    assert_eq!(detail["attempts"].as_array().unwrap().len(), 0);
}

#[test]
fn the_same_key_twice_returns_the_same_operation() {
    let o = Oprec::migrated();
    let args = [
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--key",
        "order-7",
    ];
    let first = o.run(&[&args[..], &["--json"]].concat()).json();
    assert_eq!(first["created"], true);
    let second = o.run(&[&args[..], &["--json"]].concat()).json();
    assert_eq!(second["created"], false);
    assert_eq!(first["id"], second["id"]);
    let text = o.run(&args).ok().to_owned();
    assert_eq!(
        text.trim(),
        format!("{} (existing)", first["id"].as_str().unwrap())
    );
    let all = o.run(&["ops", "list", "--json"]).json();
    assert_eq!(all.as_array().unwrap().len(), 1);
}

#[test]
fn payload_from_standard_input_and_from_a_file() {
    let o = Oprec::migrated();
    let run = o.run_with_stdin(
        &[
            "enqueue",
            "--kind",
            "demo.slow",
            "--payload-file",
            "-",
            "--json",
        ],
        "{\"ms\": 5}\n",
    );
    let id = run.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(o.show(&id)["operation"]["payload"]["ms"], 5);

    let file = o.path("payload.json");
    std::fs::write(&file, r#"{"fail_times": 1}"#).unwrap();
    let run = o.run(&[
        "enqueue",
        "--kind",
        "demo.flaky",
        "--payload-file",
        file.to_str().unwrap(),
        "--json",
    ]);
    let id = run.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(o.show(&id)["operation"]["payload"]["fail_times"], 1);
}

#[test]
fn count_enqueues_in_batches_and_keys_get_suffixes() {
    let o = Oprec::migrated();
    let text = o
        .run(&[
            "enqueue",
            "--kind",
            "demo.noop",
            "--payload",
            "{}",
            "--count",
            "2500",
        ])
        .ok()
        .to_owned();
    assert_eq!(text.trim(), "enqueued 2,500 operations");
    let keyed = [
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
        "--count",
        "3",
        "--key",
        "k",
        "--json",
    ];
    let first = o.run(&keyed).json();
    assert_eq!(first, serde_json::json!({"count": 3, "created": 3}));
    let again = o.run(&keyed).json();
    assert_eq!(again, serde_json::json!({"count": 3, "created": 0}));
    let page = o.run(&["ops", "list", "--limit", "10000", "--json"]).json();
    let ops = page.as_array().unwrap();
    assert_eq!(ops.len(), 2503);
    let mut keys: Vec<&str> = ops
        .iter()
        .filter_map(|op| op["idempotency_key"].as_str())
        .collect();
    keys.sort();
    assert_eq!(keys, ["k-1", "k-2", "k-3"]);
}

#[test]
fn delay_and_deadline_are_stored() {
    let o = Oprec::migrated();
    let v = o
        .run(&[
            "enqueue",
            "--kind",
            "demo.noop",
            "--payload",
            "{}",
            "--delay",
            "5m",
            "--deadline",
            "48h",
            "--json",
        ])
        .json();
    let op = &o.show(v["id"].as_str().unwrap())["operation"];
    let at = |f: &str| {
        chrono::DateTime::parse_from_rfc3339(op[f].as_str().unwrap())
            .unwrap()
            .timestamp()
    };
    let created = at("created_at");
    assert!((at("next_eligible_at") - created - 300).abs() <= 1, "{op}");
    assert!((at("give_up_at") - created - 48 * 3600).abs() <= 1, "{op}");

    let v = o
        .run(&[
            "enqueue",
            "--kind",
            "demo.noop",
            "--payload",
            "{}",
            "--deadline",
            "2999-01-01T00:00:00Z",
            "--json",
        ])
        .json();
    let op = &o.show(v["id"].as_str().unwrap())["operation"];
    assert!(
        op["give_up_at"]
            .as_str()
            .unwrap()
            .starts_with("2999-01-01T00:00:00"),
        "{op}"
    );
}
