// The console: one page, a hash router, and the API's own routes through the session cookie.
// Every name, path and body is hostile: nothing here parses HTML. Elements are built with createElement
// and text goes in as text nodes; the markdown preview builds its elements the same way.
"use strict";

const API = "/agent_api/v1";
// flash: what an action that moves to another page says there (a new page otherwise starts with a clear status).
const state = { csrf: null, human: null, flash: null };

// ---- elements ------------------------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "on") for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function main() {
  return document.getElementById("main");
}

function show(...children) {
  const m = main();
  m.replaceChildren(...children);
  m.focus();
}

function say(text, bad) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = bad ? "status bad" : "status";
}

function field(label, input) {
  const id = `f-${Math.random().toString(36).slice(2)}`;
  input.id = id;
  return h("div", { class: "field" }, h("label", { for: id }, label), input);
}

function when(iso) {
  return iso ? iso.replace("T", " ").replace(/\.\d+Z$/, " UTC") : "";
}

function size(n) {
  return n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`;
}

function author(a) {
  if (!a) return "";
  const run = a.execution_public_id ? ` (run ${a.execution_public_id})` : "";
  const commit = a.commit ? ` (commit ${a.commit.slice(0, 10)})` : "";
  return `${a.name} · ${a.kind}${run}${commit}`;
}

// ---- the API -------------------------------------------------------------------------------------------

async function call(method, path, body) {
  const headers = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET" && state.csrf) headers["x-csrf-token"] = state.csrf;
  const r = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  if (r.status !== 204) {
    try {
      data = await r.json();
    } catch (e) {
      data = null;
    }
  }
  if (r.status === 401 && path !== "/console/api/session") {
    state.csrf = null;
    location.hash = "#/signin";
  }
  return { status: r.status, ok: r.ok, data };
}

const api = (method, path, body) => call(method, API + path, body);

function failed(r) {
  const e = r.data && r.data.error;
  say(e ? `${e.code}: ${e.message}` : `The service answered ${r.status}.`, true);
}

// ---- confirmation (in the page: keyboard reachable, and named) -------------------------------------------

function confirmIn(where, text, yes, onYes) {
  const box = h(
    "div",
    { class: "confirm", role: "alertdialog", "aria-label": "Confirm" },
    h("p", {}, text),
    h("button", { type: "button", class: "danger", on: { click: () => { box.remove(); onYes(); } } }, yes),
    h("button", { type: "button", on: { click: () => box.remove() } }, "Cancel"),
  );
  where.append(box);
  box.querySelector("button").focus();
}

// ---- markdown preview: text in, elements out (no HTML is ever parsed) ------------------------------------

function inline(text) {
  const out = [];
  const re = /(`[^`]+`|\*\*[^*]+\*\*|\*[^*]+\*)/g;
  let at = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > at) out.push(document.createTextNode(text.slice(at, m.index)));
    const t = m[0];
    if (t.startsWith("`")) out.push(h("code", {}, t.slice(1, -1)));
    else if (t.startsWith("**")) out.push(h("strong", {}, t.slice(2, -2)));
    else out.push(h("em", {}, t.slice(1, -1)));
    at = m.index + t.length;
  }
  if (at < text.length) out.push(document.createTextNode(text.slice(at)));
  return out;
}

function markdown(text) {
  const frag = h("div", { class: "preview" });
  const lines = text.split("\n");
  let list = null;
  let para = [];
  const flush = () => {
    if (para.length) frag.append(h("p", {}, inline(para.join(" "))));
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith("```")) {
      flush();
      list = null;
      const code = [];
      for (i++; i < lines.length && !lines[i].startsWith("```"); i++) code.push(lines[i]);
      frag.append(h("pre", {}, h("code", {}, code.join("\n"))));
      continue;
    }
    const head = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^\s*[-*]\s+(.*)$/.exec(line);
    const numbered = /^\s*\d+[.)]\s+(.*)$/.exec(line);
    if (head) {
      flush();
      list = null;
      // Headings inside a document sit below the page's own h1 and h2.
      frag.append(h(`h${Math.min(6, head[1].length + 2)}`, {}, inline(head[2])));
    } else if (item || numbered) {
      flush();
      const tag = item ? "UL" : "OL";
      if (!list || list.tagName !== tag) frag.append((list = h(tag.toLowerCase())));
      list.append(h("li", {}, inline((item || numbered)[1])));
    } else if (!line.trim()) {
      flush();
      list = null;
    } else {
      list = null;
      para.push(line);
    }
  }
  flush();
  return frag;
}

// ---- diff (line LCS; enough for a document people edit) ---------------------------------------------------

function diffLines(a, b) {
  const x = a.split("\n");
  const y = b.split("\n");
  const n = x.length;
  const m = y.length;
  if (n * m > 4000000) return [["-", a], ["+", b]];
  const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push([" ", x[i]]); i++; j++; }
    else if (L[i + 1][j] >= L[i][j + 1]) out.push(["-", x[i++]]);
    else out.push(["+", y[j++]]);
  }
  while (i < n) out.push(["-", x[i++]]);
  while (j < m) out.push(["+", y[j++]]);
  return out;
}

