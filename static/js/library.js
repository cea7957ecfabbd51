// Progressive enhancement of the "Save" toggle on cards and paper pages
// (follows/holes.py, save_buttons): submit it with fetch, asking for JSON, and flip the
// button in place. Without JavaScript the form posts and the page reloads; on any failure we
// fall back to that.
(function () {
  "use strict";

  function render(form, saved) {
    var action = form.querySelector('input[name="action"]');
    var button = form.querySelector("button.save-button");
    action.value = saved ? "remove" : "save";
    button.textContent = saved ? "Saved" : "Save";
    button.setAttribute("aria-pressed", saved ? "true" : "false");
    button.title = saved ? "In your library: press to remove" : "Save to your library";
    var badge = form.querySelector(".read-badge");
    if (badge && !saved) {
      badge.remove();
    }
  }

  function enhance(form) {
    if (form.dataset.libraryEnhanced) {
      return;
    }
    form.dataset.libraryEnhanced = "1";
    form.addEventListener("submit", function (event) {
      if (!window.fetch || !window.FormData) {
        return;
      }
      event.preventDefault();
      var button = form.querySelector("button.save-button");
      button.disabled = true;
      fetch(form.getAttribute("action"), {
        method: "POST",
        body: new FormData(form),
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      })
        .then(function (response) {
          return response.json().then(function (data) {
            return { status: response.status, data: data };
          });
        })
        .then(function (result) {
          if (result.status === 401 && result.data.login_url) {
            window.location.assign(result.data.login_url);
            return;
          }
          if (result.status !== 200) {
            throw new Error(result.data.error || "save failed");
          }
          render(form, result.data.saved);
          button.disabled = false;
        })
        .catch(function () {
          button.disabled = false;
          form.submit();
        });
    });
  }

  function init() {
    document.querySelectorAll("form.save-form").forEach(enhance);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
