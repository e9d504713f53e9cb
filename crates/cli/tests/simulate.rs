//! `oprec simulate outage`: the figures of a small outage, the SVG chart, and refused policies.

mod common;

use common::Oprec;

#[test]
fn the_default_policies_give_the_expected_figures_and_a_chart() {
    let o = Oprec::new();
    let svg = o.path("outage.svg");
    let v = o
        .run(&[
            "simulate",
            "outage",
            "--ops",
            "20",
            "--svg",
            svg.to_str().unwrap(),
            "--json",
        ])
        .json();
    let policies = v["policies"].as_array().unwrap();
    let names: Vec<&str> = policies
        .iter()
        .map(|p| p["policy"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "fixed:60s",
            "ladder:0,60,300,1500,7500,37500",
            "exp:60s,2,1h,max=150",
            "exp:60s,2,1h,max=150,jitter=full"
        ]
    );
    let fixed = &policies[0];
    // 1,440 attempts per job per day: 50,000 jobs would be 72,000,000 a day.
    assert_eq!(fixed["attempts_per_day"][0], 20 * 1440);
    assert_eq!(fixed["attempts_per_day"][1], 20 * 1440);
    assert_eq!(fixed["attempts_during_outage"], 20 * 2880);
    assert_eq!(fixed["succeeded"], 20);
    assert_eq!(fixed["peak_per_second_first_minute"], 20);
    assert_eq!(fixed["backlog_gone_after_seconds"], 48 * 3600);
    let ladder = &policies[1];
    assert_eq!(ladder["attempts"], 20 * 6);
    assert_eq!(ladder["dead"], 20);
    assert_eq!(ladder["attempts_during_outage"], 20 * 6);
    for exp in &policies[2..] {
        assert_eq!(exp["succeeded"], 20, "{exp}");
        assert_eq!(exp["dead"], 0, "{exp}");
    }
    assert!(
        policies[3]["peak_per_second_after_recovery"]
            .as_u64()
            .unwrap()
            < policies[2]["peak_per_second_after_recovery"]
                .as_u64()
                .unwrap(),
        "jitter spreads the retry storm: {v}"
    );
    let chart = std::fs::read_to_string(&svg).expect("the SVG is written");
    assert!(chart.starts_with("<svg") && chart.trim_end().ends_with("</svg>"));
    assert_eq!(chart.matches(r#"class="series""#).count(), 4);
}

#[test]
fn the_table_names_each_policy_and_the_chart() {
    let o = Oprec::new();
    let out = o
        .run(&[
            "simulate",
            "outage",
            "--ops",
            "10",
            "--outage",
            "2h",
            "--after",
            "1h",
            "--policy",
            "fixed:60s",
            "--policy",
            "ladder:0,60",
        ])
        .ok()
        .to_owned();
    assert!(
        out.contains("fixed:60s") && out.contains("ladder:0,60"),
        "{out}"
    );
    assert!(
        out.contains("PER DAY") && out.contains("outage.svg"),
        "{out}"
    );
    assert!(o.path("outage.svg").exists(), "the default chart file");
}

#[test]
fn bad_policies_and_durations_are_bad_input() {
    let o = Oprec::new();
    o.run(&["simulate", "outage", "--policy", "every:5s"])
        .bad_input("bad policy");
    o.run(&["simulate", "outage", "--outage", "soon"])
        .bad_input("--outage");
    o.run(&["simulate", "outage", "--ops", "0"])
        .bad_input("--ops");
}

#[test]
fn help_names_the_flags() {
    let out = common::bin()
        .args(["simulate", "outage", "--help"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--ops", "--outage", "--after", "--policy", "--seed", "--svg", "--json",
    ] {
        assert!(text.contains(flag), "{flag} missing: {text}");
    }
}