function diffView(label, a, b) {
  const rows = diffLines(a, b).map(([op, text]) =>
    h("div", { class: op === "+" ? "add" : op === "-" ? "del" : "same" }, `${op} ${text}`),
  );
  return h("figure", { class: "diff" }, h("figcaption", {}, label), h("div", { class: "lines" }, rows));
}

// ---- pages ---------------------------------------------------------------------------------------------

function signIn() {
  document.getElementById("nav").hidden = true;
  const token = h("input", { type: "password", autocomplete: "off", required: true, name: "token" });
  const form = h(
    "form",
    { class: "signin", "aria-label": "Sign in" },
    h("h1", {}, "Sign in"),
    h("p", {}, "Paste a Human's token. It is exchanged for a session cookie and is not kept by this page."),
    field("Human token", token),
    h("button", { type: "submit" }, "Sign in"),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const r = await call("POST", "/console/api/session", { token: token.value });
    token.value = "";
    if (!r.ok) return failed(r);
    signedIn(r.data);
    location.hash = "#/memories";
  });
  show(form);
}

function signedIn(session) {
  state.csrf = session.csrf_token;
  state.human = session.human;
  document.getElementById("nav").hidden = false;
  const who = document.getElementById("who");
  who.textContent = `Signed in as ${session.human.name}`;
  who.title = who.textContent;
}

async function signOut() {
  await call("POST", "/console/api/session/delete");
  state.csrf = null;
  state.human = null;
  say("Signed out.");
  location.hash = "#/signin";
}

function defaultText(d) {
  if (!d) return "none";
  const where = d.reach === "account" ? "whole account" : `deployment ${d.deployment}`;
  return `${where}, ${d.mode}${d.read_first ? ", read first" : ""}`;
}

