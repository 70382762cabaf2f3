// A displayed formula wider than the column scrolls sideways (custom.css): make
// each such formula reachable with the keyboard, as the theme does for code blocks.
// Added to pages with displayed math by docs/_ext/mathml.py. A ResizeObserver
// reports each formula after the browser has laid the page out (and again when
// its width changes), so reading its widths costs no extra layout.
(() => {
  const mark = (entries) => {
    for (const { target } of entries) {
      if (target.scrollWidth > target.clientWidth) {
        target.tabIndex = 0;
      } else {
        target.removeAttribute("tabindex");
      }
    }
  };
  const observer = new ResizeObserver(mark);
  const start = () => {
    for (const formula of document.querySelectorAll("div.math > math")) {
      observer.observe(formula);
    }
  };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
