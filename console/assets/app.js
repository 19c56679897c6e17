// sqlq console: the pages' script. Everything a message or the database says is put into the
// page as text nodes (textContent), never as HTML; state changes are POSTs that carry the
// session's anti-CSRF token.
'use strict';

const state = { session: null, page: null, timer: null, poison: null, selected: new Set() };

function $(id) { return document.getElementById(id); }

// An element with attributes and children (strings become text nodes).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return e;
}

// Control characters shown as escapes (a terminal escape stays visible, and inert).
function visible(text) {
  return String(text).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g,
    (ch) => '\\x' + ch.charCodeAt(0).toString(16).padStart(2, '0'));
}

async function api(path, options) {
  const res = await fetch(path, Object.assign({ credentials: 'same-origin' }, options || {}));
  const type = res.headers.get('Content-Type') || '';
  const body = type.startsWith('application/json') ? await res.json() : await res.text();
  if (res.status === 401) { window.location.href = '/login.html'; }
  return { status: res.status, body, res };
}

function post(path, payload) {
  return api(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Sqlq-Csrf': state.session.csrf },
    body: JSON.stringify(payload),
  });
}

function age(seconds) {
  if (seconds === undefined || seconds === null) return '-';
  if (seconds < 1) return '0 s';
  if (seconds < 120) return Math.round(seconds) + ' s';
  if (seconds < 7200) return Math.round(seconds / 60) + ' min';
  return Math.round(seconds / 3600) + ' h';
}

// ---- Routes ----

function heldCell(route) {
  if (!route.held.length) return el('td', { class: 'clear', 'data-testid': 'held' }, 'no');
  const list = el('ul', { class: 'held', 'data-testid': 'held' });
  for (const h of route.held) list.appendChild(el('li', { 'data-kind': h.kind }, visible(h.text)));
  return el('td', {}, list);
}

function routeRow(r) {
  const s = r.status || {};
  const owners = Object.entries(s.owners || {}).map(([who, n]) => who + ': ' + n).join(', ');
  return el('tr', { 'data-table': r.table, 'data-queue': r.queue },
    el('td', {}, r.table), el('td', {}, r.queue), el('td', {}, r.bridge),
    el('td', {}, r.source || '-'),
    el('td', { class: 'num', 'data-testid': 'sync' }, s.sync_version === undefined ? '-' : String(s.sync_version)),
    el('td', { class: 'num', 'data-testid': 'pending' }, s.pending == null ? '-' : String(s.pending)),
    el('td', { class: 'num', 'data-testid': 'age' }, s.pending ? age(s.oldest_pending_age_s) : '-'),
    el('td', { 'data-testid': 'owners' }, owners || (s.leased === 0 ? 'none holds a lease' : '-')),
    heldCell(r));
}

async function loadRoutes() {
  const { body } = await api('/api/routes');
  const tbody = $('routes-body');
  tbody.replaceChildren(...(body.routes || []).map(routeRow));
  $('routes-at').textContent = 'Read at ' + body.read_at + '.';
  const err = body.database_error || (body.errors || []).map((e) => e.what + ': ' + e.error).join('\n');
  $('routes-error').hidden = !err;
  $('routes-error').textContent = err ? visible(err) : '';
}

// ---- Queues ----

function countCell(q) {
  if (q.error) return el('td', { class: 'error' }, visible(q.error));
  return el('td', { class: 'num', 'data-testid': 'count' }, q.missing ? '0 (no queue)' : String(q.count));
}

async function loadQueues() {
  const { body } = await api('/api/queues');
  $('queues-body').replaceChildren(...(body.queues || []).map((q) =>
    el('tr', { 'data-queue': q.queue.name },
      el('td', {}, q.queue.name), countCell(q.queue),
      el('td', {}, q.poison.name), countCell(q.poison),
      el('td', {}, el('a', { href: '#poison/' + encodeURIComponent(q.queue.name) }, 'triage')))));
}

// ---- Poison ----

// JSON text laid out with indentation, every byte of its tokens kept (numbers are never
// parsed and printed again). Text that is not JSON comes back as it is.
function pretty(text) {
  const t = text.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return text;
  let out = '', depth = 0, inString = false, escaped = false;
  const nl = () => '\n' + '  '.repeat(depth);
  for (const ch of t) {
    if (inString) {
      out += ch;
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
    } else if (ch === '"') { inString = true; out += ch; }
    else if (ch === '{' || ch === '[') { depth++; out += ch + nl(); }
    else if (ch === '}' || ch === ']') { depth = Math.max(0, depth - 1); out += nl() + ch; }
    else if (ch === ',') out += ch + nl();
    else if (ch === ':') out += ': ';
    else if (!/\s/.test(ch)) out += ch;
  }
  return out;
}