async function memoriesPage() {
  const list = [];
  let cursor = null;
  do {
    const r = await api("GET", `/memories?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    if (!r.ok) return failed(r);
    list.push(...r.data.memories);
    cursor = r.data.next_cursor;
  } while (cursor);
  const name = h("input", { type: "text", required: true, name: "name" });
  const description = h("input", { type: "text", name: "description" });
  const create = h(
    "form",
    { class: "inline", "aria-label": "Create a Memory" },
    field("Name", name),
    field("Description", description),
    h("button", { type: "submit" }, "Create Memory"),
  );
  create.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const r = await api("POST", "/memories", { memory: { name: name.value, description: description.value } });
    if (!r.ok) return failed(r);
    state.flash = `Created ${r.data.memory.name}.`;
    location.hash = `#/memory/${r.data.memory.memory_id}`;
  });
  const rows = list.map((m) => {
    const actions = h("td", { class: "actions" });
    const archive = h("button", { type: "button", on: { click: () => archiveMemory(m, actions) } }, "Archive");
    const del = h("button", { type: "button", class: "danger", on: { click: () => deleteMemory(m, actions) } }, "Delete");
    actions.append(archive, del);
    return h(
      "tr",
      { "data-memory": m.memory_id },
      h("th", { scope: "row" }, h("a", { href: `#/memory/${m.memory_id}`, class: "name" }, m.name), m.archived ? " (archived)" : ""),
      h("td", { class: "desc" }, m.description),
      h("td", {}, defaultText(m.default)),
      h("td", { class: "attached" }, String(m.attachment_count ?? 0)),
      h("td", {}, m.written_by ? `${author(m.written_by)}, ${when(m.written_at)}` : ""),
      h("td", {}, `${m.file_count} · ${size(m.bytesize)}`),
      actions,
    );
  });
  const table = h(
    "table",
    { class: "memories" },
    h("caption", {}, `${list.length} Memories you may see`),
    h("thead", {}, h("tr", {}, ["Memory", "Description", "Tenant default", "Attachments", "Latest change", "Files", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows),
  );
  show(h("h1", {}, "Memories"), create, h("div", { class: "scroll" }, table));
  // Then the attachments by name (agent, mode, read first): the map names them all in one request, asked
  // once the list is drawn so the list never waits for it.
  api("GET", "/memory_map").then((g) => {
    if (!g.ok) return;
    const names = new Map(g.data.nodes.map((n) => [n.id, n.name]));
    const attached = new Map();
    for (const e of g.data.edges) {
      if (e.kind !== "attachment") continue;
      if (!attached.has(e.from)) attached.set(e.from, []);
      attached.get(e.from).push(`${names.get(e.to) || e.to} (${e.mode}${e.read_first ? ", read first" : ""})`);
    }
    for (const row of table.querySelectorAll("tr[data-memory]")) {
      const these = attached.get(row.dataset.memory);
      if (these) row.querySelector("td.attached").textContent = these.join(", ");
    }
  });
}

async function archiveMemory(m, where) {
  confirmIn(where, `Archive ${m.name}? Agents stop seeing it; its files stay.`, "Archive", async () => {
    const r = await api("POST", `/memories/${m.memory_id}/archive`);
    if (!r.ok) return failed(r);
    say(`Archived ${m.name}.`);
    route();
  });
}

async function deleteMemory(m, where) {
  const r = await api("GET", `/memories/${m.memory_id}`);
  if (!r.ok) return failed(r);
  const refs = r.data.memory.referenced_by || [];
  const named = refs.length ? refs.map((x) => `${x.name} (${x.via}, ${x.mode})`).join(", ") : "no agent";
  const d = r.data.memory.default ? ` It is the tenant default for ${defaultText(r.data.memory.default)}.` : "";
  confirmIn(where, `Delete ${m.name}? It reaches ${named}.${d} This cannot be undone.`, "Delete", async () => {
    const out = await api("POST", `/memories/${m.memory_id}/delete`);
    if (!out.ok) return failed(out);
    say(`Deleted ${m.name}.`);
    route();
  });
}

function tree(memoryId, files) {
  // Paths become a nested list of folders; each file links to its own page.
  const root = { dirs: new Map(), files: [] };
  for (const f of files) {
    const parts = f.path.split("/");
    let node = root;
    for (const p of parts.slice(0, -1)) {
      if (!node.dirs.has(p)) node.dirs.set(p, { dirs: new Map(), files: [] });
      node = node.dirs.get(p);
    }
    node.files.push(f);
  }
  const render = (node) =>
    h(
      "ul",
      {},
      [...node.dirs].map(([name, sub]) => h("li", { class: "dir" }, h("span", {}, `${name}/`), render(sub))),
      node.files.map((f) =>
        h(
          "li",
          {},
          h("a", { href: fileHash(memoryId, f.path), class: "file" }, f.path.split("/").pop()),
          ` v${f.lock_version} · ${size(f.bytesize)} · ${author(f.written_by)}`,
        ),
      ),
    );
  return h("nav", { class: "tree", "aria-label": "Files" }, render(root));
}

function fileHash(memoryId, path, view) {
  return `#/${view || "file"}/${memoryId}/${encodeURIComponent(path)}`;
}

async function memoryPage(id) {
  const [mr, fr] = await Promise.all([api("GET", `/memories/${id}`), api("GET", `/memories/${id}/files?limit=1000`)]);
  if (!mr.ok) return failed(mr);
  if (!fr.ok) return failed(fr);
  const m = mr.data.memory;
  const refs = m.referenced_by || [];
  const path = h("input", { type: "text", required: true, name: "path" });
  const newFile = h("form", { class: "inline", "aria-label": "New file" }, field("New file path", path), h("button", { type: "submit" }, "Open"));
  newFile.addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = fileHash(id, path.value);
  });
  const parts = [
    h("h1", {}, m.name),
    h("p", { class: "desc" }, m.description),
    h("p", {}, `${m.file_count} files · ${size(m.bytesize)} · created by ${author(m.created_by)} ${when(m.created_at)}`),
    h("h2", {}, "Files"),
    tree(id, fr.data.files),
    newFile,
    h("h2", {}, "Agents referencing it"),
    refs.length
      ? h("ul", { class: "refs" }, refs.map((r) => h("li", {}, h("a", { href: `#/agent/${r.agent_public_id}` }, r.name), ` · ${r.via}, ${r.mode}${r.read_first ? ", read first" : ""}`)))
      : h("p", {}, "No agent reaches it."),
    attachForm(id),
    defaultForm(m),
    accessForm(m),
  ];
  if (m.git) {
    const sync = h("button", { type: "button" }, "Sync from Git");
    const out = h("p", { class: "sync" });
    sync.addEventListener("click", async () => {
      const r = await api("POST", `/memories/${id}/sync`);
      if (!r.ok) return failed(r);
      out.textContent = `Synced ${r.data.sync.commit.slice(0, 10)}: ${r.data.sync.changed.length} changed, ${r.data.sync.removed.length} removed.`;
    });
    parts.push(h("h2", {}, "Git source"), h("p", { class: "git" }, `${m.git.url} ${m.git.ref || ""} ${m.git.path || ""} at ${m.git.commit || "?"}`), sync, out);
  }
  show(...parts);
}

function attachForm(memoryId) {
  const agent = h("input", { type: "text", required: true, name: "agent" });
  const mode = h("select", { name: "mode" }, h("option", { value: "readonly" }, "read only"), h("option", { value: "readwrite" }, "read and write"));
  const first = h("input", { type: "checkbox", name: "read_first" });
  const form = h(
    "form",
    { class: "inline", "aria-label": "Attach to an agent" },
    h("h2", {}, "Attach to an agent"),
    field("Agent id", agent),
    field("Mode", mode),
    field("Read first", first),
    h("button", { type: "submit" }, "Attach"),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    // Send the whole list: the agent's attachments as they are, with this one added or changed.
    const got = await api("GET", `/agents/${agent.value.trim()}`);
    if (!got.ok) return failed(got);
    const others = got.data.agent.memories.filter((a) => a.memory_id !== memoryId);
    const memories = [...others, { memory_id: memoryId, mode: mode.value, read_first: first.checked }];
    const r = await api("PATCH", `/agents/${agent.value.trim()}`, { agent: { memories } });
    if (!r.ok) return failed(r);
    say(`Attached to ${r.data.agent.name}.`);
    route();
  });
  return form;
}

