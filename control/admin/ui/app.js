// app.js: the sluice dashboard. It talks to the admin API of the server
// that serves it, with the bearer token the operator types in (kept in
// sessionStorage: this tab only, gone when it closes).

import {Chart} from './chart.js';
import {readEvents} from './events.js';

const $ = id => document.getElementById(id);
const tokenKey = 'sluice.admin.token';
const windowMs = 60000;
const keepSamples = 600;

const state = {
  token: sessionStorage.getItem(tokenKey) || '',
  samples: [],       // the Sample events received, oldest first
  markers: [],       // generation changes [{t, label}]
  generation: null,  // the generation the page shows (config and status)
  lastSampleGen: null,
  plan: null,        // {etag, doc}: the plan shown, the ETag it was made against
  abort: null,       // aborts the event stream
};

const charts = {
  admitted: new Chart($('chart-admitted'), $('legend-admitted'), {windowMs}),
  queued: new Chart($('chart-queued'), $('legend-queued'), {windowMs, integer: true}),
  refused: new Chart($('chart-refused'), $('legend-refused'), {windowMs}),
  active: new Chart($('chart-active'), $('legend-active'), {windowMs, integer: true}),
};

class Unauthorized extends Error {}

// api sends a request with the token; it returns the Response (any
// status but 401, which logs out).
async function api(method, path, {body, headers = {}, signal} = {}) {
  const resp = await fetch(path, {
    method, body, signal, cache: 'no-store',
    headers: {...headers, Authorization: `Bearer ${state.token}`},
  });
  if (resp.status === 401) {
    logout('the token was refused');
    throw new Unauthorized('unauthorized');
  }
  return resp;
}

async function errorOf(resp) {
  try { return await resp.json(); } catch { return {error: `${resp.status} ${resp.statusText}`}; }
}

// ---- login

$('login-form').addEventListener('submit', async e => {
  e.preventDefault();
  state.token = $('token').value.trim();
  $('token').value = '';
  $('login-error').textContent = '';
  const resp = await fetch('/v1/status', {headers: {Authorization: `Bearer ${state.token}`}, cache: 'no-store'});
  if (!resp.ok) {
    state.token = '';
    $('login-error').textContent = resp.status === 401 ? 'The token was refused.' : `The server answered ${resp.status}.`;
    return;
  }
  sessionStorage.setItem(tokenKey, state.token);
  start();
});

$('logout').addEventListener('click', () => logout(''));

function logout(why) {
  sessionStorage.removeItem(tokenKey);
  state.token = '';
  if (state.abort) state.abort.abort();
  state.abort = null;
  $('app').hidden = true;
  $('logout').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = why ? `Logged out: ${why}.` : '';
  setConn('not connected', '');
}

function start() {
  $('login').hidden = true;
  $('app').hidden = false;
  $('logout').hidden = false;
  loadConfig(true).catch(showError);
  stream();
}

function showError(err) {
  if (err instanceof Unauthorized || err.name === 'AbortError') return;
  $('stream-error').textContent = String(err.message || err);
}

function setConn(text, cls) {
  const el = $('conn-state');
  el.textContent = text;
  el.className = `pill ${cls}`;
}

// ---- the configuration in force

// loadConfig shows the document in force and its generation; intoEditor
// also puts it in the editor.
async function loadConfig(intoEditor) {
  const [cfg, st] = await Promise.all([api('GET', '/v1/config'), api('GET', '/v1/status')]);
  const status = await st.json();
  const gen = Number(JSON.parse(cfg.headers.get('ETag')));
  let doc = '';
  if (cfg.ok) {
    doc = await cfg.text();
    $('config-doc').textContent = doc;
  } else if (cfg.status === 404) {
    $('config-doc').textContent = '# No document in force: the server runs the configuration it was started with.';
  } else {
    throw new Error((await errorOf(cfg)).error);
  }
  state.generation = gen;
  $('generation').textContent = String(gen);
  $('source').textContent = status.origin ? `${status.source} (${status.origin})` : status.source;
  $('config-meta').textContent = `generation ${gen}${status.in_sync ? '' : ' (a writer outside the controller published since)'}`;
  if (intoEditor) $('editor').value = doc;
}

// ---- the event stream

