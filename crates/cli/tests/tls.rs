//! TLS for every connection. The URL forms are accepted and configured as
//! TLS with verification: `postgres://...?sslmode=verify-full&sslrootcert=CA`, `rediss://`,
//! `amqps://`. Then real handshakes, with a certificate authority made for the test (openssl):
//! a private PostgreSQL cluster with `ssl = on` that refuses connections without TLS, and a
//! private `redis-server` on a TLS port and a private RabbitMQ node with a TLS listener, reached by
//! the `oprec` binary (PostgreSQL also by the library).
//! Verification must hold: a server whose certificate does not name the host, or is not signed
//! by the given CA, is refused.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Oprec, Run, bin};
use oprec_testkit::services::{PrivatePostgres, PrivateRabbit, PrivateRedis, free_port, port_open};
use sqlx::postgres::{PgConnectOptions, PgSslMode};

/// A certificate authority, a server certificate it signed for `localhost` only (no IP
/// address), and a second, unrelated authority.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().expect("temp dir");
        let ssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap_or_else(|e| {
                    panic!(
                        "openssl is required for the TLS tests ({e}): apt-get install -y openssl"
                    )
                });
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        for ca in ["ca", "other-ca"] {
            let (key, crt, subj) = (
                format!("{ca}.key"),
                format!("{ca}.crt"),
                format!("/CN=oprec test {ca}"),
            );
            let mut args = vec![
                "req", "-x509", "-days", "2", "-keyout", &key, "-out", &crt, "-subj", &subj,
            ];
            args.extend(ec);
            args.extend([
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ]);
            ssl(&args);
        }
        let mut args = vec![
            "req",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ];
        args.extend(ec);
        ssl(&args);
        std::fs::write(
            dir.path().join("server.ext"),
            "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n\
             keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
        )
        .expect("write server.ext");
        ssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            "server.crt",
            "-extfile",
            "server.ext",
        ]);
        // Readable by a server running as another user (RabbitMQ runs as `rabbitmq` under root).
        use std::os::unix::fs::PermissionsExt;
        for entry in std::fs::read_dir(dir.path()).expect("list the PKI folder") {
            let path = entry.expect("an entry").path();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        }
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.path(name)).expect("read a generated file")
    }
}