function defaultForm(m) {
  const d = m.default;
  const reach = h("select", { name: "reach" }, h("option", { value: "account" }, "whole account"), h("option", { value: "deployment" }, "one deployment"));
  const deployment = h("input", { type: "text", name: "deployment", value: (d && d.deployment) || "" });
  const mode = h("select", { name: "mode" }, h("option", { value: "readonly" }, "read only"), h("option", { value: "readwrite" }, "read and write"));
  if (d) { reach.value = d.reach; mode.value = d.mode; }
  const form = h(
    "form",
    { class: "inline", "aria-label": "Tenant default" },
    h("h2", {}, "Tenant default"),
    h("p", {}, `Now: ${defaultText(d)}`),
    field("Reach", reach),
    field("Deployment", deployment),
    field("Mode", mode),
    h("button", { type: "submit" }, "Save default"),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const def = { reach: reach.value, mode: mode.value };
    if (reach.value === "deployment") def.deployment = deployment.value;
    const r = await api("PATCH", `/memories/${m.memory_id}`, { memory: { default: def } });
    if (!r.ok) return failed(r);
    say("Default saved.");
    route();
  });
  return form;
}

function accessForm(m) {
  const a = m.access || { humans: [], workspaces: [] };
  const humans = h("input", { type: "text", name: "humans", value: a.humans.join(", ") });
  const workspaces = h("input", { type: "text", name: "workspaces", value: a.workspaces.join(", ") });
  const form = h(
    "form",
    { class: "inline", "aria-label": "Access" },
    h("h2", {}, "Access"),
    h("p", {}, m.access ? "Only the people and workspaces named here may read it." : "Open to everyone with memory read access."),
    field("Human ids (comma separated)", humans),
    field("Workspace ids (comma separated)", workspaces),
    h("button", { type: "submit" }, "Save access"),
  );
  const ids = (t) => t.split(",").map((s) => s.trim()).filter(Boolean);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const r = await api("PATCH", `/memories/${m.memory_id}`, { memory: { access: { humans: ids(humans.value), workspaces: ids(workspaces.value) } } });
    if (!r.ok) return failed(r);
    say("Access saved.");
    route();
  });
  return form;
}

async function filePage(id, path) {
  const r = await api("POST", `/memories/${id}/files/show`, { file: { path } });
  let loaded = null;
  if (r.ok) loaded = r.data.file;
  else if (r.status !== 404 || (r.data && r.data.error && r.data.error.code !== "memory_not_found")) return failed(r);
  const base = loaded ? loaded.content : "";
  const text = h("textarea", { name: "content", rows: 24, spellcheck: "false" });
  text.value = base;
  const preview = h("section", { class: "preview-wrap", "aria-label": "Preview" }, markdown(base));
  text.addEventListener("input", () => preview.replaceChildren(markdown(text.value)));
  const version = h("p", { class: "version" });
  const conflict = h("section", { class: "conflict", "aria-label": "Conflict", hidden: true });
  const lease = h("p", { class: "lease", role: "note", hidden: true });
  let expected = loaded ? { id: loaded.public_id, v: loaded.lock_version } : { id: null, v: null };
  let baseText = base;
  const describe = (f) => {
    version.textContent = f ? `Version ${f.lock_version} by ${author(f.written_by)}, ${when(f.written_at)}${f.pii.length ? ` · PII: ${f.pii.join(", ")}` : ""}` : "A new file: saving creates it.";
  };
  describe(loaded);
  const save = h("button", { type: "submit" }, "Save");
  const form = h(
    "form",
    { class: "editor", "aria-label": "Edit file" },
    h("div", { class: "panes" }, field("Content", text), preview),
    save,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const mine = text.value;
    const w = await api("POST", `/memories/${id}/files`, {
      file: { path, content: mine, expected_public_id: expected.id, expected_lock_version: expected.v },
    });
    if (w.ok) {
      conflict.hidden = true;
      lease.hidden = true;
      expected = { id: w.data.file.public_id, v: w.data.file.lock_version };
      baseText = mine;
      describe(w.data.file);
      say(`Saved version ${w.data.file.lock_version}.`);
      return;
    }
    const code = w.data && w.data.error && w.data.error.code;
    if (code === "stale_object" || code === "already_exists") return showConflict(mine);
    if (code === "memory_leased") {
      // Someone (usually an agent mid-run) holds the file for a short while: say who and until when.
      const d = w.data.error.details || {};
      const who = d.holder ? `${d.holder.name || d.holder.public_id} (${d.holder.kind})` : "someone";
      lease.textContent = `Leased by ${who} until ${when(d.expires_at)}. Your text is kept; save again after the lease ends.`;
      lease.hidden = false;
    }
    failed(w);
  });
  async function showConflict(mine) {
    const t = await api("POST", `/memories/${id}/files/show`, { file: { path } });
    if (!t.ok) return failed(t);
    const theirs = t.data.file;
    say(`Someone else saved version ${theirs.lock_version} meanwhile (${author(theirs.written_by)}). Your text is kept.`, true);
    const carry = h("button", { type: "button" }, "Carry my change over");
    const take = h("button", { type: "button" }, "Take theirs");
    carry.addEventListener("click", () => {
      // Keep my text, now based on their version: the next save is conditional on it.
      expected = { id: theirs.public_id, v: theirs.lock_version };
      baseText = theirs.content;
      text.value = mine;
      conflict.hidden = true;
      say(`Your change is now based on version ${theirs.lock_version}; save to keep it.`);
      text.focus();
    });
    take.addEventListener("click", () => {
      expected = { id: theirs.public_id, v: theirs.lock_version };
      baseText = theirs.content;
      text.value = theirs.content;
      preview.replaceChildren(markdown(theirs.content));
      describe(theirs);
      conflict.hidden = true;
    });
    conflict.replaceChildren(
      h("h2", {}, "Someone saved meanwhile"),
      h("div", { class: "three" },
        h("figure", {}, h("figcaption", {}, "Base (what you loaded)"), h("pre", { class: "base" }, baseText)),
        h("figure", {}, h("figcaption", {}, `Theirs (version ${theirs.lock_version})`), h("pre", { class: "theirs" }, theirs.content)),
        h("figure", {}, h("figcaption", {}, "Mine"), h("pre", { class: "mine" }, mine)),
      ),
      diffView("Base → theirs", baseText, theirs.content),
      diffView("Base → mine", baseText, mine),
      carry,
      take,
    );
    conflict.hidden = false;
    carry.focus();
  }
  show(
    h("p", { class: "crumbs" }, h("a", { href: `#/memory/${id}` }, "← the Memory"), " · ", h("a", { href: fileHash(id, path, "history") }, "History")),
    h("h1", { class: "path" }, path),
    version,
    lease,
    conflict,
    form,
  );
}

