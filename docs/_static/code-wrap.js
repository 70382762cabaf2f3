// Long code lines wrap (custom.css), so that a line's end is never out of reach on a
// phone (issue 33, item 2). This script adds what CSS cannot:
// - a hanging indent: each line of a code block becomes a span (its text unchanged,
//   so copying gives the same code), and a wrapped line's continuation is indented
//   four columns past the line's own indentation, so it cannot pass for the next line;
// - a toggle on each code block, beside the copy button: "Wrap long lines", pressed
//   or not (aria-pressed), for every block of the page, remembered in localStorage.
//   Not pressed, the blocks keep their lines whole and scroll sideways, as before.
// The button's name is in the page's language (layout.html writes it in a <meta>,
// translated in locales/zh_CN/LC_MESSAGES/sphinx.po); layout.html also sets the remembered
// choice on <html> before the page is drawn.
(() => {
  const KEY = "code-wrap";
  const root = document.documentElement;
  const label = () =>
    document.querySelector('meta[name="code-wrap-label"]')?.content || "Wrap long lines";

  // the pieces of `node` between its line breaks: one list of nodes per line
  const pieces = (node) => {
    if (node.nodeType === Node.TEXT_NODE) {
      return node.data.split("\n").map((text) => (text ? [document.createTextNode(text)] : []));
    }
    if (node.nodeType !== Node.ELEMENT_NODE) {
      return [[]];
    }
    const lines = [[]];
    for (const child of node.childNodes) {
      const [first, ...rest] = pieces(child);
      lines[lines.length - 1].push(...first);
      lines.push(...rest);
    }
    // an element spanning lines (a docstring, a link) is cut into one copy per line
    return lines.map((nodes) => {
      if (!nodes.length && lines.length > 1) {
        return [];
      }
      const copy = node.cloneNode(false);
      copy.append(...nodes);
      return [copy];
    });
  };

  const splitLines = (pre) => {
    const lines = [[]];
    for (const child of pre.childNodes) {
      const [first, ...rest] = pieces(child);
      lines[lines.length - 1].push(...first);
      lines.push(...rest);
    }
    if (lines.length > 1 && !lines[lines.length - 1].length) {
      lines.pop(); // the block's final line break
    }
    pre.replaceChildren(
      ...lines.map((nodes, index) => {
        const line = document.createElement("span");
        line.className = "code-line";
        line.append(...nodes);
        line.append("\n");
        const indent = line.textContent.match(/^ */)[0].length;
        if (indent) {
          line.style.setProperty("--indent", `${indent}ch`);
        }
        return line;
      }),
    );
  };

  const ICON =
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor"' +
    ' stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"' +
    ' focusable="false"><path d="M4 6h16M4 12h13a3 3 0 0 1 0 6h-4"/><path d="m15 16-2 2 2 2"/>' +
    '<path d="M4 18h5"/></svg>';

  const apply = (wrap) => {
    root.dataset.codeWrap = wrap ? "on" : "off";
    for (const button of document.querySelectorAll("button.code-wrap-button")) {
      button.setAttribute("aria-pressed", String(wrap));
    }
    // a block that now scrolls can be scrolled with the keyboard (as the theme does on load)
    for (const pre of document.querySelectorAll("div.highlight > pre")) {
      pre.tabIndex = pre.scrollWidth > pre.clientWidth ? 0 : -1;
    }
  };

  const start = () => {
    const blocks = document.querySelectorAll("div.highlight > pre");
    const name = label();
    for (const pre of blocks) {
      splitLines(pre);
      const button = document.createElement("button");
      button.type = "button";
      button.className = "code-wrap-button";
      button.setAttribute("aria-label", name);
      button.title = name;
      button.innerHTML = ICON;
      button.addEventListener("click", () => {
        const wrap = root.dataset.codeWrap === "off";
        localStorage.setItem(KEY, wrap ? "on" : "off");
        apply(wrap);
      });
      pre.parentElement.append(button);
    }
    apply(localStorage.getItem(KEY) !== "off");
  };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