async function stream() {
  if (state.abort) state.abort.abort();
  const ctl = new AbortController();
  state.abort = ctl;
  while (!ctl.signal.aborted) {
    let ended = false;
    try {
      setConn('connecting', '');
      const resp = await api('GET', '/v1/events', {signal: ctl.signal});
      if (!resp.ok) throw new Error((await errorOf(resp)).error);
      setConn('live', 'live');
      $('stream-error').textContent = '';
      await readEvents(resp, ev => {
        if (ev.event === 'sample') onSample(JSON.parse(ev.data));
        else if (ev.event === 'end') ended = true;
      });
    } catch (err) {
      if (err instanceof Unauthorized || ctl.signal.aborted) return;
      showError(err);
    }
    if (ended) {
      setConn('server stopped', 'down');
      $('stream-error').textContent = 'The server has stopped.';
      return;
    }
    setConn('reconnecting', 'down');
    await new Promise(r => setTimeout(r, 1000));
  }
}

function onSample(s) {
  s.t = Date.parse(s.time);
  state.samples.push(s);
  if (state.samples.length > keepSamples) state.samples.splice(0, state.samples.length - keepSamples);
  if (state.lastSampleGen !== null && s.generation !== state.lastSampleGen) {
    state.markers.push({t: s.t, label: `gen ${s.generation}`});
  }
  state.lastSampleGen = s.generation;
  if (s.generation !== state.generation) loadConfig(false).catch(showError);

  $('sample-count').textContent = String(state.samples.length);
  $('enabled').textContent = s.enabled ? 'on' : 'off';
  $('admitted-total').textContent = String(s.admitted);
  $('connections').textContent = String(s.connections);
  draw();
}

// rate is the per-second rate of the counter get(sample) between
// consecutive samples (a counter that went down, a restarted server,
// gives no point).
function rate(get) {
  const out = [];
  const ss = state.samples;
  for (let i = 1; i < ss.length; i++) {
    const dv = get(ss[i]) - get(ss[i - 1]), dt = (ss[i].t - ss[i - 1].t) / 1000;
    if (dv >= 0 && dt > 0) out.push([ss[i].t, dv / dt]);
  }
  return out;
}

function draw() {
  const ss = state.samples;
  if (ss.length === 0) return;
  const now = ss[ss.length - 1].t;
  const m = state.markers;

  charts.admitted.draw([{name: 'admitted/s', points: rate(s => s.admitted)}], m, now);
  charts.queued.draw([{name: 'queued', points: ss.map(s => [s.t, s.queued])}], m, now);

  const reasons = new Set();
  for (const s of ss) for (const r of Object.keys(s.refused)) reasons.add(r);
  charts.refused.draw([...reasons].sort().map(r => ({name: r, points: rate(s => s.refused[r] || 0)})), m, now);

  const scopes = new Map();
  for (const s of ss) for (const sc of s.scopes) {
    if (!scopes.has(sc.name)) scopes.set(sc.name, {kind: sc.kind, active: [], limit: []});
    const e = scopes.get(sc.name);
    e.active.push([s.t, sc.active]);
    e.limit.push([s.t, sc.limit]);
  }
  const series = [];
  for (const [name, e] of [...scopes].sort()) {
    series.push({name, points: e.active});
    if (e.kind === 'concurrency') series.push({name, points: e.limit, dashed: true, color: charts.active.color(name)});
  }
  charts.active.draw(series, m, now);
}

// ---- the editor: plan, then apply

$('editor').addEventListener('input', () => invalidatePlan('The document changed since the plan: plan it again.'));
$('reset').addEventListener('click', () => {
  loadConfig(true).then(() => invalidatePlan('')).catch(showError);
});

function invalidatePlan(msg) {
  if (state.plan && msg) setEditorStatus(msg, '');
  state.plan = null;
  $('apply').disabled = true;
}

function setEditorStatus(text, cls) {
  const el = $('editor-status');
  el.textContent = text;
  el.className = cls;
}

function showProblems(body) {
  const ul = $('problems');
  const items = (body.problems || []).map(p => {
    const li = document.createElement('li');
    const where = p.line ? `line ${p.line}${p.column ? `, column ${p.column}` : ''}: ` : '';
    li.textContent = `${where}${p.path ? `${p.path}: ` : ''}${p.reason}`;
    li.dataset.line = p.line || '';
    if (p.line) li.addEventListener('click', () => selectLine(p.line));
    return li;
  });
  ul.replaceChildren(...items);
}

