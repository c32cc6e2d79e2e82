// tokenforge token visualizer. The tokenized text is untrusted: every piece of it reaches the page
// through textContent, attributes set as properties, or CSS attr(); never parsed as markup.
"use strict";

const PALETTE = 10;
const DEBOUNCE_MS = 120;
const WS_GLYPHS = { " ": "\u00b7", "\t": "\u2192", "\n": "\u21b5\n", "\r": "\u240d" };
const MAX_URL_TEXT = 2000; // characters of text kept in the URL (longer texts are not put there)
// Characters that take no room on screen: always shown by a mark (the character itself stays in the
// text, so copying and textContent are exact; the mark is CSS content from data-mark).
const INVISIBLE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/;
const INVISIBLE_NAMES = {
  "\u000b": "VT", "\u000c": "FF", "\u00ad": "SHY", "\u061c": "ALM", "\u180e": "MVS", "\u200b": "ZWSP",
  "\u200c": "ZWNJ", "\u200d": "ZWJ", "\u200e": "LRM", "\u200f": "RLM", "\u202a": "LRE", "\u202b": "RLE",
  "\u202c": "PDF", "\u202d": "LRO", "\u202e": "RLO", "\u2060": "WJ", "\u2066": "LRI", "\u2067": "RLI",
  "\u2068": "FSI", "\u2069": "PDI", "\ufeff": "BOM",
};

const textBox = document.getElementById("text");
const allowSpecial = document.getElementById("allow-special");
const showWs = document.getElementById("show-ws");
const compare = document.getElementById("compare");
const chatMode = document.getElementById("chat-mode");
const chatBox = document.getElementById("chat");
const messageList = document.getElementById("messages");
const ROLES = ["system", "user", "assistant"];
const info = document.getElementById("info");

function makePane(id) {
  const root = document.getElementById(id);
  return {
    root,
    select: root.querySelector(".tokenizer"),
    count: root.querySelector(".count"),
    stats: root.querySelector(".stats"),
    error: root.querySelector(".error"),
    tokens: root.querySelector(".tokens"),
    note: root.querySelector(".note"),
    ids: root.querySelector(".ids"),
    bar: root.querySelector(".bar"),
    copy: root.querySelector(".copy"),
    prev: root.querySelector(".prev"),
    next: root.querySelector(".next"),
    offset: 0,
    seq: 0,
    last: null,
  };
}
const panes = [makePane("pane-a"), makePane("pane-b")];

function spacedHex(hex) {
  return hex.replace(/(..)(?!$)/g, "$1 ");
}

function invisibleName(c) {
  return INVISIBLE_NAMES[c] || "U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
}

function appendText(parent, text) {
  const pattern = new RegExp(`${INVISIBLE.source}|[ \\t\\n\\r]+|[^ \\t\\n\\r${INVISIBLE.source.slice(1, -1)}]+`, "g");
  for (const run of text.match(pattern) || []) {
    if (INVISIBLE.test(run)) {
      const mark = document.createElement("span");
      mark.className = "inv";
      mark.dataset.mark = invisibleName(run);
      mark.textContent = run;
      parent.appendChild(mark);
    } else if (showWs.checked && /^[ \t\n\r]/.test(run)) {
      const ws = document.createElement("span");
      ws.className = "ws";
      ws.textContent = Array.from(run, (c) => WS_GLYPHS[c]).join("");
      parent.appendChild(ws);
    } else {
      parent.appendChild(document.createTextNode(run));
    }
  }
}

function describe(t, index) {
  const hex = spacedHex(t.bytes);
  const n = t.bytes.length / 2;
  let line = `token ${index}  id ${t.id}  ${n} byte${n === 1 ? "" : "s"}: ${hex}`;
  if (t.special) line += "  (special token)";
  else if (t.partial) line += "  (part of a UTF-8 character)";
  return line + `\ntext: ${JSON.stringify(t.text)}`;
}

