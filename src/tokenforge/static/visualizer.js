// tokenforge token visualizer. The tokenized text is untrusted: every piece of it reaches the page
// through textContent, attributes set as properties, or CSS attr(); never parsed as markup.
"use strict";

const PALETTE = 10;
const DEBOUNCE_MS = 120;
const WS_GLYPHS = { " ": "\u00b7", "\t": "\u2192", "\n": "\u21b5\n", "\r": "\u240d" };

const textBox = document.getElementById("text");
const allowSpecial = document.getElementById("allow-special");
const showWs = document.getElementById("show-ws");
const compare = document.getElementById("compare");
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
    seq: 0,
    last: null,
  };
}
const panes = [makePane("pane-a"), makePane("pane-b")];

function spacedHex(hex) {
  return hex.replace(/(..)(?!$)/g, "$1 ");
}

function appendText(parent, text) {
  if (!showWs.checked) {
    parent.textContent = text;
    return;
  }
  for (const run of text.match(/[ \t\n\r]+|[^ \t\n\r]+/g) || []) {
    if (/^[ \t\n\r]/.test(run)) {
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
  pane.count.textContent = `${answer.count.toLocaleString("en")} token${answer.count === 1 ? "" : "s"}`;
  pane.count.dataset.count = String(answer.count);
  const ratio = answer.count ? (answer.n_bytes / answer.count).toFixed(2) : "–";
  pane.stats.textContent =
    `${answer.n_chars.toLocaleString("en")} characters · ${answer.n_bytes.toLocaleString("en")} bytes · ` +
    `${ratio} bytes/token · vocabulary ${answer.n_vocab.toLocaleString("en")}`;

  const spans = document.createDocumentFragment();
  const ids = document.createDocumentFragment();
  answer.tokens.forEach((t, i) => {
    const span = document.createElement("span");
    span.className = `tok c${i % PALETTE}` + (t.partial ? " partial" : "") + (t.special ? " special" : "");
    span.dataset.index = String(i);
    span.dataset.id = String(t.id);
    span.dataset.bytes = t.bytes;
    if (t.text === "") span.dataset.tail = spacedHex(t.bytes); // shown by CSS ::after
    appendText(span, t.text);
    span.title = describe(t, i);
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
  pane.note.hidden = !answer.truncated;
  pane.note.textContent = answer.truncated
    ? `Showing the first ${answer.tokens.length.toLocaleString("en")} of ${answer.count.toLocaleString("en")} tokens.`
    : "";
  pane.root.dataset.state = "ready";
}

function showError(pane, message) {
  pane.error.textContent = message;
  pane.error.hidden = false;
  pane.count.textContent = "error";
  pane.count.dataset.count = "";
  pane.root.dataset.state = "error";
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
      body: JSON.stringify({ text: textBox.value, tokenizer: pane.select.value, allow_special: allowSpecial.checked }),
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
}

let timer = null;
function scheduleUpdate() {
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
  pane.select.addEventListener("change", () => update(pane));
}

textBox.addEventListener("input", scheduleUpdate);
allowSpecial.addEventListener("change", updateAll);
showWs.addEventListener("change", () => panes.forEach((p) => p.last && render(p, p.last)));
compare.addEventListener("change", () => {
  panes[1].root.hidden = !compare.checked;
  update(panes[1]);
});

async function init() {
  let list = [];
  try {
    const response = await fetch("/api/tokenizers");
    list = (await response.json()).tokenizers;
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
  compare.checked = false;
  panes[1].root.hidden = true;
  document.body.dataset.ready = "true";
  updateAll();
}

init();
