// Copy buttons (templates/follows/_private_feed_box.html): a <button data-copy-target="ID">
// copies the value of the field with that id and says so in the next .copy-status. The button
// is hidden in the HTML and shown here, so it appears only where it can work; without
// JavaScript the read-only field can still be selected and copied by hand.
(function () {
  "use strict";

  function say(button, text) {
    var status = button.parentNode.querySelector(".copy-status");
    if (status) {
      status.textContent = text;
    }
  }

  function copyWithSelection(field) {
    field.focus();
    field.select();
    try {
      return document.execCommand("copy");
    } catch (error) {
      return false;
    }
  }

  function enhance(button) {
    var field = document.getElementById(button.getAttribute("data-copy-target"));
    if (!field || button.dataset.copyEnhanced) {
      return;
    }
    button.dataset.copyEnhanced = "1";
    button.hidden = false;
    field.addEventListener("focus", function () {
      field.select();
    });
    button.addEventListener("click", function () {
      var done = function () {
        button.textContent = "Copied";
        say(button, "Address copied to the clipboard.");
        window.setTimeout(function () {
          button.textContent = "Copy";
        }, 2000);
      };
      var failed = function () {
        field.select();
        say(button, "Press Ctrl+C (or ⌘C) to copy the selected address.");
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(field.value).then(done, function () {
          if (copyWithSelection(field)) {
            done();
          } else {
            failed();
          }
        });
      } else if (copyWithSelection(field)) {
        done();
      } else {
        failed();
      }
    });
  }

  function init() {
    var buttons = document.querySelectorAll("button[data-copy-target]");
    for (var i = 0; i < buttons.length; i++) {
      enhance(buttons[i]);
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
