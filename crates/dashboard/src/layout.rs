//! The layout around every page: the document head (stylesheet and script, both served by the
//! dashboard itself), the top navigation with the page in view marked, who is signed in, and the
//! footer, after a skip link to the content. Pages hand it their body as [`Markup`]; it is
//! rendered by maud, which escapes every value spliced into it. A live page names how often its
//! script refreshes the parts marked `data-live-region` in place (see `assets/app.js`); without
//! the script it is an ordinary page.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use crate::viewer::Viewer;

/// The pages of the top navigation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    Overview,
    Operations,
    Dead,
    Controls,
    Transport,
    Schedules,
    Audit,
    Alerts,
    None,
}

/// The navigation's links, in order.
const LINKS: [(Nav, &str, &str); 8] = [
    (Nav::Overview, "/", "Overview"),
    (Nav::Operations, "/operations", "Operations"),
    (Nav::Dead, "/dead", "Dead letters"),
    (Nav::Controls, "/controls", "Controls"),
    (Nav::Transport, "/transport", "Transport"),
    (Nav::Schedules, "/schedules", "Schedules"),
    (Nav::Audit, "/audit", "Audit log"),
    (Nav::Alerts, "/alerts", "Alerts"),
];

/// A page in the layout.
pub(crate) struct Page {
    title: String,
    nav: Nav,
    viewer: Viewer,
    body: Markup,
    refresh: Option<u32>,
    live: Option<u32>,
}

impl Page {
    pub fn new(title: &str, nav: Nav, viewer: &Viewer) -> Self {
        Page {
            title: title.to_owned(),
            nav,
            viewer: viewer.clone(),
            body: Markup::default(),
            refresh: None,
            live: None,
        }
    }

    pub fn body(mut self, body: Markup) -> Self {
        self.body = body;
        self
    }

    /// Follow the page every `seconds` (progress pages): live with the script, by reloading
    /// the whole page without it.
    pub fn refresh(mut self, seconds: u32) -> Self {
        self.refresh = Some(seconds);
        self.live(seconds)
    }

    /// With the script, refresh the page's `data-live-region` parts every `seconds` in place
    /// (pausable); without it, nothing changes until a reload.
    pub fn live(mut self, seconds: u32) -> Self {
        self.live = Some(seconds);
        self
    }

    /// Who is looking: their name and a sign-out button, a sign-in link, or "read-only".
    fn session(&self) -> Markup {
        html! {
            @match (&self.viewer.session, self.viewer.can_act) {
                (Some(s), _) => form.inline method="post" action="/logout" {
                    span.who { (s.name) } " "
                    button.link type="submit" aria-label={ "Sign out " (s.name) } { "Sign out" }
                },
                (None, true) => a.signin href="/login" { "Sign in" },
                (None, false) => span.ro title="Started without an operator token" { "read-only" },
            }
        }
    }

    fn render(&self) -> Markup {
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    @if let Some(seconds) = self.refresh {
                        // The script follows the page in place; without it, reload.
                        noscript { meta http-equiv="refresh" content=(seconds); }
                    }
                    title { (self.title) " · oprec" }
                    link rel="stylesheet" href="/assets/style.css";
                    script src="/assets/app.js" defer {}
                }
                body data-live=[self.live] {
                    a.skip href="#main" { "Skip to content" }
                    header.top {
                        a.brand href="/" { span.logo { "◆" } " oprec" }
                        nav aria-label="Pages" {
                            @for (nav, href, label) in LINKS {
                                @let here = nav == self.nav;
                                a href=(href)
                                    class=[here.then_some("active")]
                                    aria-current=[here.then_some("page")] { (label) }
                            }
                        }
                        div.session { (self.session()) }
                    }
                    main #main tabindex="-1" { (self.body) }
                    footer {
                        "oprec operator dashboard · the database row is the record; the broker is \
                         only a doorbell"
                    }
                }
            }
        }
    }
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            )],
            self.render().into_string(),
        )
            .into_response()
    }
}
