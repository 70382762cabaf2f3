// A displayed formula wider than the column scrolls sideways (custom.css): make
// each such formula reachable with the keyboard, as the theme does for code blocks.
// Added to pages with displayed math by docs/_ext/mathml.py.
(() => {
  const mark = () => {
    for (const box of document.querySelectorAll("div.math > math")) {
      if (box.scrollWidth > box.clientWidth) {
        box.tabIndex = 0;
      } else {
        box.removeAttribute("tabindex");
      }
    }
  };
  let timer = null;
  window.addEventListener("resize", () => {
    clearTimeout(timer);
    timer = setTimeout(mark, 300);
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mark);
  } else {
    mark();
  }
})();