function render(pane, answer) {
  pane.last = answer;
  pane.error.hidden = true;
  info.textContent = "Hover over a token (or tab to it) to see its id and bytes.";
  pane.count.textContent = `${answer.count.toLocaleString("en")} token${answer.count === 1 ? "" : "s"}`;
  pane.count.dataset.count = String(answer.count);
  const ratio = answer.count ? (answer.n_bytes / answer.count).toFixed(2) : "–";
  pane.stats.textContent = (answer.messages ? `${answer.messages} message${answer.messages === 1 ? "" : "s"} · ` : "") +
    `${answer.n_chars.toLocaleString("en")} characters · ${answer.n_bytes.toLocaleString("en")} bytes · ` +
    `${ratio} bytes/token · vocabulary ${answer.n_vocab.toLocaleString("en")}`;

  const spans = document.createDocumentFragment();
  const ids = document.createDocumentFragment();
  answer.tokens.forEach((t, i) => {
    const span = document.createElement("span");
    span.className = `tok c${i % PALETTE}` + (t.partial ? " partial" : "") + (t.special ? " special" : "");
    span.dataset.index = String(i);
    span.dataset.id = String(t.id);
    span.dataset.position = String(answer.offset + i);
    span.dataset.bytes = t.bytes;
    if (t.text === "") span.dataset.tail = spacedHex(t.bytes); // shown by CSS ::after
    appendText(span, t.text);
    span.title = describe(t, i);
    span.tabIndex = 0; // keyboard: tab through the tokens
    spans.appendChild(span);

    const id = document.createElement("span");
    id.className = "id";
    id.dataset.index = String(i);
    id.textContent = String(t.id);
    if (i) ids.appendChild(document.createTextNode(", "));
    ids.appendChild(id);
  });
  pane.tokens.replaceChildren(spans);
  pane.ids.replaceChildren(ids);
  const notes = [];
  const first = answer.offset || 0;
  const paged = answer.truncated || first > 0;
  if (paged) {
    notes.push(`Showing tokens ${(first + 1).toLocaleString("en")}–${(first + answer.tokens.length).toLocaleString("en")} ` +
               `of ${answer.count.toLocaleString("en")} (the count is of all of them).`);
  }
  pane.prev.hidden = !(first > 0);
  pane.next.hidden = !(first + answer.tokens.length < answer.count);
  if (answer.pieces === "model") notes.push("Tokens are shown as the model's own strings (this tokenizer is not byte-level).");
  pane.note.hidden = notes.length === 0;
  pane.note.textContent = notes.join(" ");
  pane.root.dataset.state = "ready";
  drawBars();
}

// The compare view: a bar per pane, as long as its share of the largest count.
function drawBars() {
  const shown = panes.filter((p) => !p.root.hidden && p.last && p.root.dataset.state === "ready");
  const most = Math.max(1, ...shown.map((p) => p.last.count));
  for (const p of panes) {
    const visible = compare.checked && shown.includes(p);
    p.bar.hidden = !visible;
    if (visible) p.bar.firstElementChild.style.width = `${(100 * p.last.count) / most}%`;
  }
}

function showError(pane, message) {
  pane.last = null;
  pane.error.textContent = message;
  pane.error.hidden = false;
  pane.count.textContent = "error";
  pane.count.dataset.count = "";
  for (const stale of [pane.tokens, pane.ids]) stale.replaceChildren();
  pane.stats.textContent = "";
  pane.note.hidden = true;
  pane.prev.hidden = pane.next.hidden = true;
  pane.root.dataset.state = "error";
  drawBars();
}

async function update(pane) {
  if (pane.root.hidden || !pane.select.value) return;
  const seq = ++pane.seq;
  pane.root.dataset.state = "loading";
  let ok, answer;
  try {
    const response = await fetch("/api/tokenize", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(chatMode.checked
        ? { messages: readMessages(), tokenizer: pane.select.value, offset: pane.offset }
        : { text: textBox.value, tokenizer: pane.select.value, allow_special: allowSpecial.checked, offset: pane.offset }),
    });
    ok = response.ok;
    answer = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  } catch (e) {
    ok = false;
    answer = { error: `cannot reach the server: ${e}` };
  }
  if (seq !== pane.seq) return; // a newer request was sent meanwhile
  if (ok) render(pane, answer);
  else showError(pane, answer.error || "unknown error");
}

