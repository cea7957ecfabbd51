// The ask box, where JavaScript runs: ask without leaving the page, show progress, and put the
// answer (the server-rendered, escaped fragment of the ask page) in place. Without JavaScript
// the form is a plain GET to the ask page.
(function () {
  "use strict";

  function setUp(form) {
    if (form.dataset.askReady) {
      return;
    }
    form.dataset.askReady = "1";
    var target = document.getElementById(form.dataset.askTarget);
    var progress = form.querySelector("[data-ask-progress]");
    var button = form.querySelector("button[type=submit]");
    var field = form.elements.q;

    form.addEventListener("submit", function (event) {
      var question = field.value.trim();
      if (!question || !target || !window.fetch || !window.URLSearchParams) {
        return; // the browser submits the form: the server answers or shows the error
      }
      event.preventDefault();
      var query = new URLSearchParams({ q: question });
      var pageQuery = query.toString();
      query.set("fragment", "1");
      progress.hidden = false;
      button.disabled = true;
      target.setAttribute("aria-busy", "true");
      fetch(form.action + "?" + query.toString(), {
        credentials: "same-origin",
        headers: { Accept: "text/html" },
      })
        .then(function (response) {
          // 400 (question too long) and 429 (too many questions) come with a message to show.
          if (!response.ok && response.status !== 400 && response.status !== 429) {
            throw new Error("HTTP " + response.status);
          }
          return response.text();
        })
        .then(function (html) {
          target.innerHTML = html;
          if (form.hasAttribute("data-ask-page") && window.history.replaceState) {
            window.history.replaceState(null, "", form.action + "?" + pageQuery);
          }
        })
        .catch(function () {
          target.textContent = "The answer could not be loaded. Please try again.";
        })
        .then(function () {
          progress.hidden = true;
          button.disabled = false;
          target.removeAttribute("aria-busy");
        });
    });
  }

  function setUpAll() {
    document.querySelectorAll("form[data-ask-form]").forEach(setUp);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUpAll);
  } else {
    setUpAll();
  }
})();