async function historyPage(id, path) {
  const r = await api("POST", `/memories/${id}/files/versions`, { file: { path, limit: 100 } });
  if (!r.ok) return failed(r);
  const versions = r.data.versions;
  const current = versions.length ? versions[0] : null;
  const out = h("section", { class: "diff-out", "aria-label": "Diff" });
  const pick = (name, v, checked) => h("input", { type: "radio", name, value: String(v), checked, "aria-label": `${name === "a" ? "From" : "To"} version ${v}` });
  const act = h("div", { class: "acts" });
  const rows = versions.map((v, i) => {
    const acts = h("td", { class: "actions" });
    if (i > 0 && !v.redacted) {
      acts.append(h("button", { type: "button", on: { click: () => rollback(v) } }, `Roll back to ${v.lock_version}`));
    }
    if (i > 0 && !v.redacted) {
      // Only an earlier version's text can be redacted; the current one is replaced by a new write.
      acts.append(h("button", { type: "button", class: "danger", on: { click: () => redact(v, acts) } }, "Redact"));
    }
    if (!v.redacted) acts.append(h("button", { type: "button", on: { click: () => promote(v, acts) } }, "Promote"));
    return h(
      "tr",
      { "data-version": v.lock_version },
      h("td", {}, pick("a", v.lock_version, i === 1), pick("b", v.lock_version, i === 0)),
      h("th", { scope: "row" }, String(v.lock_version)),
      h("td", {}, author(v.author)),
      h("td", {}, when(v.written_at)),
      h("td", {}, v.operation + (v.rolled_back_from ? ` from ${v.rolled_back_from}` : "")),
      h("td", { class: "hash", title: v.content_sha256 || "" }, (v.content_sha256 || "").slice(0, 12)),
      h("td", {}, v.overwrote_concurrent_edit ? "overwrote a concurrent edit" : ""),
      h("td", {}, v.pii.join(", ")),
      h("td", {}, v.redacted ? `redacted ${when(v.redacted_at)}` : ""),
      acts,
    );
  });
  async function rollback(v) {
    const x = await api("POST", `/memories/${id}/files/rollback`, {
      file: { path, lock_version: v.lock_version, expected_public_id: current.public_id, expected_lock_version: current.lock_version },
    });
    if (!x.ok) return failed(x);
    say(`Rolled back to version ${v.lock_version}: now version ${x.data.file.lock_version}.`);
    route();
  }
  function redact(v, where) {
    confirmIn(where, `Redact version ${v.lock_version} of ${path}? Its content is deleted for good; the record stays.`, "Redact", async () => {
      const x = await api("POST", `/memories/${id}/files/versions/redact`, {
        file: { path, lock_version: v.lock_version, expected_public_id: current.public_id, expected_lock_version: current.lock_version },
      });
      if (!x.ok) return failed(x);
      say(`Redacted version ${v.lock_version}.`);
      route();
    });
  }
  function promote(v, where) {
    const name = h("input", { type: "text", required: true, name: "promote_name" });
    const form = h("form", { class: "inline", "aria-label": "Promote into a new Memory" }, field("New Memory name", name), h("button", { type: "submit" }, "Promote"));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const x = await api("POST", "/memories/promote", { promote: { source: { memory_id: id, path, lock_version: v.lock_version }, name: name.value } });
      if (!x.ok) return failed(x);
      state.flash = `Promoted into ${x.data.memory.name}.`;
      location.hash = `#/memory/${x.data.memory.memory_id}`;
    });
    where.append(form);
    name.focus();
  }
  const compare = h("button", { type: "button" }, "Show diff");
  compare.addEventListener("click", async () => {
    const a = document.querySelector('input[name="a"]:checked');
    const b = document.querySelector('input[name="b"]:checked');
    if (!a || !b) return say("Pick two versions.", true);
    const get = (n) => api("POST", `/memories/${id}/files/versions/show`, { file: { path, lock_version: Number(n) } });
    const [x, y] = await Promise.all([get(a.value), get(b.value)]);
    if (!x.ok) return failed(x);
    if (!y.ok) return failed(y);
    out.replaceChildren(diffView(`Version ${a.value} → ${b.value}`, x.data.version.content || "", y.data.version.content || ""));
  });
  act.append(compare);
  const table = h(
    "table",
    { class: "history" },
    h("caption", {}, `Versions of ${path}, newest first`),
    h("thead", {}, h("tr", {}, ["Compare", "Version", "Author", "Time", "Operation", "SHA-256", "Overwrote", "PII", "Redacted", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows),
  );
  show(
    h("p", { class: "crumbs" }, h("a", { href: `#/memory/${id}` }, "← the Memory"), " · ", h("a", { href: fileHash(id, path) }, "Edit")),
    h("h1", { class: "path" }, `History of ${path}`),
    h("div", { class: "scroll" }, table),
    act,
    out,
  );
}

async function agentPage(id) {
  const [a, m] = await Promise.all([api("GET", `/agents/${id}`), api("GET", `/agents/${id}/memories`)]);
  if (!a.ok) return failed(a);
  const agent = a.data.agent;
  const names = new Map();
  if (m.ok) for (const e of m.data.memories || []) names.set(e.memory_id, e.name);
  const rows = agent.memories.map((x) =>
    h("li", {}, h("a", { href: `#/memory/${x.memory_id}` }, names.get(x.memory_id) || x.memory_id), ` · ${x.mode}${x.read_first ? ", read first" : ""}`),
  );
  show(h("h1", {}, agent.name), h("p", {}, `${agent.kind}${agent.deployment ? ` · deployment ${agent.deployment}` : ""}`), h("h2", {}, "Attached Memories"), rows.length ? h("ul", {}, rows) : h("p", {}, "None attached."));
}

// ---- the map: an SVG built node by node; a node is a link to its Memory or agent ------------------------

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

async function mapPage() {
  const r = await api("GET", "/memory_map");
  if (!r.ok) return failed(r);
  const { nodes, edges } = r.data;
  const memories = nodes.filter((n) => n.kind === "memory");
  const targets = nodes.filter((n) => n.kind !== "memory");
  const W = 200, H = 36, GAP = 16, LEFT = 20, RIGHT = 480;
  const pos = new Map();
  memories.forEach((n, i) => pos.set(n.id, { x: LEFT, y: 20 + i * (H + GAP) }));
  targets.forEach((n, i) => pos.set(n.id, { x: RIGHT, y: 20 + i * (H + GAP) }));
  const count = new Map();
  for (const e of edges) {
    count.set(e.from, (count.get(e.from) || 0) + 1);
    count.set(e.to, (count.get(e.to) || 0) + 1);
  }
  const height = 40 + Math.max(memories.length, targets.length, 1) * (H + GAP);
  const defs = s(
    "defs",
    {},
    s("marker", { id: "m-attachment", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto" }, s("path", { d: "M0,0 L10,5 L0,10 z", class: "mk attachment" })),
    s("marker", { id: "m-default", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto" }, s("path", { d: "M0,0 L10,5 L0,10", class: "mk default" })),
    s("marker", { id: "m-provenance", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto" }, s("circle", { cx: 5, cy: 5, r: 4, class: "mk provenance" })),
  );
  const svg = s("svg", { class: "map", width: 720, height, role: "group", "aria-label": "Memory map" }, defs);
  for (const e of edges) {
    const a = pos.get(e.from), b = pos.get(e.to);
    if (!a || !b) continue;
    const x1 = a.x + W, y1 = a.y + H / 2;
    const same = a.x === b.x;
    const x2 = same ? b.x + W : b.x, y2 = b.y + H / 2;
    const mid = same ? x1 + 60 : (x1 + x2) / 2;
    const path = s("path", { d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`, class: `edge ${e.kind}`, "marker-end": `url(#m-${e.kind})`, "data-from": e.from, "data-to": e.to });
    path.append(s("title", {}, `${e.kind}${e.mode ? `, ${e.mode}` : ""}`));
    svg.append(path);
  }
  for (const n of nodes) {
    const p = pos.get(n.id);
    const href = n.kind === "memory" ? `#/memory/${n.id}` : n.kind === "agent" ? `#/agent/${n.id}` : null;
    const label = `${n.name.length > 22 ? `${n.name.slice(0, 21)}…` : n.name} (${count.get(n.id) || 0})`;
    const g = s("g", { class: `node ${n.kind}`, "data-id": n.id }, s("title", {}, `${n.kind}: ${n.name}`), s("rect", { x: p.x, y: p.y, width: W, height: H, rx: 6 }), s("text", { x: p.x + 10, y: p.y + H / 2 + 5 }, label));
    if (href) {
      const link = s("a", { href, "aria-label": `${n.kind} ${n.name}, ${count.get(n.id) || 0} links` }, g);
      svg.append(link);
    } else svg.append(g);
  }
  const legend = h(
    "ul",
    { class: "legend" },
    h("li", {}, h("span", { class: "key attachment" }), "attachment (filled arrow)"),
    h("li", {}, h("span", { class: "key default" }), "tenant default (open arrow)"),
    h("li", {}, h("span", { class: "key provenance" }), "promoted from (dashed, round end)"),
  );
  show(h("h1", {}, "Memory map"), h("p", {}, `${memories.length} Memories, ${targets.length} agents and defaults, ${edges.length} links. Counts on nodes are their links.`), legend, h("div", { class: "scroll" }, svg));
}

// ---- review queue --------------------------------------------------------------------------------------

async function reviewPage(ws) {
  const id = h("input", { type: "text", required: true, name: "workspace", value: ws || "" });
  const form = h("form", { class: "inline", "aria-label": "Review queue" }, field("Workspace id", id), h("button", { type: "submit" }, "Show quarantined records"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = `#/review/${id.value.trim()}`;
  });
  const parts = [h("h1", {}, "Review queue"), form];
  if (ws) {
    const r = await api("POST", `/workspaces/${ws}/records/search`, { search: { quarantine: "pending", limit: 50 } });
    if (r.status === 403) parts.push(h("p", {}, "Only those allowed to review this workspace see its queue."));
    else if (!r.ok) return failed(r);
    else {
      const recs = r.data.results.map((x) => x.record);
      parts.push(
        recs.length
          ? h("ul", { class: "queue" }, recs.map((rec) => {
              const li = h("li", { "data-record": rec.public_id }, h("p", { class: "desc" }, rec.content), h("p", {}, `${rec.type} by ${author(rec.author)} · rules: ${(rec.quarantine && rec.quarantine.rules.join(", ")) || ""}`));
              const verdict = (decision) => async () => {
                const x = await api("POST", `/workspaces/${ws}/records/${rec.public_id}/review`, { review: { decision } });
                if (!x.ok) return failed(x);
                say(decision === "release" ? "Released." : "Rejected.");
                route();
              };
              li.append(h("button", { type: "button", on: { click: verdict("release") } }, "Release"), h("button", { type: "button", class: "danger", on: { click: verdict("reject") } }, "Reject"));
              return li;
            }))
          : h("p", {}, "Nothing is waiting for review."),
      );
    }
  }
  show(...parts);
}

// ---- conversations: documents by scope, their versions, the fork's parent, quarantined documents -------------

async function conversationPage(ws, conv) {
  const wsIn = h("input", { type: "text", required: true, name: "workspace", value: ws || "" });
  const cvIn = h("input", { type: "text", required: true, name: "conversation", value: conv || "" });
  const form = h(
    "form",
    { class: "inline", "aria-label": "Open a conversation" },
    field("Workspace id", wsIn),
    field("Conversation id", cvIn),
    h("button", { type: "submit" }, "Open conversation"),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = `#/conversation/${wsIn.value.trim()}/${cvIn.value.trim()}`;
  });
  const parts = [h("h1", {}, "Conversations"), form];
  if (!ws || !conv) return show(...parts);
  const base = `/workspaces/${ws}/conversations/${conv}`;
  const [c, d] = await Promise.all([api("GET", base), api("GET", `${base}/memory`)]);
  if (!c.ok) return failed(c);
  if (!d.ok) return failed(d);
  const cv = c.data.conversation;
  const fork = h("button", { type: "button" }, "Fork this conversation");
  fork.addEventListener("click", async () => {
    const r = await api("POST", `${base}/fork`);
    if (!r.ok) return failed(r);
    state.flash = "Forked: this is the new conversation.";
    location.hash = `#/conversation/${ws}/${r.data.conversation.public_id}`;
  });
  parts.push(
    h("h2", { class: "path" }, `Conversation ${cv.public_id}`),
    h("p", {}, `Revision ${cv.context_revision}${cv.archived ? " · archived" : ""} · created ${when(cv.created_at)}`),
    cv.parent_public_id
      ? h("p", {}, "Forked from ", h("a", { href: `#/conversation/${ws}/${cv.parent_public_id}` }, cv.parent_public_id))
      : h("p", {}, "Not a fork."),
    fork,
  );
  const scopes = new Map();
  for (const doc of d.data.memory) {
    const scope = doc.path.split("/")[0];
    if (!scopes.has(scope)) scopes.set(scope, []);
    scopes.get(scope).push(doc);
  }
  for (const [scope, docs] of scopes) {
    parts.push(h("h2", {}, `${scope}/`));
    parts.push(
      h("ul", { class: "docs" }, docs.map((doc) => {
        const li = h(
          "li",
          { "data-path": doc.path },
          h("span", { class: "path" }, doc.path),
          ` · v${doc.lock_version} · ${size(doc.bytesize)} · ${author(doc.written_by)} ${when(doc.written_at)}`,
          doc.pii.length ? ` · PII: ${doc.pii.join(", ")}` : "",
          doc.quarantine ? ` · quarantine: ${doc.quarantine.status} (${doc.quarantine.rules.join(", ")})` : "",
        );
        const versions = h("button", { type: "button" }, "Versions");
        versions.addEventListener("click", async () => {
          const r = await api("POST", `${base}/memory/versions`, { memory: { path: doc.path } });
          if (!r.ok) return failed(r);
          li.append(h("ol", { class: "versions", reversed: true }, r.data.versions.map((v) => {
            const item = h("li", { "data-version": v.lock_version }, `v${v.lock_version} · ${v.operation} · ${author(v.author)} · ${when(v.written_at)}${v.overwrote_concurrent_edit ? " · overwrote a concurrent edit" : ""}${v.redacted ? " · redacted" : ""}`);
            if (!v.redacted) {
              item.append(" ", h("button", { type: "button", on: { click: () => promoteToSkill(ws, conv, doc.path, v, item) } }, "Promote into a skill"));
            }
            return item;
          })));
          versions.disabled = true;
        });
        li.append(" ", versions);
        if (doc.quarantine && doc.quarantine.status === "pending") {
          const verdict = (decision) => async () => {
            const r = await api("POST", `${base}/memory/review`, {
              memory: { path: doc.path, lock_version: doc.lock_version, decision, expected_public_id: doc.public_id, expected_lock_version: doc.lock_version },
            });
            if (!r.ok) return failed(r);
            say(decision === "release" ? `Released ${doc.path}.` : `Rejected ${doc.path}.`);
            route();
          };
          li.append(" ", h("button", { type: "button", on: { click: verdict("release") } }, "Release"), " ", h("button", { type: "button", class: "danger", on: { click: verdict("reject") } }, "Reject"));
        }
        return li;
      })),
    );
  }
  if (!scopes.size) parts.push(h("p", {}, "No documents."));
  show(...parts);
}

function promoteToSkill(ws, conv, path, v, where) {
  // A skill's notes are a workspace document under workspace/skills/<name>; promoting appends a section
  // naming where it came from (the service never overwrites a skill), conditional on the skill as read now.
  const name = h("input", { type: "text", required: true, name: "skill" });
  const description = h("input", { type: "text", name: "skill_description" });
  const form = h(
    "form",
    { class: "inline", "aria-label": "Promote into a skill's notes" },
    field("Skill name", name),
    field("Description (a new skill)", description),
    h("button", { type: "submit" }, "Promote"),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const target = `workspace/skills/${name.value.trim()}`;
    const now = await api("POST", `/workspaces/${ws}/memory/show`, { memory: { path: target } });
    if (!now.ok && now.status !== 404) return failed(now);
    const doc = now.ok ? now.data.memory : null;
    const body = {
      source: { conversation_public_id: conv, path, lock_version: v.lock_version },
      target_path: target,
      expected_public_id: doc ? doc.public_id : null,
      expected_lock_version: doc ? doc.lock_version : null,
    };
    if (!doc && description.value.trim()) body.description = description.value.trim();
    const r = await api("POST", `/workspaces/${ws}/memory/promote`, { promote: body });
    if (!r.ok) return failed(r);
    say(`Promoted version ${v.lock_version} into ${target}.`);
    form.remove();
  });
  where.append(form);
  name.focus();
}

// ---- the router ----------------------------------------------------------------------------------------

async function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  const [page, a, ...rest] = parts;
  const b = rest.length ? decodeURIComponent(rest.join("/")) : "";
  if (!state.csrf) {
    const r = await call("GET", "/console/api/session");
    if (r.ok) signedIn(r.data);
    else return signIn();
  }
  try {
    if (page === "memory" && a) await memoryPage(a);
    else if (page === "file" && a) await filePage(a, b);
    else if (page === "history" && a) await historyPage(a, b);
    else if (page === "agent" && a) await agentPage(a);
    else if (page === "map") await mapPage();
    else if (page === "review") await reviewPage(a);
    else if (page === "conversation") await conversationPage(a, rest[0]);
    else await memoriesPage();
  } catch (e) {
    say(`The page could not load: ${e}`, true);
  }
  document.title = `${main().querySelector("h1")?.textContent || "Console"} · Agent memory`;
  // When the page's data is drawn: the browser tests time navigation start to this mark.
  performance.mark("console-drawn");
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("sign-out").addEventListener("click", signOut);
  // A new page starts with a clear status; an action's own redraw keeps what it said.
  window.addEventListener("hashchange", () => {
    say(state.flash || "");
    state.flash = null;
    route();
  });
  route();
});
