/* Smoke UI: a plain-JavaScript page (no build step).
 * Events arrive over SSE (/api/events); answers go back with POST.
 * Unknown event types are ignored: new types are added over time. */
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
    cards: {}, // tool_call_id -> card element
    lastSession: null,
    lastAssistantText: null,
    transcriptSession: null,
  };

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
      throw new Error(message);
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
    const merged = Object.assign({ label: name, icon: "🔧", tone: "info", group: null }, base, own || {});
    if (!merged.group && merged.family) merged.group = merged.family;
    return merged;
  }

  function shortJson(value, limit) {
    let text;
    try { text = JSON.stringify(value, null, 2); } catch (e) { text = String(value); }
    if (text && limit && text.length > limit) text = text.slice(0, limit) + "…";
    return text || "";
  }

  function contentText(content) {
    if (!Array.isArray(content)) return content ? String(content) : "";
    return content
      .map((b) => (b && b.type === "text" ? b.text : b && b.type === "image" ? "[image " + (b.mime_type || "") + "]" : ""))
      .join("\n");
  }

  function formatTokens(usage) {
    if (!usage) return "0 tokens";
    const input = usage.input_tokens || 0;
    const output = usage.output_tokens || 0;
    return (input + output).toLocaleString() + " tokens (in " + input.toLocaleString() + " · out " + output.toLocaleString() + ")";
  }

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
  }

  // ------------------------------------------------------------ cards

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
      el("span", { class: "tool-icon", testid: "tool-icon", text: p.icon || "🔧" }),
      el("span", { class: "tool-label", testid: "tool-label", text: p.label || data.tool_name }),
      p.group ? el("span", { class: "tool-group", testid: "tool-group", text: p.group }) : null,
      el("span", { class: "tool-name", text: data.tool_name }),
      el("span", { class: "spacer" }),
      el("span", { class: "tool-status", testid: "tool-status", text: "running" }),
    ]);
    card.append(head);
    if (data.input && Object.keys(data.input).length) {
      card.append(el("details", { class: "tool-input" }, [
        el("summary", { text: "input" }),
        el("pre", { testid: "tool-input", text: shortJson(data.input, 20000) }),
      ]));
    }
    card.append(el("pre", { class: "tool-output hidden", testid: "tool-output" }));
    card.append(el("div", { class: "tool-progress hidden", testid: "tool-progress" }));
    card.append(el("pre", { class: "tool-result hidden", testid: "tool-result" }));
    if (id) state.cards[id] = card;
    closeText();
    add(card);
    return card;
  }

  function onToolCompleted(data) {
    const card = toolCard(data);
    const p = presentationFor(data.tool_name, data.presentation);
    card.querySelector('[data-testid="tool-icon"]').textContent = p.icon || "🔧";
    card.querySelector('[data-testid="tool-label"]').textContent = p.label || data.tool_name;
    const status = card.querySelector('[data-testid="tool-status"]');
    const ms = typeof data.duration_ms === "number" ? " · " + Math.round(data.duration_ms) + " ms" : "";
    status.textContent = (data.is_error ? "error" : "done") + ms;
    card.classList.add(data.is_error ? "is-error" : "is-done");
    card.setAttribute("data-state", data.is_error ? "error" : "done");
    const result = card.querySelector('[data-testid="tool-result"]');
    let text = contentText(data.content);
    if (data.is_error && data.error && data.error.message && !text.includes(data.error.message)) {
      text = data.error.message + (text ? "\n" + text : "");
    }
    result.textContent = text.length > 20000 ? text.slice(0, 20000) + "\n…" : text;
    result.classList.toggle("hidden", !text);
    card.querySelector('[data-testid="tool-progress"]').classList.add("hidden");
    // the result holds what the model saw; the live output was the preview of it
    if (text) card.querySelector('[data-testid="tool-output"]').classList.add("hidden");
  }

  function onToolOutput(data) {
    const card = toolCard(data);
    const out = card.querySelector('[data-testid="tool-output"]');
    out.classList.remove("hidden");
    out.textContent += data.text || "";
    if (out.textContent.length > 50000) out.textContent = "…" + out.textContent.slice(-40000);
    out.scrollTop = out.scrollHeight;
    scroll();
  }

  function onToolProgress(data) {
    const card = toolCard(data);
    const node = card.querySelector('[data-testid="tool-progress"]');
    let text = data.message || "";
    if (typeof data.progress === "number") {
      text += " (" + data.progress + (typeof data.total === "number" ? "/" + data.total : "") + ")";
    }
    node.textContent = text;
    node.classList.toggle("hidden", !text);
  }

  function approvalCard(data) {
    const id = data.tool_call_id;
    const p = presentationFor(data.tool_name, data.presentation);
    const buttons = el("div", { class: "buttons" });
    const card = el("div", {
      class: "card approval-card",
      testid: "approval-card",
      "data-tool-call-id": id,
      "data-tool-name": data.tool_name,
    }, [
      el("div", { class: "card-head" }, [
        el("span", { class: "tool-icon", text: data.kind === "mcp_server" ? "🔌" : p.icon || "🔧" }),
        el("strong", {
          text: data.kind === "mcp_server"
            ? "Start MCP server " + data.tool_name + "?"
            : "Allow " + (p.label || data.tool_name) + "?",
        }),
      ]),
      data.reason ? el("div", { class: "reason", testid: "approval-reason", text: data.reason }) : null,
      data.input && Object.keys(data.input).length ? el("pre", { text: shortJson(data.input, 4000) }) : null,
      buttons,
    ]);
    const answer = (decision) => async () => {
      for (const b of buttons.querySelectorAll("button")) b.disabled = true;
      try {
        await api("POST", "/api/permissions/" + encodeURIComponent(id), { decision });
        resolveApproval(id, decision);
      } catch (err) {
        for (const b of buttons.querySelectorAll("button")) b.disabled = false;
        showError("Could not send the answer", err.message);
      }
    };
    buttons.append(
      el("button", { type: "button", class: "allow", testid: "approve-button", text: "Allow", onclick: answer("allow") }),
      el("button", { type: "button", class: "allow-run", testid: "approve-run-button", text: "Allow for this run", onclick: answer("allow_run") }),
      el("button", { type: "button", class: "deny", testid: "deny-button", text: "Deny", onclick: answer("deny") }),
    );
    const host = state.cards[id];
    if (host) {
      host.insertBefore(card, host.querySelector('[data-testid="tool-output"]'));
      scroll();
    } else {
      closeText();
      add(card);
    }
  }

  function resolveApproval(id, decision) {
    for (const card of document.querySelectorAll('[data-testid="approval-card"]')) {
      if (card.getAttribute("data-tool-call-id") !== id || card.classList.contains("resolved")) continue;
      card.classList.add("resolved");
      card.setAttribute("data-decision", decision);
      for (const b of card.querySelectorAll("button")) b.remove();
      const words = { allow: "Allowed", allow_run: "Allowed for this run", deny: "Denied" };
      card.append(el("div", { class: "decision decision-" + cssToken(decision), testid: "approval-decision", text: words[decision] || decision }));
    }
  }

  function questionCard(data) {
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
      options.append(el("button", { type: "button", testid: "question-option", text: option, onclick: () => send(option) }));
    }
    form.append(input, submit);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (input.value.trim()) send(input.value);
    });
    const card = el("div", { class: "card question-card", testid: "question-card", "data-tool-call-id": id }, [
      el("div", { class: "card-head" }, [el("span", { class: "tool-icon", text: "❓" }), el("strong", { testid: "question-text", text: data.question })]),
      (data.options || []).length ? options : null,
      form,
    ]);
    const host = state.cards[id];
    if (host) {
      host.insertBefore(card, host.querySelector('[data-testid="tool-output"]'));
      scroll();
    } else {
      closeText();
      add(card);
    }
  }

  function resolveQuestion(id, text) {
    for (const card of document.querySelectorAll('[data-testid="question-card"]')) {
      if (card.getAttribute("data-tool-call-id") !== id || card.classList.contains("resolved")) continue;
      card.classList.add("resolved");
      for (const node of card.querySelectorAll(".options, form")) node.remove();
      card.append(el("div", { class: "decision", testid: "question-answer", text: "Answer: " + text }));
    }
  }

  function showError(title, message, extra) {
    closeText();
    return add(el("div", { class: "card error-card", testid: "error-card" }, [
      el("div", { class: "card-head" }, [el("span", { class: "tool-icon", text: "⛔" }), el("strong", { text: title })]),
      el("div", { class: "error-message", testid: "error-message", text: message || "" }),
      extra ? el("div", { class: "hint", text: extra }) : null,
    ]));
  }

  function note(text, kind) {
    closeText();
    return add(el("div", { class: "note note-" + (kind || "info"), testid: "note", text }));
  }

  function renderTodos(todos) {
    const box = $("todos");
    const list = box.querySelector(".todo-list");
    list.textContent = "";
    for (const todo of todos || []) {
      const status = todo.status || "pending";
      const mark = status === "completed" ? "☑" : status === "in_progress" ? "◐" : "☐";
      list.append(el("li", { class: "todo todo-" + cssToken(status), testid: "todo" }, [mark + " ", todo.content || todo.text || ""]));
    }
    box.classList.toggle("hidden", !(todos || []).length);
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
    "run.started": (ev) => {
      if (ev.session_id && ev.session_id !== state.lastSession) {
        add(el("div", { class: "session-sep", testid: "session-separator", text: "session " + ev.session_id }));
      }
      state.lastSession = ev.session_id;
      setSession(ev.session_id);
      state.lastAssistantText = null;
      closeText();
      add(el("div", { class: "msg user", testid: "user-message", "data-run-id": ev.run_id, text: ev.data.task }));
      const model = [ev.data.provider, ev.data.model].filter(Boolean).join(" · ");
      if (model) $("run-phase").setAttribute("title", model);
      $("usage").textContent = formatTokens(null);
      $("run-phase").textContent = "";
      setStatus("running");
    },
    "text.thought": (ev) => {
      if (!state.thoughtEl) {
        const body = el("div", { class: "thought-body" });
        state.textEl = null;
        add(el("details", { class: "thought", testid: "reasoning", open: true }, [el("summary", { text: "reasoning" }), body]));
        state.thoughtEl = body;
      }
      state.thoughtEl.textContent += ev.data.text || "";
      scroll();
    },
    "text.delta": (ev) => {
      if (!state.textEl) {
        state.textEl = add(el("div", { class: "msg assistant streaming", testid: "assistant-message" }));
      }
      state.thoughtEl = null;
      state.textEl.textContent += ev.data.text || "";
      scroll();
    },
    "text.end": (ev) => {
      if (state.textEl) {
        state.textEl.textContent = ev.data.text || state.textEl.textContent;
        state.textEl.classList.remove("streaming");
      } else if (ev.data.text) {
        add(el("div", { class: "msg assistant", testid: "assistant-message", text: ev.data.text }));
      }
      state.lastAssistantText = ev.data.text || null;
      closeText();
    },
    "text.discarded": () => {
      // The provider call is retried: drop what was streamed so far.
      if (state.textEl) state.textEl.remove();
      if (state.thoughtEl && state.thoughtEl.parentNode) state.thoughtEl.parentNode.remove();
      closeText();
    },
    "tool.started": (ev) => { toolCard(ev.data); },
    "tool.output": (ev) => { onToolOutput(ev.data); },
    "tool.progress": (ev) => { onToolProgress(ev.data); },
    "tool.completed": (ev) => { onToolCompleted(ev.data); },
    "permission.required": (ev) => { approvalCard(ev.data); },
    "permission.resolved": (ev) => { resolveApproval(ev.data.tool_call_id, ev.data.decision); },
    "ask_user.required": (ev) => { questionCard(ev.data); },
    "ask_user.response": (ev) => { resolveQuestion(ev.data.tool_call_id, ev.data.text); },
    "usage.updated": (ev) => { $("usage").textContent = formatTokens(ev.data.usage); },
    "phase.changed": (ev) => { $("run-phase").textContent = ev.data.phase || ""; },
    "todo.updated": (ev) => { renderTodos(ev.data.todos); },
    "run.warning": (ev) => {
      const e = ev.data.error || {};
      const retry = typeof ev.data.retry_in_ms === "number" ? " — retrying in " + (ev.data.retry_in_ms / 1000).toFixed(1) + " s" : "";
      note("⚠️ " + (e.message || "warning") + retry, "warning").setAttribute("data-testid", "warning-card");
    },
    "compaction.completed": (ev) => {
      note("🗜️ Older turns summarised (" + ev.data.messages_before + " → " + ev.data.messages_after + " messages)");
    },
    "run.completed": (ev) => {
      closeText();
      const text = ev.data.text;
      if (text && text !== state.lastAssistantText) {
        add(el("div", { class: "msg assistant final", testid: "final-message", text }));
      } else {
        const bubbles = log.querySelectorAll('[data-testid="assistant-message"]');
        const last = bubbles[bubbles.length - 1];
        if (last) {
          last.classList.add("final");
          last.setAttribute("data-final", "true");
          last.setAttribute("data-testid", "final-message");
        }
      }
      $("usage").textContent = formatTokens(ev.data.usage);
      setStatus("completed");
      refreshSessions();
    },
    "run.failed": (ev) => {
      const e = ev.data.error || {};
      const card = showError("Run failed" + (e.code ? " (" + e.code + ")" : ""), e.message, e.hint);
      card.setAttribute("data-code", e.code || "");
      if (ev.data.usage) $("usage").textContent = formatTokens(ev.data.usage);
      setStatus("failed");
      refreshSessions();
    },
    "run.interrupted": (ev) => {
      note("⏹ Run stopped (" + (ev.data.reason || "aborted") + ")", "warning").setAttribute("data-testid", "interrupted-note");
      for (const card of document.querySelectorAll('[data-testid="approval-card"]:not(.resolved), [data-testid="question-card"]:not(.resolved)')) {
        card.classList.add("resolved");
        for (const b of card.querySelectorAll("button, input")) b.disabled = true;
      }
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

  // ------------------------------------------------------------ sessions

  async function refreshSessions() {
    let data;
    try { data = await api("GET", "/api/sessions"); } catch (e) { return; }
    const list = $("sessions");
    list.textContent = "";
    for (const s of data.sessions || []) {
      const when = new Date((s.updated_at || 0) * 1000).toLocaleString();
      const item = el("li", {
        class: "session" + (s.session_id === state.sessionId ? " current" : ""),
        testid: "session-item",
        "data-session-id": s.session_id,
        tabindex: "0",
        title: s.session_id,
        onclick: () => openTranscript(s.session_id, s.title),
      }, [
        el("div", { class: "session-title", text: s.title || s.session_id }),
        el("div", { class: "session-meta", text: s.message_count + (s.message_count === 1 ? " message · " : " messages · ") + when }),
      ]);
      list.append(item);
    }
    if (!(data.sessions || []).length) list.append(el("li", { class: "empty", text: "No sessions yet" }));
  }

  function renderMessage(message, calls) {
    const nodes = [];
    for (const block of message.content || []) {
      if (block.type === "text" && block.text) {
        nodes.push(el("div", { class: "msg " + (message.role === "user" ? "user" : "assistant"), testid: "transcript-" + message.role, text: block.text }));
      } else if (block.type === "thinking" && block.text) {
        nodes.push(el("details", { class: "thought" }, [el("summary", { text: "reasoning" }), el("div", { class: "thought-body", text: block.text })]));
      } else if (block.type === "tool_call") {
        const p = presentationFor(block.name);
        const card = el("div", { class: "card tool-card tone-" + tone(p.tone), testid: "transcript-tool", "data-tool-name": block.name }, [
          el("div", { class: "card-head" }, [
            el("span", { class: "tool-icon", text: p.icon || "🔧" }),
            el("span", { class: "tool-label", text: p.label || block.name }),
            p.group ? el("span", { class: "tool-group", text: p.group }) : null,
            el("span", { class: "tool-name", text: block.name }),
          ]),
          el("details", { class: "tool-input" }, [el("summary", { text: "input" }), el("pre", { text: shortJson(block.input, 20000) })]),
        ]);
        calls[block.id] = card;
        nodes.push(card);
      } else if (block.type === "tool_result") {
        const text = contentText(block.content);
        const pre = el("pre", { class: "tool-result", text: text.length > 20000 ? text.slice(0, 20000) + "\n…" : text });
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
    $("transcript-title").textContent = title || sessionId;
    panel.classList.remove("hidden");
    state.transcriptSession = sessionId;
    try {
      const data = await api("GET", "/api/sessions/" + encodeURIComponent(sessionId));
      body.textContent = "";
      const calls = {};
      for (const message of data.messages || []) {
        for (const node of renderMessage(message, calls)) body.append(node);
      }
    } catch (err) {
      body.textContent = "";
      body.append(el("div", { class: "card error-card", testid: "error-card", text: err.message }));
    }
  }

  // ------------------------------------------------------------ controls

  $("task-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const input = $("task-input");
    const task = input.value.trim();
    if (!task || state.running) return;
    $("send-button").disabled = true;
    try {
      const res = await api("POST", "/api/runs", { task, session_id: state.sessionId });
      // run.started (over SSE) sets the status; it may even have arrived before this answer
      setSession(res.session_id);
      input.value = "";
    } catch (err) {
      showError("Could not start the run", err.message);
      $("send-button").disabled = state.running;
    }
  });

  $("task-input").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      $("task-form").requestSubmit();
    }
  });

  $("stop-button").addEventListener("click", async () => {
    $("stop-button").disabled = true;
    try { await api("POST", "/api/abort"); } catch (err) { showError("Could not stop the run", err.message); }
  });

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
    $("usage").textContent = formatTokens(snapshot.usage);
    if (snapshot.demo_label) {
      const badge = $("demo-badge");
      badge.textContent = "Demo · " + snapshot.demo_label;
      badge.title = snapshot.demo_label;
      badge.classList.remove("hidden");
    }
    document.body.setAttribute("data-ready", "true");
    connect(0);
    refreshSessions();
  }

  start();
})();