// selectLine selects line n (1-based) of the editor.
function selectLine(n) {
  const ta = $('editor');
  const lines = ta.value.split('\n');
  let start = 0;
  for (let i = 0; i < n - 1 && i < lines.length; i++) start += lines[i].length + 1;
  ta.focus();
  ta.setSelectionRange(start, start + (lines[n - 1] || '').length);
}

$('plan').addEventListener('click', async () => {
  invalidatePlan('');
  showProblems({});
  $('plan-out').hidden = true;
  const doc = $('editor').value;
  setEditorStatus('Planning…', '');
  try {
    const resp = await api('POST', '/v1/config?dry_run=true', {body: doc, headers: {'Content-Type': 'application/yaml'}});
    if (!resp.ok) {
      const body = await errorOf(resp);
      setEditorStatus(resp.status === 422 ? 'The document is invalid; nothing was planned:' : body.error, 'error');
      showProblems(body);
      return;
    }
    const etag = resp.headers.get('ETag');
    showPlan(await resp.json());
    state.plan = {etag, doc};
    $('apply').disabled = false;
    setEditorStatus(`Planned against generation ${JSON.parse(etag)}. Apply applies exactly this plan, or is refused if the configuration moved.`, '');
  } catch (err) {
    if (!(err instanceof Unauthorized)) setEditorStatus(String(err.message || err), 'error');
  }
});

function showPlan(p) {
  const tbody = $('plan-states').tBodies[0];
  const rows = p.states.map(s => {
    const tr = document.createElement('tr');
    const limit = s.action === 'create' ? `${s.new_limit}` : s.action === 'retire' ? `${s.old_limit} → –` : s.old_limit === s.new_limit ? `${s.new_limit}` : `${s.old_limit} → ${s.new_limit}`;
    for (const v of [s.name, s.action, limit, s.in_use, s.waiters, s.effect]) {
      const td = document.createElement('td');
      td.textContent = String(v);
      tr.append(td);
    }
    return tr;
  });
  tbody.replaceChildren(...rows);
  const other = [];
  const li = text => { const e = document.createElement('li'); e.textContent = text; other.push(e); };
  if (p.enable) li('admission: enabled by this document');
  if (p.disable) li('admission: disabled by this document');
  if (p.partition) li(`partition ${p.partition.selector}: ${p.partition.action}; ${p.partition.effect}`);
  for (const q of p.queue) li(`queue: ${q}`);
  for (const c of p.changes) li(`${c.field}: ${c.old} → ${c.new}${c.effect ? `; ${c.effect}` : ''}`);
  if (p.states.length === 0 && other.length === 0) li('nothing changes');
  $('plan-other').replaceChildren(...other);
  $('plan-meta').textContent = `against generation ${p.generation}`;
  $('plan-out').hidden = false;
}

$('apply').addEventListener('click', async () => {
  const plan = state.plan;
  if (!plan) return;
  $('apply').disabled = true;
  setEditorStatus('Applying…', '');
  try {
    const resp = await api('PUT', '/v1/config', {body: plan.doc, headers: {'If-Match': plan.etag, 'Content-Type': 'application/yaml'}});
    const body = resp.ok ? await resp.json() : await errorOf(resp);
    state.plan = null;
    if (resp.ok) {
      setEditorStatus(body.unchanged ? `Unchanged: the document equals the one in force (generation ${body.generation}).` : `Applied: generation ${body.generation}.`, 'ok');
      $('plan-out').hidden = true;
      await loadConfig(false);
    } else if (resp.status === 412) {
      setEditorStatus(`The configuration moved (${body.error}); the page shows the one in force now: plan again.`, 'error');
      $('plan-out').hidden = true;
      await loadConfig(false);
    } else {
      setEditorStatus(resp.status === 422 ? 'The document is invalid; nothing was applied:' : body.error, 'error');
      showProblems(body);
    }
  } catch (err) {
    if (!(err instanceof Unauthorized)) setEditorStatus(String(err.message || err), 'error');
  }
});

if (state.token) start();
