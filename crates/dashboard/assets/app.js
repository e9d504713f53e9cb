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
});