function updateAll() {
  panes.forEach(update);
  saveState();
}

// State in the URL (#t=...&t2=...&cmp=1&ws=1&sp=0&text=...): reloads and shared links show the same.
let models = {};

function saveState() {
  const params = new URLSearchParams();
  params.set("t", panes[0].select.value);
  if (compare.checked) {
    params.set("cmp", "1");
    params.set("t2", panes[1].select.value);
  }
  if (showWs.checked) params.set("ws", "1");
  if (!allowSpecial.checked) params.set("sp", "0");
  if (textBox.value.length <= MAX_URL_TEXT) params.set("text", textBox.value);
  if (chatMode.checked) {
    params.set("chat", "1");
    const messages = JSON.stringify(readMessages());
    if (messages.length <= MAX_URL_TEXT) params.set("msgs", messages);
  }
  history.replaceState(null, "", "#" + params.toString());
}

function loadState(names) {
  const params = new URLSearchParams(location.hash.slice(1));
  const pick = (name) => (names.includes(name) ? name : names.includes(models[name]) ? models[name] : null);
  const a = pick(params.get("t"));
  const b = pick(params.get("t2"));
  if (a) panes[0].select.value = a;
  if (b) panes[1].select.value = b;
  compare.checked = params.get("cmp") === "1";
  showWs.checked = params.get("ws") === "1";
  allowSpecial.checked = params.get("sp") !== "0";
  if (params.has("text")) textBox.value = params.get("text");
  chatMode.checked = params.get("chat") === "1";
  if (params.has("msgs")) {
    try {
      setMessages(JSON.parse(params.get("msgs")));
    } catch (e) {
      // a mangled link: keep the messages shown
    }
  }
  showChat();
}

// Chat input: one row per message (role, content); the server renders them with the chat template.
function addMessage(role, content) {
  const row = document.createElement("div");
  row.className = "message";
  const select = document.createElement("select");
  select.setAttribute("aria-label", "role");
  for (const r of ROLES) {
    const option = document.createElement("option");
    option.value = option.textContent = r;
    select.appendChild(option);
  }
  select.value = ROLES.includes(role) ? role : "user";
  const area = document.createElement("textarea");
  area.spellcheck = false;
  area.placeholder = "content";
  area.value = content;
  const remove = document.createElement("button");
  remove.type = "button";
  remove.className = "remove";
  remove.textContent = "\u00d7";
  remove.setAttribute("aria-label", "remove message");
  remove.addEventListener("click", () => {
    row.remove();
    scheduleUpdate();
  });
  select.addEventListener("change", scheduleUpdate);
  area.addEventListener("input", scheduleUpdate);
  row.append(select, area, remove);
  messageList.appendChild(row);
  return row;
}

function readMessages() {
  return Array.from(messageList.querySelectorAll(".message"), (row) => ({
    role: row.querySelector("select").value,
    content: row.querySelector("textarea").value,
  }));
}

function setMessages(messages) {
  if (!Array.isArray(messages)) return;
  messageList.replaceChildren();
  for (const m of messages) {
    if (m && typeof m.role === "string" && typeof m.content === "string") addMessage(m.role, m.content);
  }
}

function showChat() {
  chatBox.hidden = !chatMode.checked;
  textBox.hidden = chatMode.checked;
  allowSpecial.disabled = chatMode.checked; // the chat format decides which tokens are special
}

addMessage("system", "You are a helpful assistant.");
addMessage("user", "");
document.getElementById("add-message").addEventListener("click", () => {
  const last = readMessages().at(-1);
  const row = addMessage(last && last.role === "user" ? "assistant" : "user", "");
  row.querySelector("textarea").focus();
  scheduleUpdate();
});
chatMode.addEventListener("change", () => {
  showChat();
  scheduleUpdate();
});

let timer = null;
function scheduleUpdate() {
  panes.forEach((p) => (p.offset = 0)); // a new text starts at its first token
  clearTimeout(timer);
  timer = setTimeout(updateAll, DEBOUNCE_MS);
}

