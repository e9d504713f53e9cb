//! What the browser tests share: chromedriver and headless Chromium started per test, the
//! dashboard served on a free loopback port, signing in as a person does, and waits that poll
//! the page (never a fixed sleep) for what an action or a live update changes.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration as StdDuration, Instant};

use fantoccini::error::CmdError;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use tokio::process::{Child, Command};

use super::TOKEN;

/// The chromedriver and Chromium binaries: `OPREC_CHROMEDRIVER` / `OPREC_CHROMIUM`, else
/// Debian's paths.
pub fn binaries() -> (PathBuf, PathBuf) {
    let pick = |var: &str, default: &str, package: &str| {
        let p = PathBuf::from(std::env::var(var).unwrap_or_else(|_| default.to_owned()));
        assert!(
            p.exists(),
            "{} not found: the browser tests need Debian's `chromium` and `chromium-driver` \
             (`apt-get install chromium chromium-driver`, which scripts/test runs when they are \
             missing), or {var} set to the {package} binary",
            p.display(),
        );
        p
    };
    (
        pick(
            "OPREC_CHROMEDRIVER",
            "/usr/bin/chromedriver",
            "chromedriver",
        ),
        pick("OPREC_CHROMIUM", "/usr/bin/chromium", "chromium"),
    )
}

/// A running chromedriver, killed when dropped.
pub struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

pub async fn start_driver(chromedriver: &Path) -> Driver {
    let port = free_port();
    let child = Command::new(chromedriver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromedriver.display()));
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Driver {
                child,
                url: format!("http://127.0.0.1:{port}"),
            };
        }
        tokio::time::sleep(StdDuration::from_millis(100)).await;
    }
    panic!("chromedriver did not listen on port {port} within 10 s");
}

pub async fn browser(driver: &Driver, chromium: &Path) -> Client {
    let caps = json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": chromium.to_string_lossy(),
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--hide-scrollbars", "--window-size=1440,1000", "--force-device-scale-factor=1"]
        }
    });
    let caps = caps.as_object().cloned().expect("capabilities object");
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .unwrap_or_else(|e| panic!("cannot start headless Chromium through chromedriver: {e}"))
}

/// chromedriver and a headless Chromium driven through it (1,440 × 1,000). Keep the driver as
/// long as the client: dropping it ends the browser.
pub async fn open() -> (Driver, Client) {
    let (chromedriver, chromium) = binaries();
    let driver = start_driver(&chromedriver).await;
    let client = browser(&driver, &chromium).await;
    (driver, client)
}

/// Serves the dashboard on a free loopback port; returns its base URL.
pub async fn serve(d: oprec_dashboard::Dashboard) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(d.serve(listener, std::future::pending()));
    format!("http://{addr}")
}

/// Saves the whole page as `DIR/dashboard-NAME.png` when `OPREC_DASHBOARD_SCREENSHOTS` is set, at
/// the window's present width (1,440 px, or a phone's when a test narrowed it).
pub async fn screenshot(c: &Client, name: &str) {
    let Ok(dir) = std::env::var("OPREC_DASHBOARD_SCREENSHOTS") else {
        return;
    };
    let (width, height_before) = c.get_window_size().await.expect("window size");
    // The window's height is the page's plus the browser's own frame, at most 1,500 pixels of page.
    let sizes = c
        .execute(
            "return [document.documentElement.scrollHeight, window.outerHeight - window.innerHeight];",
            vec![],
        )
        .await
        .expect("page height");
    let at = |i: usize| sizes.get(i).and_then(|v| v.as_u64()).unwrap_or(0);
    let height = (at(0).clamp(600, 1500) + at(1)) as u32;
    c.set_window_size(width as u32, height)
        .await
        .expect("resize");
    let png = c.screenshot().await.expect("screenshot");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    std::fs::write(Path::new(&dir).join(format!("dashboard-{name}.png")), png)
        .expect("write screenshot");
    c.set_window_size(width as u32, height_before as u32)
        .await
        .expect("resize back");
}

/// The text of the first element matching `css`, waiting up to 10 s for one. An element that goes
/// stale between finding and reading (the page was replaced) is looked up again.
pub async fn text(c: &Client, css: &str) -> String {
    let until = Instant::now() + StdDuration::from_secs(10);
    loop {
        let found = c
            .wait()
            .at_most(until.saturating_duration_since(Instant::now()))
            .for_element(Locator::Css(css))
            .await;
        match found {
            Ok(e) => match e.text().await {
                Ok(t) => return t,
                Err(err) if Instant::now() < until => {
                    eprintln!("{css}: {err}; looking it up again");
                    tokio::time::sleep(StdDuration::from_millis(50)).await;
                }
                Err(err) => panic!("text of {css}: {err}"),
            },
            Err(e) => {
                let at = c.current_url().await.ok();
                let page = c.source().await.unwrap_or_default();
                panic!("no {css} on {at:?}: {e}\n{page}")
            }
        }
    }
}

/// Whether an element matches `css` on the page now (no wait: for what must be absent).
pub async fn present(c: &Client, css: &str) -> bool {
    c.find(Locator::Css(css)).await.is_ok()
}