function bodyText(m) {
  if (m.body === null) return '(the text does not decode with this encoding)';
  if (typeof m.body === 'object') return '(not UTF-8; base64) ' + m.body.$base64;
  return pretty(m.body);
}

function showMessage(m) {
  $('message').hidden = false;
  $('message-id').textContent = m.id;
  $('message-inserted').textContent = m.insertion_time;
  $('message-dequeues').textContent = String(m.dequeue_count);
  $('message-reason').textContent = m.reason === null ? '(none recorded: not a sqlq envelope)' : visible(m.reason);
  $('message-body').textContent = visible(bodyText(m));
  $('message-text').textContent = visible(m.text);
}

function messageRow(m) {
  const box = el('input', { type: 'checkbox', 'data-id': m.id, 'data-testid': 'select' });
  box.checked = state.selected.has(m.id);
  box.addEventListener('change', () => { if (box.checked) state.selected.add(m.id); else state.selected.delete(m.id); });
  const link = el('a', { href: '#', class: 'id', 'data-testid': 'message-link' }, m.id);
  link.addEventListener('click', (ev) => { ev.preventDefault(); showMessage(m); });
  return el('tr', { 'data-id': m.id },
    el('td', {}, box), el('td', {}, link), el('td', {}, m.insertion_time),
    el('td', { class: 'num' }, String(m.dequeue_count)),
    el('td', { 'data-testid': 'reason' }, m.reason === null ? '' : visible(m.reason)),
    el('td', { class: 'preview', 'data-testid': 'preview' }, visible(m.preview)));
}

function filters() {
  return { contains: $('filter-text').value, field: $('filter-field').value, value: $('filter-value').value };
}

async function loadPoison() {
  const queue = $('poison-queue').value;
  if (!queue) return;
  const f = filters();
  const q = new URLSearchParams({ queue });
  if (f.contains) q.set('contains', f.contains);
  if (f.field) { q.set('field', f.field); q.set('value', f.value); }
  const { status, body } = await api('/api/poison?' + q.toString());
  $('poison-error').hidden = status === 200;
  if (status !== 200) { $('poison-error').textContent = visible(body.error || status); return; }
  state.poison = body;
  const shown = new Set(body.messages.map((m) => m.id));
  for (const id of [...state.selected]) if (!shown.has(id)) state.selected.delete(id);
  $('poison-title').textContent = body.poison;
  $('poison-count').textContent = body.missing ? body.poison + ' does not exist: nothing was ever poisoned.'
    : body.messages.length + ' shown of the first ' + body.peeked + ' (a peek shows at most 32) of about ' +
      body.approximate_count + ' in ' + body.poison + '.';
  $('poison-body').replaceChildren(...body.messages.map(messageRow));
}

function selection(kind) {
  const f = filters();
  if (kind === 'selected') return { ids: [...state.selected] };
  if (f.contains || f.field) return { match: { contains: f.contains, field: f.field, value: f.value } };
  return { all: true };
}

function showReport(body) {
  const box = $('report');
  box.hidden = false;
  if (body.error && !body.counts) { box.replaceChildren(el('p', { class: 'error' }, visible(body.error))); return; }
  const c = body.counts;
  const head = body.cleared ? 'Purged every message of ' + body.from + '.'
    : (body.dry_run ? 'Dry run: ' : '') + body.action + ' ' + body.from + (body.to ? ' → ' + body.to : '') +
      ': matched ' + c.matched + ', ' + (body.dry_run ? 'would be done ' : 'done ') + c.moved + ', failed ' + c.failed +
      ', uncertain ' + c.uncertain + ', arrived meanwhile ' + c.arrived + ', about ' + c.remaining + ' left.';
  const rows = body.outcomes.map((o) => el('tr', { 'data-id': o.id, 'data-outcome': o.outcome },
    el('td', {}, o.id), el('td', {}, o.outcome), el('td', {}, o.error ? visible(o.error) : '')));
  for (const id of body.not_found || []) rows.push(el('tr', { 'data-id': id, 'data-outcome': 'not_found' }, el('td', {}, id), el('td', {}, 'not_found'), el('td', {}, '')));
  const parts = [el('p', { 'data-testid': 'report-summary' }, head)];
  if (body.error) parts.push(el('p', { class: 'error' }, visible(body.error)));
  box.replaceChildren(...parts,
    el('table', { 'data-testid': 'report-outcomes' }, el('thead', {}, el('tr', {}, el('th', {}, 'Id'), el('th', {}, 'Outcome'), el('th', {}, 'Error'))), el('tbody', {}, ...rows)));
}