function hover(pane, index, on) {
  for (const el of pane.root.querySelectorAll(`[data-index="${index}"]`)) el.classList.toggle("hover", on);
  if (on && pane.last && pane.last.tokens[index]) {
    info.textContent = `${pane.select.value}: ` + describe(pane.last.tokens[index], index);
  }
}

for (const pane of panes) {
  for (const area of [pane.tokens, pane.ids]) {
    area.addEventListener("mouseover", (e) => {
      const el = e.target.closest("[data-index]");
      if (el) hover(pane, Number(el.dataset.index), true);
    });
    area.addEventListener("mouseout", (e) => {
      const el = e.target.closest("[data-index]");
      if (el) hover(pane, Number(el.dataset.index), false);
    });
  }
  pane.select.addEventListener("change", () => {
    pane.offset = 0;
    update(pane);
    saveState();
  });
  pane.tokens.addEventListener("focusin", (e) => {
    const el = e.target.closest("[data-index]");
    if (el) hover(pane, Number(el.dataset.index), true);
  });
  pane.tokens.addEventListener("focusout", (e) => {
    const el = e.target.closest("[data-index]");
    if (el) hover(pane, Number(el.dataset.index), false);
  });
  pane.prev.addEventListener("click", () => {
    pane.offset = pane.last ? Math.max(0, pane.last.offset - pane.last.page_size) : 0;
    update(pane);
  });
  pane.next.addEventListener("click", () => {
    if (pane.last) pane.offset = pane.last.offset + pane.last.tokens.length;
    update(pane);
  });
  pane.copy.addEventListener("click", async () => {
    const ids = pane.last ? pane.last.tokens.map((t) => t.id).join(", ") : "";
    try {
      await navigator.clipboard.writeText(ids);
      pane.copy.textContent = "copied";
    } catch (e) {
      pane.copy.textContent = "cannot copy";
    }
    setTimeout(() => (pane.copy.textContent = "copy ids"), 1200);
  });
}

textBox.addEventListener("input", scheduleUpdate);
document.getElementById("model").addEventListener("change", (e) => {
  const encoding = models[e.target.value];
  if (encoding) {
    panes[0].select.value = encoding;
    update(panes[0]);
    saveState();
  }
});
allowSpecial.addEventListener("change", updateAll);
showWs.addEventListener("change", () => {
  panes.forEach((p) => p.last && render(p, p.last));
  saveState();
});
compare.addEventListener("change", () => {
  panes[1].root.hidden = !compare.checked;
  update(panes[1]);
  drawBars();
  saveState();
});
window.addEventListener("hashchange", () => {
  loadState(Array.from(panes[0].select.options, (o) => o.value));
  panes[1].root.hidden = !compare.checked;
  updateAll();
});

async function init() {
  let list = [];
  try {
    const response = await fetch("/api/tokenizers");
    const answer = await response.json();
    list = answer.tokenizers;
    models = answer.models || {};
  } catch (e) {
    showError(panes[0], `cannot list tokenizers: ${e}`);
    return;
  }
  const names = list.map((t) => t.name);
  const defaults = [
    names.includes("cl100k_base") ? "cl100k_base" : names[0],
    names.includes("o200k_base") ? "o200k_base" : names[Math.min(1, names.length - 1)],
  ];
  panes.forEach((pane, k) => {
    for (const t of list) {
      const option = document.createElement("option");
      option.value = t.name;
      option.textContent = t.kind === "pretrained" ? t.name : `${t.name} (${t.kind})`;
      pane.select.appendChild(option);
    }
    pane.select.value = defaults[k] || "";
  });
  const modelList = document.getElementById("models");
  for (const [model, encoding] of Object.entries(models)) {
    const option = document.createElement("option");
    option.value = model;
    option.textContent = `${model} → ${encoding}`;
    modelList.appendChild(option);
  }
  loadState(names);
  panes[1].root.hidden = !compare.checked;
  document.body.dataset.ready = "true";
  updateAll();
}

init();