/// The current value of the form field matching `css` (what the person would see in it).
pub async fn value_of(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no field {css}: {e}"))
        .prop("value")
        .await
        .unwrap_or_else(|e| panic!("value of {css}: {e}"))
        .unwrap_or_default()
}

/// Types `value` into the field matching `css`, as a person would, after emptying it.
pub async fn type_into(c: &Client, css: &str, value: &str) {
    let field = c
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no field {css}: {e}"));
    field
        .clear()
        .await
        .unwrap_or_else(|e| panic!("clear {css}: {e}"));
    field
        .send_keys(value)
        .await
        .unwrap_or_else(|e| panic!("type into {css}: {e}"));
}

/// Picks the option of value `value` in the list matching `css`.
pub async fn choose(c: &Client, css: &str, value: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no list {css}: {e}"))
        .select_by_value(value)
        .await
        .unwrap_or_else(|e| panic!("choose {value} in {css}: {e}"));
}

/// Runs `action`, a click or submit that opens another page, and waits (up to 10 s) for that
/// page to be loaded. Such an action returns before the navigation it starts; without the wait,
/// the next lookup can find an element of the page being left. The document shown before is
/// marked, and the wait ends when the marked document is gone and its successor complete.
/// (`action` is a future, so nothing of it runs before the mark.)
pub async fn navigate<T>(
    c: &Client,
    action: impl Future<Output = Result<T, CmdError>>,
    what: &str,
) {
    c.execute("window.__oprecLeft = true; return null;", vec![])
        .await
        .expect("mark the page");
    if let Err(e) = action.await {
        panic!("{what}: {e}");
    }
    let until = Instant::now() + StdDuration::from_secs(10);
    loop {
        // While the navigation runs, a script may fail ("document unloaded"): not there yet.
        let state = c
            .execute(
                "return window.__oprecLeft === true ? 'old' : document.readyState;",
                vec![],
            )
            .await;
        if matches!(&state, Ok(serde_json::Value::String(s)) if s == "complete") {
            return;
        }
        if Instant::now() > until {
            let at = c.current_url().await.ok();
            panic!("still no new page at {at:?} after 10 s: {state:?}");
        }
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
}

/// Clicks the element matching `css` and waits for the page it opens. A live page may swap the
/// element for a fresh copy between finding and clicking it: then it is looked up again.
pub async fn click_to(c: &Client, css: &str, what: &str) {
    let click = async {
        let until = Instant::now() + StdDuration::from_secs(10);
        loop {
            let found = c.find(Locator::Css(css)).await;
            let clicked = match found {
                Ok(e) => e.click().await,
                Err(e) => Err(e),
            };
            match clicked {
                Err(e) if Instant::now() < until => {
                    eprintln!("{css}: {e}; looking it up again");
                    tokio::time::sleep(StdDuration::from_millis(50)).await;
                }
                other => return other,
            }
        }
    };
    navigate(c, click, what).await;
}

/// Signs in as `name` with the operator token, as a person does at `/login`, and lands on
/// `next`; checks that the page names the person.
pub async fn sign_in(c: &Client, base: &str, name: &str, next: &str) {
    let next: String = url::form_urlencoded::byte_serialize(next.as_bytes()).collect();
    c.goto(&format!("{base}/login?next={next}"))
        .await
        .expect("the sign-in page");
    type_into(c, "form[action='/login'] [name=name]", name).await;
    type_into(c, "form[action='/login'] [name=token]", TOKEN).await;
    let login = c.form(Locator::Css("form[action='/login']")).await.unwrap();
    navigate(c, login.submit(), "sign in").await;
    assert_eq!(text(c, ".session .who").await, name, "signed in");
}

/// Waits until the page's live script is running, then marks the document: a reload would
/// lose the mark.
pub async fn live_and_marked(c: &Client) {
    c.wait()
        .at_most(StdDuration::from_secs(10))
        .for_element(Locator::Css("body[data-live-ready='true']"))
        .await
        .expect("the live script starts");
    c.execute("window.__oprecStay = true; return null;", vec![])
        .await
        .expect("mark the document");
}

pub async fn not_reloaded(c: &Client) -> bool {
    c.execute("return window.__oprecStay === true;", vec![])
        .await
        .expect("read the mark")
        == json!(true)
}

/// Waits up to `seconds` for `check` to hold of the text at `css`.
pub async fn until_text(
    c: &Client,
    css: &str,
    seconds: u64,
    check: impl Fn(&str) -> bool,
) -> String {
    let until = Instant::now() + StdDuration::from_secs(seconds);
    loop {
        let t = match c.find(Locator::Css(css)).await {
            Ok(e) => e.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if check(&t) {
            return t;
        }
        assert!(
            Instant::now() < until,
            "{css} still reads {t:?} after {seconds} s"
        );
        tokio::time::sleep(StdDuration::from_millis(200)).await;
    }
}

pub fn url_of(s: &str) -> url::Url {
    url::Url::parse(s).expect("url")
}
