// Icons drawn as SVG, bundled with the page: no emoji font is needed (where
// none is installed, colour emoji render as empty boxes). A tool's
// presentation names its icon with an emoji; the emoji picks the drawing
// here (the wrench for one not drawn), and stays the element's title and
// data-emoji. Paths: 24×24 grid, stroked with the text colour.
(function () {
  "use strict";
  const D = {
    wrench: ["M14.7 6.3a4 4 0 0 0-5.4 5.4L3 18l3 3 6.3-6.3a4 4 0 0 0 5.4-5.4l-2.6 2.6-2.4-.6-.6-2.4z"],
    file: ["M6 2h8l4 4v16H6z", "M14 2v4h4"],
    folder: ["M3 6h6l2 2h10v12H3z"],
    edit: ["M4 20h4L19 9l-4-4L4 16z", "M13 7l4 4"],
    replace: ["M4 9h13l-3-3", "M20 15H7l3 3"],
    patch: ["M4.5 14.5l10-10a3.5 3.5 0 0 1 5 5l-10 10a3.5 3.5 0 0 1-5-5z", "M10 10l4 4"],
    trash: ["M4 7h16", "M9 7V4h6v3", "M6 7l1 14h10l1-14"],
    search: ["M10 17a7 7 0 1 0 0-14 7 7 0 0 0 0 14z", "M15 15l6 6"],
    terminal: ["M3 4h18v16H3z", "M7 9l3 3-3 3", "M12 15h5"],
    flask: ["M9 3h6", "M10 3v6l-5 10a1.5 1.5 0 0 0 1.3 2h11.4a1.5 1.5 0 0 0 1.3-2L14 9V3", "M7 15h10"],
    robot: ["M5 8h14v11H5z", "M12 4v4", "M9 13h.01", "M15 13h.01", "M9 17h6"],
    flag: ["M5 21V4", "M5 4h12l-2 4 2 4H5"],
    check: ["M4 12l5 5L20 6"],
    globe: ["M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18z", "M3 12h18", "M12 3a14 14 0 0 1 0 18a14 14 0 0 1 0-18z"],
    plug: ["M9 2v5", "M15 2v5", "M6 7h12v4a6 6 0 0 1-12 0z", "M12 17v5"],
    book: ["M4 4h6a2 2 0 0 1 2 2v14a2 2 0 0 0-2-2H4z", "M20 4h-6a2 2 0 0 0-2 2v14a2 2 0 0 1 2-2h6z"],
    cap: ["M2 9l10-5 10 5-10 5z", "M6 11v5c3 3 9 3 12 0v-5"],
    branch: ["M6 3v12", "M6 21a3 3 0 1 0 0-6 3 3 0 0 0 0 6z", "M18 9a3 3 0 1 0 0-6 3 3 0 0 0 0 6z", "M18 9a9 9 0 0 1-9 9"],
    merge: ["M4 7h4l8 10h4", "M4 17h4l8-10h4"],
    scroll: ["M8 3h11v15a3 3 0 0 1-3 3H6a3 3 0 0 1-3-3v-1h11", "M10 8h6", "M10 12h6"],
    inbox: ["M3 13h5l1 3h6l1-3h5", "M3 13l3-8h12l3 8v7H3z"],
    target: ["M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18z", "M12 16a4 4 0 1 0 0-8 4 4 0 0 0 0 8z", "M12 12h.01"],
    question: ["M9 9a3 3 0 1 1 4 2.8c-.7.4-1 1-1 1.7V15", "M12 19h.01"],
    stop: ["M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18z", "M7 12h10"],
    map: ["M3 6l6-3 6 3 6-3v15l-6 3-6-3-6 3z", "M9 3v15", "M15 6v15"],
    hook: ["M12 3v10a4 4 0 1 1-8 0", "M12 3h3"],
    smoke: ["M7 18h10a4 4 0 0 0 0-8 5 5 0 0 0-9.6-1.5A4 4 0 0 0 7 18z", "M9 22h6"],
    pencil: ["M4 20h4L19 9l-4-4L4 16z"],
    form: ["M5 3h14v18H5z", "M8 8h8", "M8 12h8", "M8 16h5"],
    rewind: ["M11 6l-7 6 7 6z", "M20 6l-7 6 7 6z"],
  };
  const BY_EMOJI = {
    "🔧": "wrench", "📄": "file", "📖": "file", "📁": "folder", "📂": "folder", "🗂": "folder",
    "📝": "edit", "✍": "edit", "✏": "edit", "🔁": "replace", "🩹": "patch", "🗑": "trash", "❌": "trash",
    "🔎": "search", "🔍": "search", "💻": "terminal", "🧪": "flask", "🤖": "robot", "🏁": "flag", "✅": "check",
    "✔": "check", "🌐": "globe", "🔌": "plug", "📚": "book", "🎓": "cap", "🌿": "branch", "🔀": "merge",
    "📜": "scroll", "📥": "inbox", "🎯": "target", "❓": "question", "⛔": "stop", "🗺": "map", "🪝": "hook",
    "🐒": "smoke", "✎": "pencil", "📋": "form", "⏪": "rewind",
  };
  const NS = "http://www.w3.org/2000/svg";

  // The drawing's name for an emoji (variation selectors ignored), or null.
  function iconName(emoji) {
    const key = String(emoji || "").replace(/[\uFE0E\uFE0F]/g, "");
    return Object.prototype.hasOwnProperty.call(BY_EMOJI, key) ? BY_EMOJI[key] : null;
  }

  function iconSvg(emoji) {
    const name = iconName(emoji) || "wrench";
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("class", "icon");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("data-icon", name);
    for (const d of D[name]) {
      const path = document.createElementNS(NS, "path");
      path.setAttribute("d", d);
      svg.append(path);
    }
    return svg;
  }

  // Put the icon for ``emoji`` into ``node`` (a span): the drawing, with the
  // emoji as its title, never as text.
  function setIcon(node, emoji) {
    node.textContent = "";
    node.append(iconSvg(emoji));
    node.setAttribute("data-emoji", String(emoji || ""));
    node.setAttribute("title", String(emoji || ""));
    return node;
  }

  window.SmokeIcons = { iconName, iconSvg, setIcon, names: Object.keys(D) };
})();
