//! `oprec dashboard` as a process: bad flags are one-line messages (exit 2) that never repeat the
//! token, a non-loopback address must be asked for and draws a warning about plain HTTP, only
//! requests naming the dashboard (or an `--allowed-host`) are answered, and a started dashboard
//! serves its pages without printing the token. The pages themselves are tested in
//! crates/dashboard.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;

use common::Oprec;

const TOKEN: &str = "cli-test-token-0123456789abcdef";

#[test]
fn bad_flags_are_one_line_and_never_echo_the_token() {
    let o = Oprec::migrated();
    o.run(&["dashboard", "--listen", "localhost-ish"])
        .bad_input("is not an address");
    o.run(&["dashboard", "--listen", "0.0.0.0:0"])
        .bad_input("not loopback");
    let r = o.run(&["dashboard", "--token", "short-s3cret"]);
    r.bad_input("at least 16 characters");
    assert!(!r.stderr.contains("short-s3cret"), "{}", r.stderr);
    for host in [
        "ops.example.com:8080",
        "https://ops.example.com",
        "two words",
        "",
    ] {
        o.run(&["dashboard", "--allowed-host", host])
            .bad_input("--allowed-host");
    }
    o.run(&["dashboard", "--read-requires-token"])
        .bad_input("--read-requires-token needs the operator token");
}

/// Sends `GET /` naming `host` to `addr`; the whole answer.
fn get_naming(addr: &str, host: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).unwrap();
    page
}

#[test]
fn a_non_loopback_listener_warns_of_plain_http_and_answers_only_its_names() {
    let o = Oprec::migrated();
    let mut child = o
        .command(&[
            "dashboard",
            "--listen",
            "0.0.0.0:0",
            "--allow-non-loopback",
            "--allowed-host",
            "ops.example.com",
        ])
        .env("OPREC_DASHBOARD_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start oprec dashboard");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut warning = String::new();
    stderr.read_line(&mut warning).expect("the warning");
    let mut line = String::new();
    stderr.read_line(&mut line).expect("the address line");
    assert!(
        warning.starts_with("oprec dashboard: warning: listening on 0.0.0.0:"),
        "{warning}"
    );
    for said in [
        "not loopback",
        "without TLS",
        "TLS proxy",
        "--read-requires-token",
    ] {
        assert!(warning.contains(said), "{said}: {warning}");
    }
    assert!(!warning.contains(TOKEN));
    assert!(
        line.starts_with("oprec dashboard: http://0.0.0.0:"),
        "{line}"
    );
    let port = line
        .trim_start_matches("oprec dashboard: http://0.0.0.0:")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let addr = format!("127.0.0.1:{port}");
    // Listening on every address, it answers to any address, and to the allowed name.
    for host in [
        addr.clone(),
        format!("10.9.8.7:{port}"),
        "localhost".into(),
        "ops.example.com".into(),
    ] {
        let page = get_naming(&addr, &host);
        assert!(page.starts_with("HTTP/1.1 200"), "{host}: {page}");
    }
    let refused = get_naming(&addr, "attacker.example");
    assert!(refused.starts_with("HTTP/1.1 421"), "{refused}");
    assert!(refused.contains("--allowed-host"), "{refused}");
    child.kill().expect("stop the dashboard");
    child.wait().ok();
}

#[test]
fn a_started_dashboard_serves_pages_and_never_prints_the_token() {
    let o = Oprec::migrated();
    let mut child = o
        .command(&["dashboard", "--listen", "127.0.0.1:0"])
        .env("OPREC_DASHBOARD_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start oprec dashboard");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).expect("the address line");
    assert!(
        line.starts_with("oprec dashboard: http://127.0.0.1:"),
        "{line}"
    );
    assert!(
        !line.contains(TOKEN) && !line.contains("read-only"),
        "{line}"
    );
    let addr = line
        .trim_start_matches("oprec dashboard: http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut s = TcpStream::connect(&addr).expect("connect");
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).unwrap();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("<h1>Overview</h1>"));
    assert!(page.contains("content-security-policy"), "security headers");
    assert!(!page.contains(TOKEN));
    child.kill().expect("stop the dashboard");
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).ok();
    child.wait().ok();
    assert!(!rest.contains(TOKEN), "{rest}");
}
