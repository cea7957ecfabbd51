// Copy buttons: <button class="copy-button" data-copy="ID" hidden> copies the text of the
// element #ID to the clipboard. The buttons stay hidden where JavaScript (or the Clipboard
// API) is missing: the text can still be selected by hand.
(function () {
  "use strict";

  function init() {
    if (!navigator.clipboard) {
      return;
    }
    document.querySelectorAll("button.copy-button[data-copy]").forEach(function (button) {
      var label = button.textContent;
      button.hidden = false;
      button.addEventListener("click", function () {
        var source = document.getElementById(button.dataset.copy);
        if (!source) {
          return;
        }
        navigator.clipboard.writeText(source.textContent).then(
          function () {
            button.textContent = "Copied";
            window.setTimeout(function () {
              button.textContent = label;
            }, 2000);
          },
          function () {
            button.textContent = "Copy failed: select the text";
          }
        );
      });
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
