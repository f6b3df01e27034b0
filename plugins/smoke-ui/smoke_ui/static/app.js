/* Smoke UI: a plain-JavaScript page (no build step).
 * Events arrive over SSE (/api/events); answers go back with POST.
 * Unknown event types are ignored: new types are added over time.
 *
 * Two rules hold everywhere on this page:
 * - Text from the model, a tool, an MCP server or a file is inserted as text
 *   (never as HTML), with control and invisible characters turned into
 *   visible marks (visible()). The only HTML inserted is the server's
 *   Markdown rendering (raw HTML disabled there), and that passes an
 *   allow-list here first (insertMarkdown()); the page's CSP blocks inline
 *   scripts besides.
 * - What a person approves is shown whole: nothing is cut, long values sit
 *   in scrollable boxes with their length and a warning. */
(function () {
  "use strict";

  const token = document.querySelector('meta[name="smoke-token"]').content;
  const $ = (id) => document.querySelector('[data-testid="' + id + '"]');

  const state = {
    presentations: {},
    sessionId: null,
    running: false,
    textEl: null, // assistant bubble receiving text.delta
    thoughtEl: null, // reasoning block receiving text.thought
    // keyed by tool call ids, which a model or provider chooses: no prototype, so "__proto__" is an ordinary key
    cards: Object.create(null), // tool_call_id -> card element
    subagents: Object.create(null), // parent (task) tool_call_id -> {box, body, status, textEl, thoughtEl, lastText}
    lastSession: null,
    lastAssistantText: null,
    transcriptSession: null,
  };

  const LONG_VALUE = 1000; // characters: a single value longer than this gets the long-input warning
  const LONG_INPUT = 2000; // characters: an input whose strings add up to more gets it too
  const OUTPUT_KEEP = 40000; // characters of live tool output kept on a card (the tail)

  // ------------------------------------------------------------ helpers

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const [key, value] of Object.entries(attrs)) {
        if (value === undefined || value === null || value === false) continue;
        if (key === "class") node.className = value;
        else if (key === "text") node.textContent = value;
        else if (key === "testid") node.setAttribute("data-testid", value);
        else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
        else node.setAttribute(key, value === true ? "" : String(value));
      }
    }
    for (const child of [].concat(children || [])) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  async function api(method, path, body) {
    const init = { method, headers: { "X-Smoke-Token": token } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok) {
      const message = (data && data.error) || res.status + " " + res.statusText;
      const err = new Error(message);
      err.status = res.status;
      throw err;
    }
    return data;
  }

  function tone(value) {
    return ["info", "success", "warning", "error"].includes(value) ? value : "info";
  }

  function cssToken(value) {
    return String(value || "").toLowerCase().replace(/[^a-z0-9_-]/g, "-");
  }

  function presentationFor(name, own) {
    const base = state.presentations[name] || {};
    const merged = Object.assign({ label: name, icon: "🔧", tone: "info", group: null, badge: null }, base, own || {});
    if (!merged.group && merged.family) merged.group = merged.family;
    return merged;
  }

  function contentText(content) {
    if (!Array.isArray(content)) return content ? String(content) : "";
    return content
      .map((b) => (b && b.type === "text" ? b.text : b && b.type === "image" ? "[image " + (b.mime_type || "") + "]" : ""))
      .join("\n");
  }

  function fmt(n) {
    return Number(n || 0).toLocaleString("en-US");
  }

  function formatUsage(usage) {
    // with a run budget (max_cost_usd / max_input_tokens / max_output_tokens): used / limit
    const budget = state.budget || {};
    const input = (usage && usage.input_tokens) || 0;
    const output = (usage && usage.output_tokens) || 0;
    const inText = fmt(input) + (budget.max_input_tokens ? " / " + fmt(budget.max_input_tokens) : "");
    const outText = fmt(output) + (budget.max_output_tokens ? " / " + fmt(budget.max_output_tokens) : "");
    if (!usage && !state.budget) return "0 tokens";
    let text = fmt(input + output) + " tokens (in " + inText + " · out " + outText + ")";
    // cost comes from providers that report it (usage.cost_usd); shown when present
    const cost = usage && typeof usage.cost_usd === "number" ? usage.cost_usd : null;
    if (cost !== null) text += " · $" + cost.toFixed(cost < 1 ? 4 : 2);
    if (budget.max_cost_usd) text += (cost === null ? " · $0" : "") + " / $" + budget.max_cost_usd;
    return text;
  }

  function setUsage(usage) {
    const node = $("usage");
    node.textContent = formatUsage(usage);
    const extra = [];
    if (usage && usage.cache_read_tokens) extra.push("cache read " + fmt(usage.cache_read_tokens));
    if (usage && usage.cache_write_tokens) extra.push("cache write " + fmt(usage.cache_write_tokens));
    if (usage && usage.reasoning_tokens) extra.push("reasoning " + fmt(usage.reasoning_tokens));
    node.title = "tokens used by this run" + (extra.length ? " (" + extra.join(", ") + ")" : "");
    node.toggleAttribute("data-cost", !!(usage && typeof usage.cost_usd === "number"));
  }

  // ------------------------------------------------------------ visible text

  // Characters that display as nothing, or change how other text displays
  // (terminal escapes, carriage returns, bidi overrides, zero-width, blank and
  // tag characters, variation selectors, look-alikes of shell syntax): each
  // becomes a visible mark with an explanation on hover. The table is
  // smoke_core.display's (MARKED), sent with the page: every front end marks
  // the same characters.
  const MARKS = (function () {
    const meta = document.querySelector('meta[name="smoke-marks"]');
    try {
      const table = JSON.parse(meta ? meta.content : "[]");
      return Array.isArray(table) ? table : [];
    } catch (e) {
      return [];
    }
  })();
  const codeClass = (cp) => "\\u{" + cp.toString(16) + "}";
  const TABLE_SRC = MARKS.map((m) => (m.first === m.last ? codeClass(m.first) : codeClass(m.first) + "-" + codeClass(m.last))).join("");
  const SPECIAL_SRC =
    "\\x1b(?:\\[[0-?]*[ -/]*[@-~]|\\][^\\x07\\x1b\\n]{0,256}(?:\\x07|\\x1b\\\\)?|[^\\n])?" +
    "|[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f" + TABLE_SRC + "\\p{Cf}\\p{Co}\\p{Cn}\\p{Cs}\\p{Zl}\\p{Zp}]";
  const ODD_SPACE_SRC = "[\\u00a0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000]";
  const EMOJI_SELECTOR = /^[\ufe0e\ufe0f]$/u;
  const SYMBOL = /^\p{So}$/u;
  const PATTERNS = {
    // approvals, questions, inputs: every whitespace run and tab is shown
    strict: new RegExp(SPECIAL_SRC + "|[ \\t]{2,}|\\t|" + ODD_SPACE_SRC, "gu"),
    // diffs and file content: indentation stays, very long runs are shown
    code: new RegExp(SPECIAL_SRC + "|[ \\t]{" + 16 + ",}|" + ODD_SPACE_SRC, "gu"),
    // messages and tool output
    text: new RegExp(SPECIAL_SRC, "gu"),
  };
  // A blank run becomes one "⟨N spaces⟩" mark from this length: inside a line
  // (after other text) from 16, as indentation (at a line start) from 80.
  const RUN_INSIDE = 16;
  const RUN_LEADING = 80;

  function suspiciousRun(length, leading) {
    return length >= (leading ? RUN_LEADING : RUN_INSIDE);
  }

  const NAMES = {
    0x00: ["\\0", "NUL"], 0x07: ["\\a", "BEL (bell)"], 0x08: ["\\b", "BS (backspace): a terminal erases the character before it"],
    0x09: ["\\t", "TAB"], 0x0b: ["\\v", "VT (vertical tab)"], 0x0c: ["\\f", "FF (form feed)"],
    0x0d: ["\\r", "CR (carriage return): a terminal goes back to the start of the line and what follows overwrites it"],
    0x7f: ["\\x7f", "DEL"], 0x85: ["\\x85", "NEL (C1 next line)"], 0x9b: ["\\x9b", "CSI (C1 control sequence introducer): a terminal escape"],
  };
  function tableEntry(cp) {
    for (const m of MARKS) if (cp >= m.first && cp <= m.last) return m;
    return null;
  }

  function hex(cp, width) {
    return cp.toString(16).toUpperCase().padStart(width, "0");
  }

  function escapeControls(text) {
    const short = { "\x07": "BEL", "\x1b": "ESC" };
    return text.replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => (short[c] ? " " + short[c] : "\\x" + hex(c.charCodeAt(0), 2).toLowerCase()));
  }

  // [mark text, explanation, kind] for one match of PATTERNS
  function markFor(match, mode, leading) {
    const cp = match.codePointAt(0);
    if (cp === 0x1b) {
      const rest = match.slice(1);
      const shown = escapeControls(rest);
      return ["⟨ESC" + (shown ? " " + shown : "") + "⟩", "ESC " + shown + " — a terminal escape sequence: it can move the cursor, erase or rewrite what a terminal shows", "esc"];
    }
    if (match.length > 1 || ((cp === 0x20 || cp === 0x09) && mode === "strict")) {
      if (/^[ \t]+$/.test(match)) {
        const spaces = (match.match(/ /g) || []).length;
        const tabs = match.length - spaces;
        const what = [spaces ? fmt(spaces) + (spaces === 1 ? " space" : " spaces") : "", tabs ? fmt(tabs) + (tabs === 1 ? " tab" : " tabs") : ""].filter(Boolean).join(" + ");
        if (suspiciousRun(match.length, leading)) return ["⟨" + what + "⟩", "a run of " + what, "ws"];
        if (mode === "code") return null; // ordinary indentation or alignment in code
        return [match.replace(/ /g, "·").replace(/\t/g, "\\t"), what, "ws"];
      }
    }
    if (cp >= 0xe0000 && cp <= 0xe007f) {
      const shown = cp >= 0xe0020 && cp <= 0xe007e ? " '" + String.fromCharCode(cp - 0xe0000) + "'" : "";
      return ["⟨U+" + hex(cp, 5) + "⟩", "Unicode TAG character" + shown + " (invisible: can hide text from people but not from a model)", "invisible"];
    }
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
      const known = NAMES[cp];
      if (known) return [known[0], "U+" + hex(cp, 4) + " " + known[1], "control"];
      return ["\\x" + hex(cp, 2).toLowerCase(), "U+" + hex(cp, 4) + " control character", "control"];
    }
    const entry = tableEntry(cp);
    const name = entry ? entry.name : "invisible or formatting character";
    const kind = entry ? entry.kind : "invisible";
    return ["⟨U+" + hex(cp, cp > 0xffff ? 5 : 4) + "⟩", "U+" + hex(cp, 4) + " " + name, kind];
  }

  // ``text`` as a fragment of text nodes and marks (spans with class "ctl").
  function visible(text, mode) {
    text = text === null || text === undefined ? "" : String(text);
    const frag = document.createDocumentFragment();
    const re = PATTERNS[mode] || PATTERNS.text;
    re.lastIndex = 0;
    let last = 0;
    let m;
    while ((m = re.exec(text)) !== null) {
      const leading = m.index === 0 || text[m.index - 1] === "\n";
      if (EMOJI_SELECTOR.test(m[0]) && m.index > 0) {
        const before = Array.from(text.slice(Math.max(0, m.index - 2), m.index)).pop();
        if (before && SYMBOL.test(before)) continue; // ❤️: an emoji's presentation, nothing hidden
      }
      const found = markFor(m[0], mode, leading);
      if (!found) continue; // left as it is; the text up to here is appended later
      if (m.index > last) frag.append(text.slice(last, m.index));
      const [mark, title, kind] = found;
      const cps = Array.from(m[0].slice(0, 4)).map((c) => "U+" + hex(c.codePointAt(0), 4)).join(" ");
      frag.append(el("span", { class: "ctl ctl-" + kind, title, "data-ctl": cps, "data-raw-length": m[0].length, text: mark }));
      last = m.index + m[0].length;
    }
    if (last < text.length) frag.append(text.slice(last));
    return frag;
  }

  function setVisible(node, text, mode) {
    node.textContent = "";
    node.append(visible(text, mode));
    return node;
  }

  // What a person should be warned about in ``text``.
  function scan(text) {
    const out = { length: 0, special: 0, bidi: 0, longestRun: 0 };
    text = String(text || "");
    out.length = text.length;
    const re = PATTERNS.text;
    re.lastIndex = 0;
    let m;
    while ((m = re.exec(text)) !== null) {
      out.special += 1;
      const cp = m[0].codePointAt(0);
      if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp === 0x200e || cp === 0x200f || cp === 0x061c) out.bidi += 1;
    }
    const runs = /[ \t\u00a0\u2000-\u200a\u3000]{16,}/g;
    while ((m = runs.exec(text)) !== null) {
      const leading = m.index === 0 || text[m.index - 1] === "\n";
      if (suspiciousRun(m[0].length, leading)) out.longestRun = Math.max(out.longestRun, m[0].length);
    }
    return out;
  }

  function mergeScan(a, b) {
    return { length: a.length + b.length, special: a.special + b.special, bidi: a.bidi + b.bidi, longestRun: Math.max(a.longestRun, b.longestRun), longest: Math.max(a.longest || 0, b.length) };
  }

  function scanValue(value) {
    let out = { length: 0, special: 0, bidi: 0, longestRun: 0, longest: 0 };
    const walk = (v) => {
      if (typeof v === "string") out = mergeScan(out, scan(v));
      else if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === "object") {
        for (const [k, x] of Object.entries(v)) {
          const keyInfo = scan(k); // keys are checked for marks but not counted in the length
          out.special += keyInfo.special;
          out.bidi += keyInfo.bidi;
          walk(x);
        }
      }
    };
    walk(value);
    return out;
  }

  function warnings(info) {
    const items = [];
    if (info.longest > LONG_VALUE || info.length > LONG_INPUT) {
      items.push(["long", "Long input: " + fmt(info.length) + " characters. Nothing is cut — scroll each box to its end before you decide."]);
    }
    if (info.special) {
      items.push(["control", "Contains " + fmt(info.special) + " control or invisible character" + (info.special === 1 ? "" : "s") +
        " (shown as marks like ⟨ESC M⟩, \\r or ⟨U+202E⟩): a terminal or editor may display this text differently from what runs." +
        (info.bidi ? " Includes " + fmt(info.bidi) + " bidi control" + (info.bidi === 1 ? "" : "s") + " that reorder text." : "")]);
    }
    if (info.longestRun) {
      items.push(["whitespace", "Contains a run of " + fmt(info.longestRun) + " blank characters (shown as ⟨N spaces⟩): text after it may be out of sight elsewhere."]);
    }
    if (!items.length) return null;
    return el("div", { class: "warnings", testid: "input-warnings" },
      items.map(([kind, text]) => el("div", { class: "warning warning-" + kind, "data-kind": kind, text: "⚠ " + text })));
  }

  // The input of a tool call, field by field, whole.
  function inputView(input) {
    const box = el("div", { class: "input-fields", testid: "input-fields" });
    const entries = input && typeof input === "object" && !Array.isArray(input) ? Object.entries(input) : [["input", input]];
    for (const [key, value] of entries) {
      if (key === "env" && value && typeof value === "object" && !Array.isArray(value)) {
        box.append(envView(value)); // approved with the command: every entry whole, marked
        continue;
      }
      const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
      const str = String(text === undefined ? "" : text);
      const head = el("div", { class: "field-head" }, [
        el("span", { class: "field-key", testid: "field-key" }, [visible(key, "strict")]),
        el("span", { class: "field-len", testid: "field-length", text: fmt(str.length) + (str.length === 1 ? " character" : " characters") + (typeof value === "string" ? "" : " · JSON") }),
      ]);
      const pre = el("pre", {
        class: "field-value" + (str.length > LONG_VALUE ? " long" : ""),
        testid: "field-value",
        "data-key": key,
        "data-length": str.length,
        tabindex: "0",
      });
      pre.append(visible(str, "strict"));
      box.append(el("div", { class: "field", "data-key": key }, [head, pre]));
    }
    return box;
  }

  // A command's env: one NAME=value line per entry, each whole and marked.
  function envView(env) {
    const entries = Object.entries(env);
    const pre = el("pre", { class: "field-value env-value", testid: "env-value", "data-key": "env", tabindex: "0" });
    entries.forEach(([name, value], i) => {
      const line = el("span", { class: "env-entry", testid: "env-entry", "data-name": name });
      line.append(visible(name, "strict"), "=", visible(typeof value === "string" ? value : JSON.stringify(value), "strict"));
      pre.append(line);
      if (i < entries.length - 1) pre.append("\n");
    });
    const head = el("div", { class: "field-head" }, [
      el("span", { class: "field-key", testid: "field-key" }, [visible("env", "strict")]),
      el("span", { class: "field-len env-note", testid: "env-note",
        text: fmt(entries.length) + (entries.length === 1 ? " variable" : " variables") + " · approved with the command" }),
    ]);
    return el("div", { class: "field field-env", "data-key": "env" }, [head, pre]);
  }

  // A unified diff with added / removed lines coloured.
  function diffView(diff) {
    const pre = el("pre", { class: "diff", testid: "diff", tabindex: "0" });
    const lines = String(diff.text || "").split("\n");
    for (const line of lines) {
      let kind = "ctx";
      if (line.startsWith("+++") || line.startsWith("---")) kind = "file";
      else if (line.startsWith("@@")) kind = "hunk";
      else if (line.startsWith("*** ")) kind = "file";
      else if (line.startsWith("+")) kind = "add";
      else if (line.startsWith("-")) kind = "del";
      pre.append(el("span", { class: "diff-line diff-" + kind, testid: "diff-" + kind }, [visible(line, "code")]), "\n");
    }
    const stats = typeof diff.added === "number" ? "+" + fmt(diff.added) + " -" + fmt(diff.removed) : "";
    return el("div", { class: "diff-view", testid: "diff-view" }, [
      el("div", { class: "diff-head" }, [
        diff.path ? el("code", { class: "diff-path", testid: "diff-path" }, [visible(diff.path, "strict")]) : null,
        stats ? el("span", { class: "diff-stats", testid: "diff-stats", text: stats }) : null,
      ]),
      diff.note ? el("div", { class: "diff-note", testid: "diff-note" }, [visible(diff.note, "text")]) : null,
      pre,
    ]);
  }

  // ------------------------------------------------------------ markdown

  // The server renders Markdown with raw HTML disabled; this allow-list is a
  // second layer: any element or attribute not listed is dropped (its text kept).
  const MD_TAGS = new Set(["P", "BR", "HR", "H1", "H2", "H3", "H4", "H5", "H6", "UL", "OL", "LI", "BLOCKQUOTE", "PRE",
    "CODE", "SPAN", "EM", "STRONG", "DEL", "S", "A", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD"]);
  const MD_ATTRS = {
    A: { href: /^(https?:|mailto:)/i, title: /^/ },
    CODE: { class: /^language-[\w+#.-]{1,40}$/ },
    SPAN: { class: /^tok-[\w-]+( tok-[\w-]+)*$/ },
    OL: { start: /^\d{1,9}$/ },
    TH: { class: /^align-(left|right|center)$/ },
    TD: { class: /^align-(left|right|center)$/ },
  };

  function sanitize(parent) {
    for (const node of Array.from(parent.childNodes)) {
      if (node.nodeType === Node.TEXT_NODE) continue;
      if (node.nodeType !== Node.ELEMENT_NODE || !MD_TAGS.has(node.tagName)) {
        const text = node.nodeType === Node.ELEMENT_NODE ? node.textContent : "";
        node.replaceWith(document.createTextNode(text || ""));
        continue;
      }
      const allowed = MD_ATTRS[node.tagName] || {};
      for (const attr of Array.from(node.attributes)) {
        const rule = allowed[attr.name];
        if (!rule || !rule.test(attr.value)) node.removeAttribute(attr.name);
      }
      if (node.tagName === "A") {
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer");
        if (node.hasAttribute("href")) node.setAttribute("title", node.getAttribute("href"));
      }
      sanitize(node);
    }
  }

  function markTextNodes(root) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    for (const node of nodes) {
      PATTERNS.text.lastIndex = 0;
      if (PATTERNS.text.test(node.data)) node.replaceWith(visible(node.data, "text"));
    }
  }

  function insertMarkdown(target, html, text) {
    target.textContent = "";
    if (!html) {
      target.classList.remove("md");
      target.append(visible(text, "text"));
      return target;
    }
    const tpl = document.createElement("template");
    tpl.innerHTML = html; // inert: nothing in a template runs or loads
    sanitize(tpl.content);
    markTextNodes(tpl.content);
    target.classList.add("md");
    target.append(tpl.content);
    return target;
  }

  // ------------------------------------------------------------ page frame

  const log = $("log");

  function scroll() {
    log.scrollTop = log.scrollHeight;
  }

  function add(node) {
    log.append(node);
    scroll();
    return node;
  }

  function closeText() {
    state.textEl = null;
    state.thoughtEl = null;
  }

  function setStatus(status) {
    const node = $("run-status");
    node.textContent = status;
    node.className = "status status-" + cssToken(status);
    state.running = status === "running";
    $("stop-button").disabled = !state.running;
    $("send-button").disabled = state.running;
  }

  function setSession(id) {
    state.sessionId = id;
    $("session-id").textContent = id || "";
    for (const item of document.querySelectorAll('[data-testid="session-item"]')) {
      item.classList.toggle("current", item.getAttribute("data-session-id") === id);
    }
  }

  // ------------------------------------------------------------ cards

  // A card's own parts: never those of a card nested in it (a subagent's cards sit inside a task card).
  function part(card, testid) {
    return card.querySelector(':scope > [data-testid="' + testid + '"]');
  }

  function headPart(card, testid) {
    return card.querySelector(':scope > .card-head > [data-testid="' + testid + '"]');
  }

  function setBadge(card, p) {
    let badge = headPart(card, "tool-badge");
    if (!p.badge) {
      if (badge) badge.remove();
      return;
    }
    if (!badge) {
      badge = el("span", { class: "tool-badge", testid: "tool-badge" });
      card.querySelector(":scope > .card-head > .spacer").before(badge);
    }
    setVisible(badge, p.badge, "text");
  }

  function toolCard(data) {
    const id = data.tool_call_id;
    if (id && state.cards[id]) return state.cards[id];
    const p = presentationFor(data.tool_name, data.presentation);
    const card = el("div", {
      class: "card tool-card tone-" + tone(p.tone) + (p.group ? " group-" + cssToken(p.group) : ""),
      testid: "tool-card",
      "data-tool-name": data.tool_name,
      "data-tool-call-id": id,
      "data-tone": tone(p.tone),
      "data-group": p.group || "",
    });
    const head = el("div", { class: "card-head" }, [
      SmokeIcons.setIcon(el("span", { class: "tool-icon", testid: "tool-icon" }), p.icon || "🔧"),
      el("span", { class: "tool-label", testid: "tool-label" }, [visible(p.label || data.tool_name, "text")]),
      p.group ? el("span", { class: "tool-group", testid: "tool-group" }, [visible(p.group, "text")]) : null,
      el("span", { class: "tool-name" }, [visible(data.tool_name, "strict")]),
      el("span", { class: "spacer" }),
      el("span", { class: "tool-status", testid: "tool-status", text: "running" }),
    ]);
    card.append(head);
    setBadge(card, p);
    if (data.input && Object.keys(data.input).length) {
      const info = scanValue(data.input);
      card.append(el("details", { class: "tool-input", testid: "tool-input" }, [
        el("summary", { text: "input · " + fmt(info.length) + " characters" + (info.special ? " · " + fmt(info.special) + " control/invisible" : "") }),
        inputView(data.input),
      ]));
    }
    card.append(el("pre", { class: "tool-output hidden", testid: "tool-output" }));
    card.append(el("div", { class: "tool-progress hidden", testid: "tool-progress" }));
    card.append(el("pre", { class: "tool-result hidden", testid: "tool-result" }));
    if (id) state.cards[id] = card;
    place(card, data.parent_tool_call_id);
    return card;
  }

  // A card goes into the log, or — for a subagent's call — inside the
  // subagent box of the task card that started it.
  function place(node, parentId) {
    if (typeof parentId === "string" && parentId) {
      const sub = subagentBox(parentId);
      sub.textEl = null;
      sub.thoughtEl = null;
      sub.body.append(node);
      node.setAttribute("data-parent-tool-call-id", parentId);
      scroll();
      return node;
    }
    closeText();
    return add(node);
  }

  // ------------------------------------------------------------ subagents

  // The box inside a task card that holds what its subagent does: its own
  // messages, its tool cards (with their approvals and questions) and how it
  // ended. Its text never goes into the parent's messages.
  function subagentBox(parentId) {
    let sub = state.subagents[parentId];
    if (sub) return sub;
    const status = el("span", { class: "subagent-status", testid: "subagent-status", text: "running" });
    const meta = el("span", { class: "subagent-meta", testid: "subagent-meta" });
    const body = el("div", { class: "subagent-body", testid: "subagent-body" });
    const box = el("div", { class: "subagent", testid: "subagent", "data-parent-tool-call-id": parentId, "data-state": "running" }, [
      el("div", { class: "subagent-head" }, [
        SmokeIcons.setIcon(el("span", { class: "tool-icon" }), "🤖"),
        el("strong", { text: "Subagent" }),
        meta,
        el("span", { class: "spacer" }),
        status,
      ]),
      body,
    ]);
    sub = { box, body, status, meta, textEl: null, thoughtEl: null, lastText: null };
    state.subagents[parentId] = sub;
    const host = state.cards[parentId];
    if (host) {
      host.insertBefore(box, part(host, "tool-result"));
    } else {
      // the task card is not on this page (dropped from the replay log): show it on its own
      box.setAttribute("data-orphan", "true");
      closeText();
      add(box);
    }
    return sub;
  }

  function subagentStarted(data) {
    const sub = subagentBox(data.parent_tool_call_id);
    const bits = [data.model, typeof data.step_limit === "number" ? "up to " + fmt(data.step_limit) + " steps" : null,
      Array.isArray(data.tools) ? fmt(data.tools.length) + (data.tools.length === 1 ? " tool" : " tools") : null].filter(Boolean);
    setVisible(sub.meta, bits.join(" · "), "text");
    if (data.task && !sub.box.querySelector(':scope > [data-testid="subagent-prompt"]')) {
      sub.body.before(el("details", { class: "subagent-prompt", testid: "subagent-prompt" }, [
        el("summary", { text: "prompt · " + fmt(String(data.task).length) + " characters" }),
        el("pre", {}, [visible(data.task, "text")]),
      ]));
    }
  }

  function subagentEnded(data, outcome) {
    const sub = subagentBox(data.parent_tool_call_id);
    sub.textEl = null;
    sub.thoughtEl = null;
    sub.box.setAttribute("data-state", outcome);
    sub.box.classList.add("subagent-" + outcome);
    const usage = data.usage ? " · " + formatUsage(data.usage) : "";
    const steps = typeof data.steps === "number" ? " · " + fmt(data.steps) + (data.steps === 1 ? " step" : " steps") : "";
    sub.status.textContent = outcome + steps + usage;
    if (outcome === "completed") {
      const bubbles = sub.body.querySelectorAll(':scope > [data-testid="subagent-message"]');
      const last = bubbles[bubbles.length - 1];
      if (data.text && data.text !== sub.lastText) {
        sub.body.append(el("div", { class: "msg assistant subagent-message final", testid: "subagent-answer" }, [visible(data.text, "text")]));
      } else if (last) {
        last.classList.add("final");
        last.setAttribute("data-testid", "subagent-answer");
      }
    } else if (outcome === "failed") {
      const e = data.error || {};
      sub.body.append(el("div", { class: "card error-card", testid: "subagent-error", "data-code": e.code || "" }, [
        el("div", { class: "error-message" }, [visible((e.code ? "(" + e.code + ") " : "") + (e.message || "the subagent failed"), "text")]),
        e.hint ? el("div", { class: "hint" }, [visible(e.hint, "text")]) : null,
      ]));
    } else {
      sub.body.append(el("div", { class: "note note-warning", testid: "subagent-interrupted" }, [visible("⏹ Subagent stopped (" + (data.reason || "aborted") + ")", "text")]));
      for (const card of sub.body.querySelectorAll('[data-testid="approval-card"]:not(.resolved), [data-testid="question-card"]:not(.resolved)')) {
        card.classList.add("resolved");
        for (const b of card.querySelectorAll("button, input")) b.disabled = true;
      }
    }
    scroll();
  }

  // text.* of a subagent: into its box, never into the parent's message
  function subagentText(type, ev) {
    const data = ev.data;
    const sub = subagentBox(data.parent_tool_call_id);
    if (type === "text.thought") {
      if (!sub.thoughtEl) {
        const body = el("div", { class: "thought-body" });
        sub.textEl = null;
        sub.body.append(el("details", { class: "thought", testid: "subagent-reasoning" }, [el("summary", { text: "reasoning" }), body]));
        sub.thoughtEl = body;
      }
      if (data.snapshot) sub.thoughtEl.textContent = "";
      sub.thoughtEl.append(visible(data.text || "", "text"));
    } else if (type === "text.delta") {
      if (!sub.textEl) {
        sub.textEl = el("div", { class: "msg assistant subagent-message streaming", testid: "subagent-message" });
        sub.body.append(sub.textEl);
      }
      sub.thoughtEl = null;
      if (data.snapshot) sub.textEl.textContent = "";
      sub.textEl.append(visible(data.text || "", "text"));
    } else if (type === "text.end") {
      const html = ev.ui && ev.ui.html;
      if (sub.textEl) {
        if (data.text || html) insertMarkdown(sub.textEl, html, data.text);
        sub.textEl.classList.remove("streaming");
      } else if (data.text) {
        sub.body.append(insertMarkdown(el("div", { class: "msg assistant subagent-message", testid: "subagent-message" }), html, data.text));
      }
      sub.lastText = data.text || null;
      sub.textEl = null;
      sub.thoughtEl = null;
    } else if (type === "text.discarded") {
      if (sub.textEl) sub.textEl.remove();
      if (sub.thoughtEl && sub.thoughtEl.parentNode) sub.thoughtEl.parentNode.remove();
      sub.textEl = null;
      sub.thoughtEl = null;
    }
    scroll();
  }

  function isChild(ev) {
    return !!(ev && ev.data && typeof ev.data.parent_tool_call_id === "string" && ev.data.parent_tool_call_id);
  }

  function onToolCompleted(data) {
    const card = toolCard(data);
    const p = presentationFor(data.tool_name, data.presentation);
    SmokeIcons.setIcon(headPart(card, "tool-icon"), p.icon || "🔧");
    setVisible(headPart(card, "tool-label"), p.label || data.tool_name, "text");
    setBadge(card, p);
    const status = headPart(card, "tool-status");
    // the tool's own time; the time a person took to approve it apart
    const waited = typeof data.waited_ms === "number" ? data.waited_ms : 0;
    const ms = typeof data.duration_ms !== "number" ? ""
      : waited > 0 ? " · ran " + (Math.max(data.duration_ms - waited, 0) / 1000).toFixed(1) + " s · waited " + (waited / 1000).toFixed(1) + " s for approval"
      : " · " + Math.round(data.duration_ms) + " ms";
    status.textContent = (data.is_error ? "error" : "done") + ms;
    card.classList.add(data.is_error ? "is-error" : "is-done");
    card.setAttribute("data-state", data.is_error ? "error" : "done");
    const result = part(card, "tool-result");
    let text = contentText(data.content);
    if (data.is_error && data.error && data.error.message && !text.includes(data.error.message)) {
      text = data.error.message + (text ? "\n" + text : "");
    }
    setVisible(result, text, "text");
    result.classList.toggle("hidden", !text);
    if (data.data && data.data.replay_truncated) result.append(el("div", { class: "omitted", text: "(shortened in the replay log; the model saw it whole)" }));
    part(card, "tool-progress").classList.add("hidden");
    // the result holds what the model saw; the live output was the preview of it
    if (text) part(card, "tool-output").classList.add("hidden");
    if (!data.is_error && data.data && typeof data.data.diff === "string" && data.data.diff && !part(card, "result-diff")) {
      const view = diffView({ text: data.data.diff, path: null, note: null });
      // open when no approval showed the diff already (an auto-approved edit)
      const shown = !!card.querySelector(':scope > [data-testid="approval-card"] [data-testid="diff-view"]');
      card.append(el("details", { class: "result-diff", testid: "result-diff", open: !shown }, [el("summary", { text: "changes" }), view]));
    }
  }

  function onToolOutput(data) {
    const card = toolCard(data);
    const out = part(card, "tool-output");
    out.classList.remove("hidden");
    let omitted = card._omitted || 0;
    let text;
    if (data.snapshot) {
      // a coalesced replay entry: everything kept so far for this call
      text = String(data.text || "");
      omitted = data.omitted_chars || 0;
    } else {
      text = (card._output || "") + String(data.text || "");
    }
    const rebuild = data.snapshot || text.length > OUTPUT_KEEP + 10000;
    if (text.length > OUTPUT_KEEP + 10000) {
      omitted += text.length - OUTPUT_KEEP;
      text = text.slice(-OUTPUT_KEEP);
    }
    if (rebuild) {
      out.textContent = "";
      if (omitted) out.append(el("span", { class: "omitted", testid: "output-omitted", text: "… " + fmt(omitted) + " earlier characters not shown (the result below holds what the model saw)\n" }));
      out.append(visible(text, "text"));
    } else {
      out.append(visible(String(data.text || ""), "text"));
    }
    card._output = text;
    card._omitted = omitted;
    out.scrollTop = out.scrollHeight;
    scroll();
  }

  function onToolProgress(data) {
    const card = toolCard(data);
    const node = part(card, "tool-progress");
    let text = data.message || "";
    if (typeof data.progress === "number") {
      text += " (" + data.progress + (typeof data.total === "number" ? "/" + data.total : "") + ")";
    }
    setVisible(node, text, "text");
    node.classList.toggle("hidden", !text);
    if (data.presentation) setBadge(card, presentationFor(data.tool_name, data.presentation));
  }

  function approvalCard(data, ui) {
    const id = data.tool_call_id;
    const p = presentationFor(data.tool_name, data.presentation);
    const buttons = el("div", { class: "buttons" });
    const input = data.input || {};
    const info = scanValue(input);
    const diff = ui && ui.diff;
    const hasInput = input && Object.keys(input).length;
    let body = null;
    if (diff) {
      body = el("div", { class: "approval-body" }, [
        diffView(diff),
        hasInput ? el("details", { class: "exact-input", testid: "exact-input" }, [el("summary", { text: "exact input · " + fmt(info.length) + " characters" }), inputView(input)]) : null,
      ]);
    } else if (hasInput) {
      body = el("div", { class: "approval-body" }, [inputView(input)]);
    }
    const card = el("div", {
      class: "card approval-card",
      testid: "approval-card",
      "data-tool-call-id": id,
      "data-tool-name": data.tool_name,
      "data-view": diff ? "diff" : "input",
      "data-input-length": info.length,
    }, [
      el("div", { class: "card-head" }, [
        SmokeIcons.setIcon(el("span", { class: "tool-icon" }), data.kind === "mcp_server" ? "🔌" : p.icon || "🔧"),
        el("strong", { testid: "approval-title" }, data.kind === "mcp_server"
          ? ["Start MCP server ", visible(data.tool_name, "strict"), "?"]
          : ["Allow ", visible(p.label || data.tool_name, "text"), "?"]),
        el("span", { class: "tool-name" }, [visible(data.tool_name, "strict")]),
      ]),
      data.reason ? el("div", { class: "reason", testid: "approval-reason" }, [visible(data.reason, "text")]) : null,
      warnings(info),
      body,
      buttons,
    ]);
    const always = data.kind !== "mcp_server" && ui && ui.always && ui.always.local && ui.always.user ? ui.always : null;
    const alwaysBox = always ? alwaysView(id, always) : null;
    const problem = el("div", { class: "approval-error hidden", testid: "approval-error", role: "alert" });
    const answer = (decision) => async () => {
      const body = { decision };
      if (decision === "allow_always") {
        body.remember = alwaysBox.scope();
        body.rule = always[body.remember].rule; // exactly the text on the card
      }
      for (const b of card.querySelectorAll(".buttons button, .always input")) b.disabled = true;
      problem.classList.add("hidden");
      try {
        const res = await api("POST", "/api/permissions/" + encodeURIComponent(id), body);
        resolveApproval(id, decision, res && res.remembered);
      } catch (err) {
        for (const b of card.querySelectorAll(".buttons button, .always input")) b.disabled = !!b.hasAttribute("data-unavailable");
        setVisible(problem, "Could not send the answer: " + err.message, "text");
        problem.setAttribute("data-status", String(err.status || ""));
        problem.classList.remove("hidden");
      }
    };
    buttons.append(
      el("button", { type: "button", class: "allow", testid: "approve-button", text: "Allow", onclick: answer("allow") }),
      el("button", { type: "button", class: "allow-run", testid: "approve-run-button", text: "Allow for this run", onclick: answer("allow_run") }),
      always ? el("button", { type: "button", class: "allow-always", testid: "always-button", text: "Always allow", title: "Allow this call and write the rule shown above to the settings file chosen there", onclick: answer("allow_always") }) : null,
      el("button", { type: "button", class: "deny", testid: "deny-button", text: "Deny", onclick: answer("deny") }),
    );
    if (alwaysBox) buttons.before(alwaysBox.node);
    buttons.after(problem);
    const host = state.cards[id];
    if (host) {
      host.insertBefore(card, part(host, "tool-output"));
      scroll();
    } else {
      place(card, data.parent_tool_call_id);
    }
  }

  // "Always allow": the rule it writes, exactly, and where (a choice).
  let alwaysGroups = 0;
  function alwaysView(id, always) {
    const rule = el("pre", { class: "rule", testid: "always-rule", tabindex: "0" });
    const file = el("code", { class: "rule-file", testid: "always-file" });
    const note = el("div", { class: "rule-note hidden", testid: "always-note" });
    let scope = always[always.default] && always[always.default].available ? always.default : "user";
    const choices = el("div", { class: "always-scopes" });
    const names = { local: "this folder (.smoke/config.local.yaml)", user: "all my folders (user settings)" };
    const group = "always-scope-" + (++alwaysGroups);
    for (const which of ["local", "user"]) {
      const option = always[which];
      const input = el("input", { type: "radio", name: group, value: which, testid: "always-scope-" + which,
        checked: which === scope, disabled: !option.available, "data-unavailable": option.available ? null : "true" });
      input.addEventListener("change", () => { if (input.checked) { scope = which; show(); } });
      choices.append(el("label", { class: "always-scope" + (option.available ? "" : " unavailable"), title: option.note || "" }, [input, " " + names[which]]));
    }
    function show() {
      const option = always[scope];
      setVisible(rule, option.rule, "strict");
      rule.setAttribute("data-scope", scope);
      rule.setAttribute("data-length", String(option.rule.length));
      file.textContent = "";
      file.append(visible(option.file, "strict"));
      const notes = [];
      if (always.local.note) notes.push(always.local.note + ".");
      if (always.broad) notes.push("⚠ This rule has no argument: it allows every call of this tool, whatever its input.");
      setVisible(note, notes.join(" "), "text");
      note.classList.toggle("hidden", !notes.length);
    }
    show();
    const node = el("div", { class: "always", testid: "always", "data-broad": always.broad ? "true" : null }, [
      el("div", { class: "always-head" }, ["“Always allow” writes this allow rule, so later runs do not ask again:"]),
      rule,
      choices,
      el("div", { class: "always-where" }, ["to ", file]),
      note,
    ]);
    return { node, scope: () => scope };
  }

  function resolveApproval(id, decision, remembered) {
    for (const card of document.querySelectorAll('[data-testid="approval-card"]')) {
      if (card.getAttribute("data-tool-call-id") !== id) continue;
      if (card.classList.contains("resolved")) {
        // the page that answered already showed the decision; the event may add the rule written
        if (remembered && !card.querySelector('[data-testid="approval-remembered"]')) card.append(rememberedView(remembered));
        continue;
      }
      card.classList.add("resolved");
      card.setAttribute("data-decision", decision);
      for (const b of card.querySelectorAll(".buttons button")) b.remove();
      for (const node of card.querySelectorAll('[data-testid="always"], [data-testid="approval-error"]')) node.remove();
      const words = { allow: "Allowed", allow_run: "Allowed for this run", allow_always: "Always allowed", deny: "Denied" };
      card.append(el("div", { class: "decision decision-" + cssToken(decision), testid: "approval-decision", text: words[decision] || decision }));
      if (remembered) card.append(rememberedView(remembered));
    }
  }

  function rememberedView(remembered) {
    const node = el("div", { class: "remembered", testid: "approval-remembered" }, [
      "Rule ", el("code", { testid: "remembered-rule" }, [visible(remembered.rule, "strict")]),
      " written to ", el("code", { testid: "remembered-file" }, [visible(remembered.file, "strict")]),
    ]);
    if (remembered.shown && remembered.shown !== remembered.rule) {
      node.append(el("div", { class: "warning", text: "⚠ This differs from the rule the card showed; check the file (smoke permissions lists every rule)." }));
    }
    return node;
  }

  // A form question (an MCP server's elicitation): one input per field the
  // server described; the server side checks the answer against the schema
  // (defaults applied) and says what is wrong, so the person can fix it.
  function formField(f) {
    const label = el("label", { class: "form-label", for: "form-" + f.name }, [visible(f.title, "strict"), f.required ? " *" : ""]);
    let input;
    if (f.kind === "boolean") {
      input = el("input", { type: "checkbox", id: "form-" + f.name, testid: "form-input", "data-name": f.name, "data-kind": f.kind });
      input.checked = f.has_default ? Boolean(f.default) : false;
    } else if (f.kind === "choice") {
      input = el("select", { id: "form-" + f.name, testid: "form-input", "data-name": f.name, "data-kind": f.kind });
      if (!f.required || !f.has_default) input.append(el("option", { value: "" }, ["—"]));
      f.choices.forEach((c, i) => {
        const option = el("option", { value: String(i) }, [visible(c.label, "strict")]);
        if (f.has_default && c.value === f.default) option.selected = true;
        input.append(option);
      });
    } else if (f.kind === "choices") {
      input = el("div", { class: "form-choices", testid: "form-input", "data-name": f.name, "data-kind": f.kind });
      f.choices.forEach((c, i) => {
        const box = el("input", { type: "checkbox", value: String(i), "data-choice": String(i) });
        if (f.has_default && Array.isArray(f.default) && f.default.includes(c.value)) box.checked = true;
        input.append(el("label", { class: "form-choice" }, [box, " ", visible(c.label, "strict")]));
      });
    } else {
      const type = f.kind === "text" ? ({ email: "email", uri: "url", date: "date" }[f.format] || "text") : "number";
      input = el("input", { type, id: "form-" + f.name, testid: "form-input", "data-name": f.name, "data-kind": f.kind,
        step: f.kind === "integer" ? "1" : f.kind === "number" ? "any" : null,
        min: f.minimum, max: f.maximum, minlength: f.min_length, maxlength: f.max_length,
        placeholder: f.has_default ? String(f.default) : "" });
      if (f.has_default) input.value = String(f.default);
    }
    return el("div", { class: "form-field", testid: "form-field", "data-name": f.name }, [
      label, input, f.description ? el("div", { class: "hint" }, [visible(f.description, "text")]) : null,
    ]);
  }

  function formValues(card, fields) {
    const values = {};
    for (const f of fields) {
      const input = card.querySelector('[data-testid="form-input"][data-name="' + CSS.escape(f.name) + '"]');
      if (f.kind === "boolean") values[f.name] = input.checked;
      else if (f.kind === "choice") { if (input.value !== "") values[f.name] = f.choices[Number(input.value)].value; }
      else if (f.kind === "choices") {
        values[f.name] = [...input.querySelectorAll("input:checked")].map((b) => f.choices[Number(b.value)].value);
      } else if (input.value !== "") {
        values[f.name] = f.kind === "text" ? input.value : Number(input.value);
      }
    }
    return values;
  }

  function formCard(data, ui) {
    const id = data.tool_call_id;
    const fields = (ui && ui.fields) || [];
    const problem = el("div", { class: "warning", testid: "form-problem", hidden: true });
    const form = el("form", { class: "answer form", testid: "question-form" }, fields.map(formField));
    const send = async (values) => {
      for (const b of card.querySelectorAll("button, input, select")) b.disabled = true;
      try {
        await api("POST", "/api/questions/" + encodeURIComponent(id), { values });
        resolveQuestion(id, values === null ? "(declined)" : JSON.stringify(values));
      } catch (err) {
        for (const b of card.querySelectorAll("button, input, select")) b.disabled = false;
        problem.hidden = false;
        setVisible(problem, err.message, "text");
      }
    };
    const buttons = el("div", { class: "buttons" }, [
      ui && ui.form_problem ? null : el("button", { type: "submit", class: "allow", testid: "form-submit", text: "Send" }),
      el("button", { type: "button", class: "deny", testid: "form-decline", text: "Decline", onclick: () => send(null) }),
    ]);
    form.append(buttons);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      send(formValues(card, fields));
    });
    const info = scanValue([data.question]);
    const card = el("div", { class: "card question-card", testid: "question-card", "data-tool-call-id": id, "data-form": "true" }, [
      el("div", { class: "card-head" }, [SmokeIcons.setIcon(el("span", { class: "tool-icon" }), "📝"), el("strong", { text: "Form" })]),
      warnings(info),
      el("div", { class: "question-text", testid: "question-text", tabindex: "0" }, [visible(data.question, "strict")]),
      ui && ui.form_problem ? el("div", { class: "warning", testid: "form-unshowable" }, [visible("This form cannot be shown: " + ui.form_problem, "text")]) : null,
      problem,
      form,
    ]);
    place(card, data.parent_tool_call_id);
  }

  function questionCard(data, ui) {
    if (data.form) return formCard(data, ui);
    const id = data.tool_call_id;
    const form = el("form", { class: "answer" });
    const input = el("input", { type: "text", testid: "question-input", placeholder: "Type an answer…" });
    const submit = el("button", { type: "submit", testid: "question-submit", text: "Answer" });
    const send = async (text) => {
      for (const b of card.querySelectorAll("button, input")) b.disabled = true;
      try {
        await api("POST", "/api/questions/" + encodeURIComponent(id), { text });
        resolveQuestion(id, text);
      } catch (err) {
        for (const b of card.querySelectorAll("button, input")) b.disabled = false;
        showError("Could not send the answer", err.message);
      }
    };
    const options = el("div", { class: "buttons options" });
    for (const option of data.options || []) {
      options.append(el("button", { type: "button", testid: "question-option", "data-value": option, onclick: () => send(option) }, [visible(option, "strict")]));
    }
    form.append(input, submit);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (input.value.trim()) send(input.value);
    });
    const info = scanValue([data.question, ...(data.options || [])]);
    const question = el("div", { class: "question-text" + (String(data.question || "").length > LONG_VALUE ? " long" : ""), testid: "question-text", tabindex: "0" }, [visible(data.question, "strict")]);
    const card = el("div", { class: "card question-card", testid: "question-card", "data-tool-call-id": id, "data-question-length": String(data.question || "").length }, [
      el("div", { class: "card-head" }, [SmokeIcons.setIcon(el("span", { class: "tool-icon" }), "❓"), el("strong", { text: "Question" })]),
      warnings(info),
      question,
      (data.options || []).length ? options : null,
      form,
    ]);
    const host = state.cards[id];
    if (host) {
      host.insertBefore(card, part(host, "tool-output"));
      scroll();
    } else {
      place(card, data.parent_tool_call_id);
    }
  }

  // ------------------------------------------------------------ plan mode

  function setMode(mode) {
    state.mode = mode || "";
    $("permission-mode").textContent = state.mode ? "mode: " + state.mode : "";
    const toggle = $("plan-toggle");
    toggle.setAttribute("aria-pressed", String(state.mode === "plan"));
    toggle.classList.toggle("on", state.mode === "plan");
  }

  // exit_plan_mode: the plan (Markdown), then approve (in the mode picked), edit, or reject with words
  function planCard(data, ui) {
    const id = data.tool_call_id;
    const text = el("div", { class: "plan-body", testid: "plan-text" });
    insertMarkdown(text, ui && ui.html, data.plan || "");
    const problem = el("div", { class: "approval-error hidden", testid: "plan-error", role: "alert" });
    const editor = el("textarea", { class: "hidden", testid: "plan-edit-text", rows: "10", "aria-label": "The plan, as you want it" });
    editor.value = data.plan || "";
    const reason = el("textarea", { class: "hidden", testid: "plan-reject-text", rows: "3", placeholder: "What should change?" });
    const first = el("div", { class: "buttons" });
    const second = el("div", { class: "buttons hidden" });
    const send = async (body) => {
      for (const b of card.querySelectorAll("button, textarea")) b.disabled = true;
      problem.classList.add("hidden");
      try {
        await api("POST", "/api/plans/" + encodeURIComponent(id), body);
        resolvePlan(id, body.decision, body.mode);
      } catch (err) {
        for (const b of card.querySelectorAll("button, textarea")) b.disabled = false;
        setVisible(problem, "Could not send the answer: " + err.message, "text");
        problem.classList.remove("hidden");
      }
    };
    const showSecond = (node, buttons) => {
      editor.classList.add("hidden");
      reason.classList.add("hidden");
      node.classList.remove("hidden");
      second.textContent = "";
      second.append(...buttons);
      second.classList.remove("hidden");
      node.focus();
    };
    first.append(
      el("button", { type: "button", class: "allow", testid: "plan-approve", text: "Approve", title: "Go on; every change still asks first", onclick: () => send({ decision: "approve", mode: "ask-default" }) }),
      el("button", { type: "button", class: "allow-run", testid: "plan-approve-edits", text: "Approve and accept edits", title: "Go on; file edits in the workspace run without asking, commands still ask", onclick: () => send({ decision: "approve", mode: "accept-edits" }) }),
      el("button", { type: "button", testid: "plan-edit", text: "Edit…", onclick: () => showSecond(editor, [
        el("button", { type: "button", class: "allow", testid: "plan-edit-approve", text: "Approve my version", onclick: () => send({ decision: "edit", mode: "ask-default", text: editor.value }) }),
        el("button", { type: "button", class: "allow-run", testid: "plan-edit-approve-edits", text: "Approve my version and accept edits", onclick: () => send({ decision: "edit", mode: "accept-edits", text: editor.value }) }),
      ]) }),
      el("button", { type: "button", class: "deny", testid: "plan-reject", text: "Reject…", onclick: () => showSecond(reason, [
        el("button", { type: "button", class: "deny", testid: "plan-reject-submit", text: "Send back to the agent", onclick: () => send({ decision: "reject", text: reason.value }) }),
      ]) }),
    );
    const done = Number(data.rejections || 0);
    const card = el("div", { class: "card plan-card", testid: "plan-card", "data-tool-call-id": id }, [
      el("div", { class: "card-head" }, [SmokeIcons.setIcon(el("span", { class: "tool-icon" }), "🗺"), el("strong", { text: "Plan to approve" }),
        done ? el("span", { class: "tool-name", text: "rejected " + done + " of " + data.max_rejections + " times" }) : null]),
      text, editor, reason, first, second, problem,
    ]);
    const host = state.cards[id];
    if (host) {
      host.insertBefore(card, part(host, "tool-output"));
      scroll();
    } else {
      place(card, data.parent_tool_call_id);
    }
  }

  function resolvePlan(id, decision, mode) {
    for (const card of document.querySelectorAll('[data-testid="plan-card"]')) {
      if (card.getAttribute("data-tool-call-id") !== id || card.classList.contains("resolved")) continue;
      card.classList.add("resolved");
      card.setAttribute("data-decision", decision);
      for (const node of card.querySelectorAll(".buttons, textarea, [data-testid=plan-error]")) node.remove();
      const words = decision === "reject" ? "Rejected: the agent keeps planning"
        : (decision === "edit" ? "Approved as edited" : "Approved") + (mode ? " · mode " + mode : "");
      card.append(el("div", { class: "decision decision-" + cssToken(decision), testid: "plan-decision", text: words }));
    }
  }

  function resolveQuestion(id, text) {
    for (const card of document.querySelectorAll('[data-testid="question-card"]')) {
      if (card.getAttribute("data-tool-call-id") !== id || card.classList.contains("resolved")) continue;
      card.classList.add("resolved");
      for (const node of card.querySelectorAll(".options, form, [data-testid=form-problem]")) node.remove();
      card.append(el("div", { class: "decision", testid: "question-answer" }, ["Answer: ", visible(text, "strict")]));
    }
  }

  function showError(title, message, extra) {
    closeText();
    return add(el("div", { class: "card error-card", testid: "error-card" }, [
      el("div", { class: "card-head" }, [SmokeIcons.setIcon(el("span", { class: "tool-icon" }), "⛔"), el("strong", { text: title })]),
      el("div", { class: "error-message", testid: "error-message" }, [visible(message || "", "text")]),
      extra ? el("div", { class: "hint" }, [visible(extra, "text")]) : null,
    ]));
  }

  function note(text, kind) {
    closeText();
    return add(el("div", { class: "note note-" + (kind || "info"), testid: "note" }, [visible(text, "text")]));
  }

  function renderTodos(todos) {
    const box = $("todos");
    const list = box.querySelector(".todo-list");
    list.textContent = "";
    for (const todo of todos || []) {
      const status = todo.status || "pending";
      const mark = status === "completed" ? "☑" : status === "in_progress" ? "◐" : "☐";
      list.append(el("li", { class: "todo todo-" + cssToken(status), testid: "todo" }, [mark + " ", visible(todo.content || todo.text || "", "text")]));
    }
    box.classList.toggle("hidden", !(todos || []).length);
  }

  function assistantBubble(text, html, final) {
    const node = el("div", { class: "msg assistant" + (final ? " final" : ""), testid: final ? "final-message" : "assistant-message" });
    return insertMarkdown(node, html, text);
  }

  // ------------------------------------------------------------ events

  const handlers = {
    "ui.hello": (ev) => {
      Object.assign(state.presentations, ev.data.presentations || {});
      if (!state.sessionId) setSession(ev.session_id);
    },
    "ui.error": (ev) => {
      showError("The run could not start", ev.data.message);
      setStatus("failed");
    },
    "ui.replay_gap": (ev) => {
      note("Older events were dropped from this server's replay log (it keeps " + fmt(Math.round((ev.data.budget_bytes || 0) / 1048576)) + " MiB); the Sessions list holds every transcript.", "warning")
        .setAttribute("data-testid", "replay-gap");
    },
    "run.started": (ev) => {
      if (ev.session_id && ev.session_id !== state.lastSession) {
        add(el("div", { class: "session-sep", testid: "session-separator", text: "session " + ev.session_id }));
      }
      state.lastSession = ev.session_id;
      setSession(ev.session_id);
      state.lastAssistantText = null;
      closeText();
      add(el("div", { class: "msg user", testid: "user-message", "data-run-id": ev.run_id }, [visible(ev.data.task, "text")]));
      if (ev.ui && typeof ev.ui.turn === "number" && ev.session_id) add(turnActions(ev.session_id, ev.ui.turn));
      const model = [ev.data.provider, ev.data.model].filter(Boolean).join(" · ");
      if (model) $("run-phase").setAttribute("title", model);
      setUsage(null);
      $("run-phase").textContent = "";
      setStatus("running");
    },
    "text.thought": (ev) => {
      if (isChild(ev)) return subagentText(ev.type, ev);
      if (!state.thoughtEl) {
        const body = el("div", { class: "thought-body" });
        state.textEl = null;
        add(el("details", { class: "thought", testid: "reasoning", open: true }, [el("summary", { text: "reasoning" }), body]));
        state.thoughtEl = body;
      }
      if (ev.data.snapshot) state.thoughtEl.textContent = "";
      state.thoughtEl.append(visible(ev.data.text || "", "text"));
      scroll();
    },
    "text.delta": (ev) => {
      if (isChild(ev)) return subagentText(ev.type, ev);
      // streamed as plain text; text.end replaces it with the rendered Markdown
      if (!state.textEl) {
        state.textEl = add(el("div", { class: "msg assistant streaming", testid: "assistant-message" }));
      }
      state.thoughtEl = null;
      if (ev.data.snapshot) state.textEl.textContent = "";
      state.textEl.append(visible(ev.data.text || "", "text"));
      scroll();
    },
    "text.end": (ev) => {
      if (isChild(ev)) return subagentText(ev.type, ev);
      const html = ev.ui && ev.ui.html;
      if (state.textEl) {
        if (ev.data.text || html) insertMarkdown(state.textEl, html, ev.data.text);
        state.textEl.classList.remove("streaming");
      } else if (ev.data.text) {
        add(assistantBubble(ev.data.text, html, false));
      }
      state.lastAssistantText = ev.data.text || null;
      closeText();
      scroll();
    },
    "text.discarded": (ev) => {
      if (isChild(ev)) return subagentText(ev.type, ev);
      // The provider call is retried: drop what was streamed so far.
      if (state.textEl) state.textEl.remove();
      if (state.thoughtEl && state.thoughtEl.parentNode) state.thoughtEl.parentNode.remove();
      closeText();
    },
    "tool.started": (ev) => { toolCard(ev.data); },
    "tool.output": (ev) => { onToolOutput(ev.data); },
    "tool.progress": (ev) => { onToolProgress(ev.data); },
    "tool.completed": (ev) => { onToolCompleted(ev.data); },
    "permission.required": (ev) => { approvalCard(ev.data, ev.ui); },
    "permission.resolved": (ev) => { resolveApproval(ev.data.tool_call_id, ev.data.decision, ev.ui && ev.ui.remembered); },
    "ask_user.required": (ev) => { questionCard(ev.data, ev.ui); },
    "plan.required": (ev) => { planCard(ev.data, ev.ui); },
    "plan.resolved": (ev) => { resolvePlan(ev.data.tool_call_id, ev.data.decision, ev.data.mode); },
    "permission.mode_changed": (ev) => { setMode(ev.data.mode); },
    "ask_user.response": (ev) => { resolveQuestion(ev.data.tool_call_id, ev.data.action === "decline" ? "(declined)" : ev.data.text); },
    "usage.updated": (ev) => { setUsage(ev.data.usage); },
    "phase.changed": (ev) => { $("run-phase").textContent = ev.data.phase || ""; },
    "todo.updated": (ev) => {
      if (isChild(ev)) return; // the sidebar holds the run's own plan, not a subagent's
      renderTodos(ev.data.todos);
    },
    "run.warning": (ev) => {
      const e = ev.data.error || {};
      const retry = typeof ev.data.retry_in_ms === "number" ? " — retrying in " + (ev.data.retry_in_ms / 1000).toFixed(1) + " s" : "";
      if (isChild(ev)) {
        subagentBox(ev.data.parent_tool_call_id).body.append(
          el("div", { class: "note note-warning", testid: "warning-card" }, [visible("⚠ " + (e.message || "warning") + retry, "text")]));
        scroll();
        return;
      }
      note("⚠ " + (e.message || "warning") + retry, "warning").setAttribute("data-testid", "warning-card");
    },
    "subagent.started": (ev) => { if (isChild(ev)) subagentStarted(ev.data); },
    "subagent.completed": (ev) => { if (isChild(ev)) subagentEnded(ev.data, "completed"); },
    "subagent.failed": (ev) => { if (isChild(ev)) subagentEnded(ev.data, "failed"); },
    "subagent.interrupted": (ev) => { if (isChild(ev)) subagentEnded(ev.data, "interrupted"); },
    "hook.completed": (ev) => {
      // a command hook (plugin smoke-hooks) ran: which, where it came from, what it decided
      const d = ev.data || {};
      const took = typeof d.duration_ms === "number" ? " (" + Math.round(d.duration_ms) + " ms)" : "";
      const why = d.error || d.reason;
      const text = (d.hook_event || "hook") + " · " + (d.hook || "") + " · " + (d.decision || "no decision") + took + (why ? ": " + why : "");
      const row = el("div", { class: "note note-hook" + (d.error ? " note-warning" : ""), testid: "hook-note" }, [SmokeIcons.setIcon(el("span", { class: "note-icon" }), "🪝"), " ", visible(text, "text")]);
      if (isChild(ev)) {
        subagentBox(ev.data.parent_tool_call_id).body.append(row);
        scroll();
        return;
      }
      closeText();
      add(row);
    },
    "compaction.completed": (ev) => {
      note("Older turns summarised (" + ev.data.messages_before + " → " + ev.data.messages_after + " messages)");
    },
    "run.completed": (ev) => {
      closeText();
      const text = ev.data.text;
      if (text && text !== state.lastAssistantText) {
        add(assistantBubble(text, ev.ui && ev.ui.html, true));
      } else {
        const bubbles = log.querySelectorAll('[data-testid="assistant-message"]');
        const last = bubbles[bubbles.length - 1];
        if (last) {
          last.classList.add("final");
          last.setAttribute("data-final", "true");
          last.setAttribute("data-testid", "final-message");
        }
      }
      setUsage(ev.data.usage);
      setStatus("completed");
      refreshSessions();
    },
    "run.failed": (ev) => {
      const e = ev.data.error || {};
      const card = showError("Run failed" + (e.code ? " (" + e.code + ")" : ""), e.message, e.hint);
      card.setAttribute("data-code", e.code || "");
      if (ev.data.usage) setUsage(ev.data.usage);
      setStatus("failed");
      refreshSessions();
    },
    "run.interrupted": (ev) => {
      note("⏹ Run stopped (" + (ev.data.reason || "aborted") + ")", "warning").setAttribute("data-testid", "interrupted-note");
      for (const card of document.querySelectorAll('[data-testid="approval-card"]:not(.resolved), [data-testid="question-card"]:not(.resolved), [data-testid="plan-card"]:not(.resolved)')) {
        card.classList.add("resolved");
        for (const b of card.querySelectorAll("button, input")) b.disabled = true;
      }
      if (ev.data.usage) setUsage(ev.data.usage);
      setStatus("interrupted");
      refreshSessions();
    },
  };

  function dispatch(ev) {
    if (!ev || typeof ev.type !== "string") return;
    const handler = Object.prototype.hasOwnProperty.call(handlers, ev.type) ? handlers[ev.type] : null;
    if (!handler) return; // unknown types are ignored, never fatal
    try {
      handler(ev);
    } catch (err) {
      console.error("smoke-ui: could not show event", ev.type, err);
    }
  }

  function connect(since) {
    // EventSource sends Last-Event-ID itself when it reconnects (the server
    // may end a stream that falls behind): the replay log fills the gap.
    const source = new EventSource("/api/events?token=" + encodeURIComponent(token) + "&since=" + since);
    const conn = $("connection");
    source.onopen = () => { conn.textContent = "connected"; conn.className = "conn ok"; };
    source.onerror = () => { conn.textContent = "reconnecting…"; conn.className = "conn lost"; };
    source.onmessage = (msg) => {
      let ev;
      try { ev = JSON.parse(msg.data); } catch (e) { return; }
      dispatch(ev);
    };
    return source;
  }

  // ------------------------------------------------------------ fork and rewind

  // "Rewind to here" on a turn: the files and the conversation back to before that turn's task.
  function rewindButton(sessionId, turn) {
    const button = el("button", { type: "button", class: "icon-button rewind-button", testid: "rewind-turn",
      "data-turn": turn, title: "Rewind to here: files and conversation back to before this task",
      "aria-label": "Rewind to before this turn" }, [SmokeIcons.iconSvg("⏪"), el("span", { text: "Rewind to here" })]);
    button.addEventListener("click", async (ev) => {
      ev.stopPropagation();
      button.disabled = true;
      try {
        const res = await api("POST", "/api/sessions/" + encodeURIComponent(sessionId) + "/rewind", { turn });
        rewound(res);
      } catch (err) {
        showError("Could not rewind", err.message);
      } finally {
        button.disabled = false;
      }
    });
    return button;
  }

  // the turn's actions sit under its message (the message's text stays the task's alone)
  function turnActions(sessionId, turn) {
    return el("div", { class: "turn-actions" }, [rewindButton(sessionId, turn)]);
  }

  function rewound(res) {
    setSession(res.session_id);
    $("transcript").classList.add("hidden");
    const undo = el("button", { type: "button", class: "small", testid: "undo-rewind", text: "Undo rewind",
      title: res.undo_hint || "" });
    const box = add(el("div", { class: "note note-info", testid: "rewind-note" }, [visible(res.said || "Rewound.", "text"), " ", undo]));
    undo.addEventListener("click", async () => {
      undo.disabled = true;
      try {
        const back = await api("POST", "/api/sessions/" + encodeURIComponent(res.undo.session_id) + "/rewind",
          { checkpoint: res.undo.checkpoint });
        setSession(back.session_id);
        undo.replaceWith(el("span", { class: "hint", testid: "rewind-undone", text: "Undone: " + (back.said || "") }));
        await refreshSessions();
      } catch (err) {
        undo.disabled = false;
        showError("Could not undo the rewind", err.message);
      }
    });
    refreshSessions();
    return box;
  }

  async function forkSession(sessionId) {
    try {
      const res = await api("POST", "/api/sessions/" + encodeURIComponent(sessionId) + "/fork");
      setSession(res.session_id);
      note("Forked session " + sessionId + " into " + res.session_id + " (" + res.messages + " messages); the next task goes on there.")
        .setAttribute("data-testid", "fork-note");
      await refreshSessions();
      openTranscript(res.session_id, res.session_id);
    } catch (err) {
      showError("Could not fork the session", err.message);
    }
  }

  // ------------------------------------------------------------ sessions

  function sessionItem(s) {
    const when = new Date((s.updated_at || 0) * 1000).toLocaleString();
    const titleText = s.title || s.session_id;
    const title = el("div", { class: "session-title", testid: "session-title" }, [visible(titleText, "text")]);
    const actions = el("div", { class: "session-actions" });
    const item = el("li", {
      class: "session" + (s.session_id === state.sessionId ? " current" : ""),
      testid: "session-item",
      "data-session-id": s.session_id,
      tabindex: "0",
      title: s.session_id,
    }, [
      el("div", { class: "session-row" }, [title, actions]),
      el("div", { class: "session-meta", text: s.message_count + (s.message_count === 1 ? " message · " : " messages · ") + when }),
    ]);
    item.addEventListener("click", (ev) => {
      if (ev.target.closest(".session-actions, .rename-form, .session-confirm")) return;
      openTranscript(s.session_id, titleText);
    });
    item.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && ev.target === item) openTranscript(s.session_id, titleText);
    });

    const rename = el("button", { type: "button", class: "icon-button", testid: "rename-session", title: "Rename", "aria-label": "Rename session" }, [SmokeIcons.iconSvg("✎")]);
    const remove = el("button", { type: "button", class: "icon-button", testid: "delete-session", title: "Delete", "aria-label": "Delete session" }, [SmokeIcons.iconSvg("🗑")]);
    const forkButton = el("button", { type: "button", class: "icon-button", testid: "fork-session", title: "Fork: a new session from a copy of this one", "aria-label": "Fork session" }, [SmokeIcons.iconSvg("🌿")]);
    forkButton.addEventListener("click", () => forkSession(s.session_id));
    actions.append(forkButton, rename, remove);

    rename.addEventListener("click", () => {
      const input = el("input", { type: "text", class: "rename-input", testid: "rename-input", maxlength: "200", value: s.title || "" });
      const form = el("form", { class: "rename-form" }, [input]);
      const done = () => { form.replaceWith(title); actions.classList.remove("hidden"); };
      form.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        try {
          await api("PATCH", "/api/sessions/" + encodeURIComponent(s.session_id), { title: input.value });
          await refreshSessions();
        } catch (err) {
          showError("Could not rename the session", err.message);
          done();
        }
      });
      input.addEventListener("keydown", (ev) => {
        if (ev.key === "Escape") { ev.stopPropagation(); ev.preventDefault(); done(); }
      });
      title.replaceWith(form);
      actions.classList.add("hidden");
      input.focus();
      input.select();
    });

    remove.addEventListener("click", () => {
      const yes = el("button", { type: "button", class: "deny small", testid: "confirm-delete", text: "Delete" });
      const no = el("button", { type: "button", class: "small", testid: "cancel-delete", text: "Keep" });
      const confirm = el("div", { class: "session-confirm", testid: "delete-confirm" }, ["Delete this session? ", yes, no]);
      no.addEventListener("click", () => { confirm.remove(); actions.classList.remove("hidden"); });
      yes.addEventListener("click", async () => {
        yes.disabled = true;
        try {
          const res = await api("DELETE", "/api/sessions/" + encodeURIComponent(s.session_id));
          if (res && res.current && res.current !== state.sessionId) {
            setSession(res.current);
            note("Session deleted; the next task starts session " + res.current);
          }
          if (state.transcriptSession === s.session_id) $("transcript").classList.add("hidden");
          await refreshSessions();
        } catch (err) {
          confirm.remove();
          actions.classList.remove("hidden");
          showError("Could not delete the session", err.message);
        }
      });
      actions.classList.add("hidden");
      item.append(confirm);
    });
    return item;
  }

  async function refreshSessions() {
    let data;
    try { data = await api("GET", "/api/sessions"); } catch (e) { return; }
    const list = $("sessions");
    list.textContent = "";
    for (const s of data.sessions || []) list.append(sessionItem(s));
    if (!(data.sessions || []).length) list.append(el("li", { class: "empty", text: "No sessions yet" }));
  }

  function renderMessage(message, calls) {
    const nodes = [];
    for (const block of message.content || []) {
      if (block.type === "text" && block.text) {
        const node = el("div", { class: "msg " + (message.role === "user" ? "user" : "assistant"), testid: "transcript-" + message.role });
        if (message.role === "assistant") insertMarkdown(node, block.html, block.text);
        else node.append(visible(block.text, "text"));
        nodes.push(node);
      } else if (block.type === "thinking" && block.text) {
        nodes.push(el("details", { class: "thought" }, [el("summary", { text: "reasoning" }), el("div", { class: "thought-body" }, [visible(block.text, "text")])]));
      } else if (block.type === "tool_call") {
        const p = presentationFor(block.name);
        const card = el("div", { class: "card tool-card tone-" + tone(p.tone), testid: "transcript-tool", "data-tool-name": block.name }, [
          el("div", { class: "card-head" }, [
            SmokeIcons.setIcon(el("span", { class: "tool-icon" }), p.icon || "🔧"),
            el("span", { class: "tool-label" }, [visible(p.label || block.name, "text")]),
            p.group ? el("span", { class: "tool-group" }, [visible(p.group, "text")]) : null,
            el("span", { class: "tool-name" }, [visible(block.name, "strict")]),
          ]),
          el("details", { class: "tool-input" }, [el("summary", { text: "input" }), inputView(block.input)]),
        ]);
        calls[block.id] = card;
        nodes.push(card);
      } else if (block.type === "tool_result") {
        const pre = el("pre", { class: "tool-result" }, [visible(contentText(block.content), "text")]);
        const card = calls[block.tool_call_id];
        if (card) {
          card.classList.add(block.is_error ? "is-error" : "is-done");
          card.append(pre);
        } else {
          nodes.push(pre);
        }
      }
    }
    return nodes;
  }

  async function openTranscript(sessionId, title) {
    const panel = $("transcript");
    const body = $("transcript-body");
    body.textContent = "loading…";
    setVisible($("transcript-title"), title || sessionId, "text");
    panel.classList.remove("hidden");
    state.transcriptSession = sessionId;
    try {
      const data = await api("GET", "/api/sessions/" + encodeURIComponent(sessionId));
      body.textContent = "";
      const calls = {};
      let turn = 0;
      for (const message of data.messages || []) {
        const nodes = renderMessage(message, calls);
        for (const node of nodes) body.append(node);
        if (message.role === "user") {
          body.append(turnActions(sessionId, turn));
          turn += 1;
        }
      }
    } catch (err) {
      body.textContent = "";
      body.append(el("div", { class: "card error-card", testid: "error-card" }, [visible(err.message, "text")]));
    }
  }

  // ------------------------------------------------------------ controls

  async function stopRun() {
    if (!state.running) return;
    $("stop-button").disabled = true;
    try { await api("POST", "/api/abort"); } catch (err) { showError("Could not stop the run", err.message); }
  }

  $("task-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const input = $("task-input");
    const task = input.value.trim();
    if (!task || state.running) return;
    $("send-button").disabled = true;
    try {
      const res = await api("POST", "/api/runs", { task, session_id: state.sessionId });
      // a slash command may have said something (and sent nothing to the model)
      for (const said of res.said || []) note(said).setAttribute("data-testid", "command-output");
      $("command-hints").classList.add("hidden");
      // run.started (over SSE) sets the status; it may even have arrived before this answer
      setSession(res.session_id);
      input.value = "";
      if (res.status === "said") $("send-button").disabled = state.running;
    } catch (err) {
      showError("Could not start the run", err.message);
      $("send-button").disabled = state.running;
    }
  });

  // Slash commands: while the task starts with "/", the commands that fit are listed above it.
  let commandList = null;
  async function loadCommands() {
    try { commandList = (await api("GET", "/api/commands")).commands || []; } catch (err) { commandList = []; }
  }
  function showCommandHints() {
    const box = $("command-hints");
    const value = $("task-input").value;
    if (!value.startsWith("/") || value.startsWith("//") || /\s/.test(value)) { box.classList.add("hidden"); return; }
    if (commandList === null) { loadCommands().then(showCommandHints); return; }
    const typed = value.slice(1);
    box.textContent = "";
    for (const c of commandList.filter((c) => c.name.startsWith(typed)).slice(0, 12)) {
      box.append(el("div", { class: "command-hint", testid: "command-hint" }, [el("code", { text: c.usage }), " ", visible(c.description || "", "text")]));
    }
    box.classList.toggle("hidden", !box.children.length);
  }
  $("task-input").addEventListener("input", showCommandHints);

  // Enter sends, Shift+Enter starts a new line (an IME composition is left alone).
  $("task-input").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.altKey && !ev.isComposing) {
      ev.preventDefault();
      $("task-form").requestSubmit();
    }
  });

  // Esc stops the run (inputs that use Esc themselves stop it from getting here).
  document.addEventListener("keydown", (ev) => {
    if (ev.key !== "Escape" || ev.defaultPrevented) return;
    const transcript = $("transcript");
    if (!transcript.classList.contains("hidden")) {
      transcript.classList.add("hidden");
      return;
    }
    if (state.running) {
      ev.preventDefault();
      stopRun();
    }
  });

  $("stop-button").addEventListener("click", stopRun);

  $("new-session").addEventListener("click", async () => {
    try {
      const res = await api("POST", "/api/sessions");
      setSession(res.session_id);
      note("New session " + res.session_id);
    } catch (err) {
      showError("Could not start a new session", err.message);
    }
  });

  $("close-transcript").addEventListener("click", () => { $("transcript").classList.add("hidden"); });
  $("continue-session").addEventListener("click", () => {
    if (state.transcriptSession) {
      setSession(state.transcriptSession);
      note("Continuing session " + state.transcriptSession + ": the next task is added to it");
    }
    $("transcript").classList.add("hidden");
    $("task-input").focus();
  });

  // ------------------------------------------------------------ start

  async function start() {
    setStatus("idle");
    let snapshot;
    try {
      snapshot = await api("GET", "/api/state");
    } catch (err) {
      showError("Could not load the server state", err.message);
      return;
    }
    // Presentations come first so the first tool card already has its label and icon.
    state.presentations = Object.assign({}, snapshot.presentations || {});
    setSession(snapshot.session_id);
    setStatus(snapshot.status === "running" ? "running" : snapshot.status || "idle");
    state.budget = snapshot.budget || null;
    setUsage(snapshot.usage);
    setMode(snapshot.permission_mode);
    $("plan-toggle").addEventListener("click", async () => {
      try {
        const res = await api("POST", "/api/mode", { mode: state.mode === "plan" ? "off" : "plan" });
        setMode(res.mode);
      } catch (err) {
        showError("Could not switch plan mode", err.message);
      }
    });
    if (snapshot.demo_label) {
      const badge = $("demo-badge");
      badge.textContent = "Demo · " + snapshot.demo_label;
      badge.title = snapshot.demo_label;
      badge.classList.remove("hidden");
    }
    for (const node of document.querySelectorAll("[data-icon-emoji]")) SmokeIcons.setIcon(node, node.getAttribute("data-icon-emoji"));
    document.body.setAttribute("data-ready", "true");
    connect(0);
    refreshSessions();
  }

  // for tests and the curious: the page's text rules, callable from the console
  window.smokeUI = Object.freeze({ visible: (text, mode) => { const d = el("div"); d.append(visible(text, mode)); return d.innerHTML; } });

  start();
})();
