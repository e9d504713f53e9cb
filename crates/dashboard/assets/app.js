// oprec dashboard: small conveniences only; every page works without this script.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  // Filter forms submit only the fields that are set, so addresses stay short and shareable.
  document.querySelectorAll("form.filters, form#quarantine-filter").forEach(function (form) {
    form.addEventListener("submit", function () {
      form.querySelectorAll("input, select").forEach(function (el) {
        if (el.name && el.value.trim() === "") { el.disabled = true; }
      });
    });
  });
  // A confirmation form is submitted once, even on a double click.
  document.querySelectorAll("form[method=post]").forEach(function (form) {
    form.addEventListener("submit", function () {
      form.querySelectorAll("button[type=submit]").forEach(function (b) {
        setTimeout(function () { b.disabled = true; }, 0);
      });
    });
  });
  live();
});

// Live pages (<body data-live="SECONDS">): every SECONDS, fetch this same address and swap in
// the parts marked data-live-region (matched by id), so a drain or a re-drive moves without a
// reload. One fetch at a time; none while the tab is hidden or the operator paused it (the
// choice is kept for the tab); a part holding the keyboard focus is left alone that round. The
// fetched page's own data-live says when to look again, or that there is nothing more to follow.
function live() {
  var every = parseInt(document.body.getAttribute("data-live") || "0", 10);
  if (!(every > 0)) { return; }
  var key = "oprec-live-paused";
  var paused = sessionStorage.getItem(key) === "1";
  var bar = document.createElement("div");
  bar.className = "live";
  var state = document.createElement("span");
  state.id = "live-state";
  var toggle = document.createElement("button");
  toggle.type = "button";
  toggle.id = "live-toggle";
  toggle.className = "small";
  bar.appendChild(state);
  bar.appendChild(toggle);
  var main = document.querySelector("main");
  main.insertBefore(bar, main.firstChild);
  var timer = null;
  var stopped = false;

  function show(text) {
    state.textContent = text;
    toggle.textContent = paused ? "Resume live updates" : "Pause live updates";
    toggle.setAttribute("aria-pressed", paused ? "true" : "false");
  }
  function clock() {
    return new Date().toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }
  function later() {
    clearTimeout(timer);
    if (!stopped) { timer = setTimeout(tick, every * 1000); }
  }
  function apply(doc) {
    document.querySelectorAll("[data-live-region]").forEach(function (el) {
      var focus = document.activeElement;
      if (focus && focus !== document.body && el.contains(focus)) { return; }
      var fresh = doc.getElementById(el.id);
      if (fresh) { el.replaceWith(document.importNode(fresh, true)); }
    });
    var next = parseInt(doc.body.getAttribute("data-live") || "0", 10);
    if (next > 0) {
      every = next;
      show("Live · updated " + clock());
    } else {
      stopped = true;
      document.body.removeAttribute("data-live");
      show("Updated " + clock() + " · nothing more to follow");
      toggle.hidden = true;
    }
  }
  function tick() {
    if (paused || document.hidden) { later(); return; }
    fetch(location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (res) {
        if (res.redirected || !res.ok) { throw new Error(res.redirected ? "signed out" : "HTTP " + res.status); }
        return res.text();
      })
      .then(function (text) {
        apply(new DOMParser().parseFromString(text, "text/html"));
        later();
      })
      .catch(function (e) {
        show("Live update failed (" + e.message + ") at " + clock() + "; trying again");
        later();
      });
  }
  toggle.addEventListener("click", function () {
    paused = !paused;
    sessionStorage.setItem(key, paused ? "1" : "0");
    show(paused ? "Live updates paused" : "Live · resuming");
    if (!paused) { clearTimeout(timer); tick(); }
  });
  show(paused ? "Live updates paused" : "Live · every " + every + " s");
  document.body.setAttribute("data-live-ready", "true");
  later();
}