fn shown(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[tokio::test]
async fn tls_urls_are_accepted_and_configured_with_verification() {
    // PostgreSQL: sslmode and sslrootcert reach the driver's options.
    let o: PgConnectOptions =
        "postgres://app@db.example:5432/app?sslmode=verify-full&sslrootcert=/etc/oprec/ca.pem"
            .parse()
            .expect("a verify-full URL");
    assert!(matches!(o.get_ssl_mode(), PgSslMode::VerifyFull));
    let o: PgConnectOptions = "postgres://app@db.example/app?sslmode=require"
        .parse()
        .unwrap();
    assert!(matches!(o.get_ssl_mode(), PgSslMode::Require));
    assert!(
        "postgres://app@db.example/app?sslmode=bogus"
            .parse::<PgConnectOptions>()
            .is_err()
    );

    // Redis: rediss:// is TLS with verification (not the driver's `#insecure`).
    let info = redis::IntoConnectionInfo::into_connection_info("rediss://:pw@cache.example:6380/0")
        .expect("a rediss URL");
    assert!(
        matches!(
            info.addr(),
            redis::ConnectionAddr::TcpTls {
                insecure: false,
                ..
            }
        ),
        "{:?}",
        info.addr()
    );
    let t = oprec::connect_transport("rediss://cache.example:6380/0?stream=s")
        .unwrap()
        .unwrap();
    assert_eq!(t.name(), "redis");
    let redis = oprec::redis::RedisTransport::connect_lazy(
        "rediss://cache.example:6380/0",
        oprec::redis::RedisTransportConfig::default(),
    )
    .unwrap();
    assert!(
        format!("{redis:?}").contains("rediss://cache.example:6380"),
        "{redis:?}"
    );

    // AMQP: amqps:// is TLS, on 5671 unless the URL says otherwise.
    let uri: lapin::uri::AMQPUri = "amqps://app:pw@rabbit.example/%2f".parse().unwrap();
    assert_eq!(uri.scheme, lapin::uri::AMQPScheme::AMQPS);
    assert_eq!(uri.authority.port, 5671);
    let t = oprec::connect_transport("amqps://app:pw@rabbit.example/%2f?queue=q")
        .unwrap()
        .unwrap();
    assert_eq!(t.name(), "amqp");
    let amqp = oprec::amqp::AmqpTransport::connect_lazy(
        "amqps://app:pw@rabbit.example/%2f",
        oprec::amqp::AmqpTransportConfig::default(),
    )
    .unwrap();
    assert!(
        format!("{amqp:?}").contains("amqps://app:***@rabbit.example"),
        "{amqp:?}"
    );
}

/// `oprec ARGS` with `SSL_CERT_FILE` (the trust store of the Redis and AMQP drivers) set to the
/// `ca` file, in a fresh folder.
fn run_trusting(db: &str, ca: &Path, args: &[&str]) -> Run {
    let o = Oprec::with_url(db);
    let out = o
        .command(args)
        .env("SSL_CERT_FILE", ca)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run oprec");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn postgres_verify_full_connects_and_refuses_the_wrong_server() {
    let pki = Pki::new();
    let pg = PrivatePostgres::builder()
        .setting("ssl", "on")
        .setting("ssl_cert_file", "server.crt")
        .setting("ssl_key_file", "server.key")
        .file("server.crt", pki.read("server.crt"), 0o644)
        .file("server.key", pki.read("server.key"), 0o600)
        // Plain connections are refused: a client that gets in spoke TLS.
        .hba_line("hostnossl all all 127.0.0.1/32 reject")
        .start();
    let port = pg.port();
    let ca = shown(&pki.path("ca.crt"));
    let other = shown(&pki.path("other-ca.crt"));
    let url = |host: &str, mode: &str, root: &str| {
        format!("postgres://postgres@{host}:{port}/postgres?sslmode={mode}&sslrootcert={root}")
    };

    // The binary, end to end, over verify-full.
    let good = url("localhost", "verify-full", &ca);
    let o = Oprec::with_url(&good);
    o.run(&["migrate"]).ok();
    o.enqueue("demo.noop", "{}");
    let stats = o.run(&["stats", "--json"]).json();
    assert_eq!(stats["by_status"]["pending"], 1, "{stats}");

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        // The library: the session is encrypted.
        let store = oprec::postgres::PgStore::connect(&good)
            .await
            .expect("verify-full connects");
        let ssl: bool =
            sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                .fetch_one(store.pool())
                .await
                .expect("pg_stat_ssl");
        assert!(ssl, "the session is not encrypted");
        store.pool().close().await;

        // verify-ca checks the signer but not the name: 127.0.0.1 is accepted.
        let store = oprec::postgres::PgStore::connect(&url("127.0.0.1", "verify-ca", &ca))
            .await
            .expect("verify-ca connects by address");
        store.pool().close().await;

        // Refused: the certificate names localhost, not 127.0.0.1; a CA that did not sign it;
        // no TLS at all (the server refuses it).
        for (bad, why, needle) in [
            (
                url("127.0.0.1", "verify-full", &ca),
                "a certificate for another host",
                "not valid for name",
            ),
            (
                url("localhost", "verify-full", &other),
                "a certificate from another CA",
                "UnknownIssuer",
            ),
            (
                url("localhost", "verify-ca", &other),
                "a certificate from another CA",
                "UnknownIssuer",
            ),
            (
                format!("postgres://postgres@localhost:{port}/postgres?sslmode=disable"),
                "no TLS",
                "no encryption",
            ),
        ] {
            let connecting = oprec::postgres::PgStore::connect(&bad);
            match tokio::time::timeout(Duration::from_secs(40), connecting).await {
                Ok(Err(e)) => assert!(e.to_string().contains(needle), "{why}: {e}"),
                Ok(Ok(_)) => panic!("connected despite {why}: {bad}"),
                Err(_) => panic!("no answer within 40 s for {bad}"),
            }
        }
    });
    // And the binary says so (exit 1).
    let refused = run_trusting(
        &url("127.0.0.1", "verify-full", &ca),
        Path::new(&ca),
        &["stats"],
    );
    assert_eq!(refused.code, Some(1), "{refused:?}");
}

