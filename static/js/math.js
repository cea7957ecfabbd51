// TeX in titles, abstracts, cards, Ask answers and paper pages ($…$, $$…$$, \(…\), \[…\])
// rendered by KaTeX (static/vendor/katex). The text stays TeX in each formula's MathML
// annotation, and copy-tex puts the TeX on the clipboard when rendered math is copied.
// KaTeX sets its few inline sizes through the CSSOM (element.style), which the site's CSP
// (style-src 'self') allows; it adds no <style> or style="" markup.
(function () {
  "use strict";

  var OPTIONS = {
    delimiters: [
      { left: "$$", right: "$$", display: true },
      { left: "\\[", right: "\\]", display: true },
      { left: "\\(", right: "\\)", display: false },
      { left: "$", right: "$", display: false },
    ],
    // Forms hold what readers type; code shows the query language as written.
    ignoredTags: ["script", "noscript", "style", "textarea", "pre", "code", "option", "input", "select", "form"],
    ignoredClasses: ["katex", "no-math"],
    throwOnError: false,
  };

  function render(element) {
    if (typeof window.renderMathInElement !== "function") return;
    window.renderMathInElement(element, OPTIONS);
  }

  function start() {
    var main = document.querySelector("main");
    if (!main) return;
    render(main);
    // Ask answers arrive after the page (static/js/ask.js puts them in place): render them too.
    new MutationObserver(function (mutations) {
      mutations.forEach(function (mutation) {
        mutation.addedNodes.forEach(function (node) {
          if (node.nodeType === Node.ELEMENT_NODE && !node.closest(".katex")) render(node);
        });
      });
    }).observe(main, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