async function act(action, kind, extra) {
  $('message').hidden = true;
  $('report').hidden = true;
  $('report').replaceChildren();
  const payload = Object.assign({ queue: $('poison-queue').value, dry_run: $('dry-run').checked }, selection(kind), extra || {});
  if (payload.ids && payload.ids.length === 0) { showReport({ error: 'select messages first' }); return; }
  const { body } = await post('/api/poison/' + action, payload);
  showReport(body);
  state.selected.clear();
  await loadPoison();
}

async function exportJsonl(kind) {
  $('report').hidden = true;
  $('report').replaceChildren();
  const payload = Object.assign({ queue: $('poison-queue').value }, kind === 'selected' ? { ids: [...state.selected] } : { all: true });
  const { status, body, res } = await post('/api/poison/export', payload);
  if (status !== 200) { showReport({ error: body.error || String(status) }); return; }
  const url = URL.createObjectURL(new Blob([body], { type: res.headers.get('Content-Type') }));
  const a = el('a', { href: url, download: $('poison-queue').value + '-poison.jsonl' });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
  showReport({ error: 'exported ' + (body.match(/\n/g) || []).length + ' message(s) as JSON lines' });
}

function askPurge(kind) {
  const poison = $('poison-queue').value + '-poison';
  $('confirm').hidden = false;
  $('confirm').dataset.kind = kind;
  $('confirm-text').textContent = 'Purging deletes ' + (kind === 'selected' ? 'the ' + state.selected.size + ' selected message(s)' : 'every message that matches') +
    ' from ' + poison + ' for good. Type ' + poison + ' to confirm.';
  $('confirm-input').value = '';
  $('confirm-input').focus();
}

// ---- pages ----

function show(page) {
  for (const p of ['routes', 'queues', 'poison']) {
    $('page-' + p).hidden = p !== page;
    document.querySelector('[data-testid="nav-' + p + '"]').classList.toggle('active', p === page);
  }
  clearInterval(state.timer);
  state.page = page;
}

async function route() {
  const [page, arg] = (window.location.hash.slice(1) || 'routes').split('/');
  if (page === 'queues') { show('queues'); await loadQueues(); state.timer = setInterval(loadQueues, 5000); }
  else if (page === 'poison') {
    show('poison');
    if (arg) $('poison-queue').value = decodeURIComponent(arg);
    $('message').hidden = true;
    $('report').hidden = true;
    await loadPoison();
  } else { show('routes'); await loadRoutes(); state.timer = setInterval(loadRoutes, 5000); }
}

function wire() {
  $('poison-filter').addEventListener('submit', (ev) => { ev.preventDefault(); loadPoison(); });
  $('filter-clear').addEventListener('click', () => { $('filter-text').value = ''; $('filter-field').value = ''; $('filter-value').value = ''; loadPoison(); });
  $('poison-queue').addEventListener('change', () => { window.location.hash = '#poison/' + encodeURIComponent($('poison-queue').value); });
  $('select-all').addEventListener('change', () => {
    for (const box of document.querySelectorAll('#poison-body input[type=checkbox]')) {
      box.checked = $('select-all').checked;
      box.dispatchEvent(new Event('change'));
    }
  });
  $('message-close').addEventListener('click', () => { $('message').hidden = true; });
  $('requeue-selected').addEventListener('click', () => act('requeue', 'selected'));
  $('requeue-matching').addEventListener('click', () => act('requeue', 'matching'));
  $('export-selected').addEventListener('click', () => exportJsonl('selected'));
  $('export-all').addEventListener('click', () => exportJsonl('all'));
  $('purge-selected').addEventListener('click', () => askPurge('selected'));
  $('purge-matching').addEventListener('click', () => askPurge('matching'));
  $('confirm-cancel').addEventListener('click', () => { $('confirm').hidden = true; });
  $('confirm-go').addEventListener('click', async () => {
    $('confirm').hidden = true;
    await act('purge', $('confirm').dataset.kind, { confirm: $('confirm-input').value });
  });
  window.addEventListener('hashchange', route);
}

async function start() {
  const { status, body } = await api('/api/session');
  if (status !== 200) return;
  state.session = body;
  $('mode').textContent = body.read_only ? 'read-only' : '';
  $('actions').hidden = body.read_only;
  const queues = [...new Set(body.routes.map((r) => r.queue))];
  $('poison-queue').replaceChildren(...queues.map((q) => el('option', { value: q }, q)));
  wire();
  await route();
}

start();