#[test]
fn rediss_verifies_the_server_and_refuses_the_wrong_one() {
    let pki = Pki::new();
    let tls_port = free_port();
    let redis = PrivateRedis::builder()
        .file("server.crt", pki.read("server.crt"))
        .file("server.key", pki.read("server.key"))
        .file("ca.crt", pki.read("ca.crt"))
        .arg("--tls-port")
        .arg(&tls_port.to_string())
        .arg("--tls-cert-file")
        .arg("server.crt")
        .arg("--tls-key-file")
        .arg("server.key")
        .arg("--tls-ca-cert-file")
        .arg("ca.crt")
        .arg("--tls-auth-clients")
        .arg("no")
        .start();
    assert!(redis.is_up());
    let sqlite = Oprec::migrated();
    let ca = pki.path("ca.crt");
    let depth = |url: &str, trust: &Path| {
        let mut c = bin();
        c.env("OPREC_DATABASE_URL", &sqlite.url)
            .env("SSL_CERT_FILE", trust)
            .args(["--transport", url, "transport", "depth", "--json"]);
        let out = c.output().expect("run oprec");
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };

    // A TLS handshake verified against the CA, and the wake-ups flow: enqueue publishes over
    // TLS, depth counts it.
    let good = format!("rediss://localhost:{tls_port}/0?stream=oprec:tls");
    let run = depth(&good, &ca);
    assert_eq!(run.json()["depth"], 0, "{run:?}");
    let mut c = sqlite.command(&[
        "--transport",
        &good,
        "enqueue",
        "--kind",
        "demo.noop",
        "--payload",
        "{}",
    ]);
    let out = c.env("SSL_CERT_FILE", &ca).output().expect("enqueue");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = depth(&good, &ca);
    assert_eq!(run.json()["depth"], 1, "{run:?}");

    // Refused: the name does not match (the certificate is for localhost), another CA, and a
    // plain connection to the TLS port.
    for (url, trust, why, needle) in [
        (
            format!("rediss://127.0.0.1:{tls_port}/0"),
            ca.clone(),
            "a certificate for another host",
            "not valid for name",
        ),
        (
            format!("rediss://localhost:{tls_port}/0"),
            pki.path("other-ca.crt"),
            "a certificate from another CA",
            "UnknownIssuer",
        ),
        (
            format!("redis://localhost:{tls_port}/0"),
            ca.clone(),
            "no TLS",
            "failed",
        ),
    ] {
        let run = depth(&url, &trust);
        assert_eq!(run.code, Some(1), "connected despite {why}: {run:?}");
        assert!(run.stderr.contains(needle), "{why}: {run:?}");
    }
}

#[test]
fn amqps_verifies_the_server_and_refuses_the_wrong_one() {
    let pki = Pki::new();
    let ssl_port = free_port();
    let file = |name: &str| shown(&pki.path(name));
    let _rabbit = PrivateRabbit::builder()
        .config_line(&format!("listeners.ssl.default = 127.0.0.1:{ssl_port}"))
        .config_line(&format!("ssl_options.cacertfile = {}", file("ca.crt")))
        .config_line(&format!("ssl_options.certfile = {}", file("server.crt")))
        .config_line(&format!("ssl_options.keyfile = {}", file("server.key")))
        .config_line("ssl_options.verify = verify_none")
        .config_line("ssl_options.fail_if_no_peer_cert = false")
        .start();
    let began = std::time::Instant::now();
    while !port_open(ssl_port) {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "no TLS listener on {ssl_port}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let sqlite = Oprec::migrated();
    let ca = pki.path("ca.crt");
    let oprec = |url: &str, trust: &Path, args: &[&str]| {
        let out = sqlite
            .command(&[&["--transport", url][..], args].concat())
            .env("SSL_CERT_FILE", trust)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run oprec");
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };

    // A verified TLS session carries the wake-ups.
    let good = format!("amqps://guest:guest@localhost:{ssl_port}/%2f?queue=oprec.tls");
    let depth = ["transport", "depth", "--json"];
    assert_eq!(oprec(&good, &ca, &depth).json()["depth"], 0);
    oprec(
        &good,
        &ca,
        &["enqueue", "--kind", "demo.noop", "--payload", "{}"],
    )
    .ok();
    assert_eq!(oprec(&good, &ca, &depth).json()["depth"], 1);

    for (url, trust, why, needle) in [
        (
            format!("amqps://guest:guest@127.0.0.1:{ssl_port}/%2f?queue=oprec.tls"),
            ca.clone(),
            "a certificate for another host",
            "not valid for name",
        ),
        (
            good.clone(),
            pki.path("other-ca.crt"),
            "a certificate from another CA",
            "UnknownIssuer",
        ),
        (
            format!("amqp://guest:guest@localhost:{ssl_port}/%2f?queue=oprec.tls"),
            ca.clone(),
            "no TLS",
            "failed",
        ),
    ] {
        let run = oprec(&url, &trust, &depth);
        assert_eq!(run.code, Some(1), "connected despite {why}: {run:?}");
        assert!(run.stderr.contains(needle), "{why}: {run:?}");
    }
}
