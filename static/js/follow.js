// Progressive enhancement of the "Follow this topic" form (follows/holes.py, follow_topic_buttons):
// submit it with fetch, asking for JSON, and update the button and the follower count in place.
// Without JavaScript the form posts and the page reloads; on any failure we fall back to that.
(function () {
  "use strict";

  function followerText(count) {
    return count + " follower" + (count === 1 ? "" : "s");
  }

  function render(form, following, count) {
    var action = form.querySelector('input[name="action"]');
    var button = form.querySelector('button[type="submit"]');
    var followers = form.querySelector(".followers");
    action.value = following ? "unfollow" : "follow";
    // Forms may name what they follow (an author's page: data-follow-label and
    // data-unfollow-label); a topic's form names none.
    button.textContent = following
      ? form.dataset.unfollowLabel || "Unfollow this topic"
      : form.dataset.followLabel || "Follow this topic";
    button.setAttribute("aria-pressed", following ? "true" : "false");
    if (followers) {
      followers.textContent = followerText(count);
    }
  }

  function enhance(form) {
    if (form.dataset.followEnhanced) {
      return;
    }
    form.dataset.followEnhanced = "1";
    form.addEventListener("submit", function (event) {
      if (!window.fetch || !window.FormData) {
        return;
      }
      event.preventDefault();
      var button = form.querySelector('button[type="submit"]');
      button.disabled = true;
      // getAttribute: the form's <input name="action"> shadows the form.action property.
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
            throw new Error(result.data.error || "follow failed");
          }
          render(form, result.data.following, result.data.follower_count);
          button.disabled = false;
        })
        .catch(function () {
          // Let the plain form do it (and show the server's answer).
          button.disabled = false;
          form.submit();
        });
    });
  }

  function init() {
    document.querySelectorAll("form.follow-form").forEach(enhance);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
