// The jobctl console: a single-page app over the HTTP API of `jobctl serve`.
//
// It is served by the server itself under /ui/ and authenticated by the
// HttpOnly cookie the login sets; every API request carries the header
// X-Jobctl-Console, which the server requires of cookie-authenticated
// requests that change something (a cross-site form cannot send it).
//
// Pages are hash routes (#/jobs, #/jobs/ID, …). A page renders its frame
// once and then refreshes its data in place on a timer while the tab is
// visible, so that controls keep their focus. Every string from the API
// reaches the page through textContent or attributes, never as HTML.
'use strict';

const API = '/api/v1';
const ROLES = ['read', 'submit', 'operate', 'admin'];
const RUN_STATUSES = ['blocked', 'pending', 'running', 'succeeded', 'failed', 'dead', 'cancelled', 'skipped'];
const FINAL_STATUSES = new Set(['succeeded', 'failed', 'dead', 'cancelled', 'skipped']);
const RETRYABLE_STATUSES = new Set(['dead', 'failed', 'cancelled']);
const DAG_FINAL = new Set(['succeeded', 'failed', 'cancelled']);
const PAGE_SIZE = 50;

// The session: who is logged in, and the current page's timers.
const session = { me: null, generation: 0, timers: [] };

// ---------------------------------------------------------------- HTTP

// An API answer that is not 2xx, with the problem's detail and hint.
class ApiError extends Error {
  constructor(status, problem) {
    super((problem && problem.detail) || `HTTP ${status}`);
    this.status = status;
    this.hint = (problem && problem.hint) || '';
  }
}

// Calls the API; resolves to the parsed JSON body (null when empty).
async function api(path, { method = 'GET', body } = {}) {
  const headers = { 'X-Jobctl-Console': '1', Accept: 'application/json' };
  const init = { method, credentials: 'same-origin', headers };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(API + path, init);
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (e) {
    data = { detail: text.trim() };
  }
  if (res.status === 401) goToLogin();
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

// The cookie is gone or no longer valid: the server shows the login page.
function goToLogin() {
  window.location.assign('/ui/');
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

const enc = encodeURIComponent;

// ---------------------------------------------------------------- DOM

// createElement with attributes and children (strings become text nodes).
// Attributes starting with "on" are event listeners.
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

// The same in the SVG namespace.
function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

function setAttrs(node, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(node, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

function replace(node, ...children) {
  clear(node);
  append(node, children);
}

// Replaces a box's children only when `signature` differs from last time.
function replaceIfChanged(box, signature, make) {
  if (box.dataset.signature === signature) return;
  box.dataset.signature = signature;
  replace(box, make());
}

function $(id) {
  return document.getElementById(id);
}

// A table with column headers; row(item) gives a <tr>. The body is kept
// in `tbody` for refreshes.
function table(id, caption, columns) {
  const tbody = el('tbody');
  const t = el('table', { id, 'data-testid': id },
    el('caption', { class: 'visually-hidden' }, caption),
    el('thead', {}, el('tr', {}, columns.map((c) => el('th', { scope: 'col' }, c)))),
    tbody);
  return { node: el('div', { class: 'table-wrap' }, t), tbody, columns };
}

// Fills the body, unless the items are the same as last time: a refresh
// that changed nothing leaves focus, selection and a pending click alone.
function fillTable(t, items, row, empty) {
  const signature = JSON.stringify(items);
  if (t.signature === signature) return;
  t.signature = signature;
  replace(t.tbody, items.length ? items.map(row)
    : el('tr', { class: 'empty' }, el('td', { colspan: t.columns.length }, empty)));
}

function statusBadge(status, testid) {
  const s = status || 'none';
  return el('span', { class: `status status-${s}`, 'data-testid': testid, 'data-status': s }, s);
}

function link(href, text, attrs = {}) {
  return el('a', { href, ...attrs }, text);
}

// A <dl> of [term, value] pairs; empty values are left out.
function definitions(pairs, id) {
  const dl = el('dl', { class: 'fields', id });
  for (const [term, value] of pairs) {
    if (value === undefined || value === null || value === '') continue;
    dl.append(el('dt', {}, term), el('dd', {}, value));
  }
  return dl;
}

function section(title, id, ...children) {
  const h = el('h2', { id: `${id}-title` }, title);
  return el('section', { id, 'aria-labelledby': `${id}-title` }, h, ...children);
}

// ---------------------------------------------------------------- formatting

function pad(n) {
  return String(n).padStart(2, '0');
}

// An RFC 3339 time as local "YYYY-MM-DD HH:MM:SS" in a <time>.
function timeEl(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const text = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return el('time', { datetime: iso, title: iso }, text);
}

function age(iso) {
  if (!iso) return '';
  const s = Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
  if (s < 90) return `${Math.round(s)}s`;
  if (s < 5400) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

function seconds(s) {
  if (s === null || s === undefined) return '–';
  if (s < 1) return `${Math.round(s * 1000)}ms`;
  if (s < 120) return `${s.toFixed(1)}s`;
  return `${(s / 60).toFixed(1)}m`;
}

function percent(x) {
  return x === null || x === undefined ? '–' : `${(x * 100).toFixed(1)}%`;
}

function commandText(job) {
  if (job.command === null || job.command === undefined) return job.webhook ? `webhook ${job.webhook.url || ''}` : '';
  return Array.isArray(job.command) ? job.command.join(' ') : job.command;
}

function shortId(id) {
  return id ? id.slice(-8) : '';
}

// ---------------------------------------------------------------- messages

function showStatus(text) {
  $('problem') && clear($('problem'));
  if ($('flash')) $('flash').textContent = text;
}

// A problem as its detail, and its hint on a line of its own.
function showProblem(err, what) {
  const box = $('problem');
  if (!box) return;
  const detail = err instanceof ApiError ? err.message : `${err.message || err}`;
  replace(box, el('p', { class: 'detail' }, what ? `${what}: ${detail}` : detail),
    err.hint ? el('p', { class: 'hint' }, err.hint) : null);
}

function clearMessages() {
  if ($('flash')) clear($('flash'));
  if ($('problem')) clear($('problem'));
}

// Runs an action the user asked for, reports its result, then refreshes.
async function act(label, path, { method = 'POST', body, refresh } = {}) {
  try {
    const result = await api(path, { method, body });
    showStatus(`${label}: ${describeResult(result)}`);
  } catch (err) {
    showProblem(err, label);
  }
  if (refresh) await refresh();
}

function describeResult(r) {
  if (!r || typeof r !== 'object') return 'done';
  if (r.result) return r.result;
  if (typeof r.replayed === 'number') return `${r.replayed} replayed`;
  if (typeof r.dismissed === 'number') return `${r.dismissed} dismissed`;
  if (r.run) return `new run ${typeof r.run === 'string' ? r.run : r.run.id || ''}`;
  if (r.run_id) return `new run ${r.run_id}`;
  if (r.status) return r.status;
  return 'done';
}

function can(role) {
  return session.me !== null && ROLES.indexOf(session.me.role) >= ROLES.indexOf(role);
}

// A button for an action the role allows; nothing otherwise.
function actionButton(id, text, onclick, role = 'operate') {
  if (!can(role)) return null;
  return el('button', { id, 'data-testid': id, type: 'button', onclick }, text);
}

// ---------------------------------------------------------------- pages, timers

// Refreshes fn every ms while the page is current and the tab visible;
// a refresh still under way is not started again.
function every(ms, fn) {
  const gen = session.generation;
  let busy = false;
  const tick = async () => {
    if (gen !== session.generation || document.hidden || busy) return;
    busy = true;
    try {
      await fn();
    } finally {
      busy = false;
    }
  };
  session.timers.push(setInterval(tick, ms));
  return tick;
}

function stopTimers() {
  for (const t of session.timers) clearInterval(t);
  session.timers = [];
}

// Whether the page that started a request is still the one shown.
function current(gen) {
  return gen === session.generation;
}

// Calls load and puts what it throws into the alert region.
async function guarded(load) {
  try {
    await load();
  } catch (err) {
    showProblem(err);
  }
}

function pageFrame(title, ...children) {
  document.title = `${title} — jobctl`;
  const main = $('main');
  replace(main, el('h1', { id: 'page-title' }, title), ...children);
  return main;
}

// ---------------------------------------------------------------- jobs

const jobsState = { status: '', queue: '', cursors: [] };

function viewJobs() {
  const t = table('jobs-table', 'Jobs, newest first',
    ['ID', 'Name', 'Queue', 'Priority', 'Status', 'Attempts', 'Created', 'Command']);
  const pager = el('div', { class: 'pager' });
  pageFrame('Jobs', jobFilters(() => { jobsState.cursors = []; load(); }), t.node, pager);
  const gen = session.generation;
  const load = () => guarded(async () => {
    const before = jobsState.cursors[jobsState.cursors.length - 1];
    const jobs = await api(`/jobs${query({ status: jobsState.status, queue: jobsState.queue, before, limit: PAGE_SIZE })}`);
    if (!current(gen)) return;
    fillTable(t, jobs, jobRow, 'No jobs match.');
    renderPager(pager, jobs, load);
  });
  load();
  every(2000, load);
}

function jobFilters(apply) {
  const status = el('select', { id: 'filter-status', name: 'status', onchange: () => { jobsState.status = status.value; apply(); } },
    el('option', { value: '' }, 'any'), RUN_STATUSES.map((s) => el('option', { value: s }, s)));
  status.value = jobsState.status;
  const queue = el('input', { id: 'filter-queue', name: 'queue', type: 'text', value: jobsState.queue, spellcheck: 'false' });
  const form = el('form', { class: 'filters', id: 'jobs-filters', role: 'search',
    onsubmit: (e) => { e.preventDefault(); jobsState.queue = queue.value.trim(); apply(); } },
  el('label', { for: 'filter-status' }, 'Status'), status,
  el('label', { for: 'filter-queue' }, 'Queue'), queue,
  el('button', { type: 'submit', id: 'filter-apply' }, 'Filter'));
  return form;
}

function jobRow(job) {
  const run = job.run || {};
  return el('tr', { 'data-testid': 'job-row', 'data-job-id': job.id, 'data-status': job.status || 'none' },
    el('td', {}, link(`#/jobs/${enc(job.id)}`, job.id, { class: 'id', 'data-testid': 'job-link' })),
    el('td', {}, job.name),
    el('td', {}, job.queue),
    el('td', {}, job.priority),
    el('td', {}, statusBadge(job.status, 'job-status'), job.paused ? ' (paused)' : '',
      job.waiting ? el('div', { class: 'note' }, job.waiting) : null),
    el('td', { class: 'num' }, run.attempts === undefined ? '' : run.attempts),
    el('td', {}, timeEl(job.created_at)),
    el('td', { class: 'command' }, commandText(job)));
}

function renderPager(pager, jobs, load) {
  const last = jobs.length ? jobs[jobs.length - 1].id : '';
  replaceIfChanged(pager, `${jobs.length}|${last}|${jobsState.cursors.length}`, () => [
    el('button', { id: 'jobs-newest', type: 'button', disabled: jobsState.cursors.length === 0,
      onclick: () => { jobsState.cursors = []; load(); } }, 'Newest'),
    el('button', { id: 'jobs-newer', type: 'button', disabled: jobsState.cursors.length === 0,
      onclick: () => { jobsState.cursors.pop(); load(); } }, 'Newer'),
    el('button', { id: 'jobs-older', type: 'button', disabled: jobs.length < PAGE_SIZE,
      onclick: () => { jobsState.cursors.push(last); load(); } }, 'Older'),
  ]);
}

// ---------------------------------------------------------------- one job

function viewJob(id) {
  const gen = session.generation;
  const view = { id, job: null, attempt: null, followLatest: true };
  const summary = el('div', { id: 'job-summary' });
  const actions = el('div', { class: 'actions', id: 'job-actions' });
  const attempts = table('attempts-table', 'Attempts',
    ['Run', 'Attempt', 'Worker', 'Started', 'Finished', 'Duration', 'Outcome', 'Exit', 'Error']);
  const logs = logsSection(view, () => loadLogs());
  const history = table('history-table', 'Changes, newest first', ['At', 'Action', 'Actor', 'Version', 'Details']);
  pageFrame(`Job ${id}`, actions, summary, section('Attempts', 'attempts', attempts.node), logs.node,
    section('History', 'history', history.node));

  const refresh = () => guarded(async () => {
    const [job, all, events] = await Promise.all([
      api(`/jobs/${enc(id)}`), api(`/jobs/${enc(id)}/attempts`), api(`/jobs/${enc(id)}/history?limit=50`)]);
    if (!current(gen)) return;
    view.job = job;
    $('page-title').textContent = `Job ${job.name || job.id}`;
    document.title = `Job ${job.name || job.id} — jobctl`;
    replace(summary, jobFields(job));
    renderJobActions(actions, job, refresh);
    fillTable(attempts, all, attemptRow, 'No attempt yet.');
    fillTable(history, events, historyRow, 'No changes recorded.');
    logs.setAttempts(all.filter((a) => job.run && a.run_id === job.run.id));
    await loadLogs();
  });
  const loadLogs = async () => {
    const n = logs.selected();
    if (!n) return logs.show(null, 'No output yet: the run has not started.');
    try {
      const a = await api(`/jobs/${enc(id)}/logs${query({ attempt: n })}`);
      if (current(gen)) logs.show(a);
    } catch (err) {
      if (current(gen)) logs.show(null, err.message);
    }
  };
  refresh();
  every(2000, () => (view.job && isFinal(view.job) ? Promise.resolve() : refresh()));
}

function isFinal(job) {
  return job.status !== null && FINAL_STATUSES.has(job.status) && !(job.schedule && !job.paused);
}

function jobFields(job) {
  const run = job.run || {};
  const retry = job.retry || {};
  return definitions([
    ['Status', statusBadge(job.status, 'job-detail-status')],
    ['ID', el('span', { id: 'job-id', class: 'id' }, job.id)],
    ['Name', job.name],
    ['Queue', job.queue],
    ['Priority', job.priority],
    ['Command', el('code', {}, commandText(job))],
    ['Working directory', job.cwd],
    ['Runs as', job.user || ''],
    ['Environment', Object.keys(job.env || {}).length ? Object.keys(job.env).join(', ') : ''],
    ['Paused', job.paused ? 'yes' : ''],
    ['Waiting', job.waiting],
    ['Timeout', job.timeout],
    ['Retries', `${retry.retries} (${retry.backoff}, delay ${retry.retry_delay})`],
    ['Schedule', job.schedule ? link(`#/schedules/${enc(job.id)}`, `${job.schedule.cron} (${job.schedule.tz})`) : ''],
    ['DAG run', run.dag_run_id ? link(`#/dags/${enc(run.dag_run_id)}`, `${run.dag_run_id} (node ${run.dag_node})`) : ''],
    ['Run', run.id ? el('span', { class: 'id' }, run.id) : ''],
    ['Attempts', run.attempts],
    ['Created', timeEl(job.created_at)],
    ['Available', timeEl(run.available_at)],
    ['Started', timeEl(run.started_at)],
    ['Finished', timeEl(run.finished_at)],
    ['Exit code', run.exit_code],
    ['Progress', run.progress === null || run.progress === undefined ? ''
      : `${percent(run.progress)} ${run.progress_message || ''}`],
    ['Error', run.error],
    ['Replay of', run.replay_of],
    ['Replayed', timeEl(run.replayed_at)],
    ['Dismissed', timeEl(run.dismissed_at)],
    ['Version', job.version],
    ['Deleted', timeEl(job.deleted_at)],
  ], 'job-fields');
}

function renderJobActions(box, job, refresh) {
  replaceIfChanged(box, `${job.status}|${job.paused}|${retryable(job)}`, () => jobActionButtons(job, refresh));
}

// What POST /jobs/{id}/retry takes: the latest run, and under --on-each
// every agent's run of it (per_agent) that ended dead, failed or cancelled,
// also when the latest succeeded.
function retryable(job) {
  return RETRYABLE_STATUSES.has(job.status) || (job.per_agent || []).some((r) => RETRYABLE_STATUSES.has(r.status));
}

function jobActionButtons(job, refresh) {
  const id = enc(job.id);
  const final = job.status !== null && FINAL_STATUSES.has(job.status);
  const buttons = [
    actionButton('action-cancel', 'Cancel', () => {
      if (window.confirm(`Cancel job ${job.name || job.id}? A running run is killed.`))
        act('Cancel', `/jobs/${id}`, { method: 'DELETE', refresh });
    }),
    actionButton('action-retry', 'Retry', () => act('Retry', `/jobs/${id}/retry`, { refresh })),
    actionButton('action-pause', 'Pause', () => act('Pause', `/jobs/${id}/pause`, { refresh })),
    actionButton('action-resume', 'Resume', () => act('Resume', `/jobs/${id}/resume`, { refresh })),
  ].filter(Boolean);
  const enabled = { 'action-cancel': !final, 'action-retry': retryable(job),
    'action-pause': !job.paused, 'action-resume': job.paused };
  for (const b of buttons) b.disabled = !enabled[b.id];
  return buttons;
}

function attemptRow(a) {
  return el('tr', { 'data-testid': 'attempt-row' },
    el('td', { class: 'id' }, shortId(a.run_id)),
    el('td', { class: 'num' }, a.attempt),
    el('td', {}, a.worker),
    el('td', {}, timeEl(a.started_at)),
    el('td', {}, timeEl(a.finished_at)),
    el('td', { class: 'num' }, a.duration_ms === null ? '' : seconds(a.duration_ms / 1000)),
    el('td', {}, statusBadge(a.outcome)),
    el('td', { class: 'num' }, a.exit_code !== null ? a.exit_code : a.http_status !== null ? `HTTP ${a.http_status}` : ''),
    el('td', {}, a.error));
}

function historyRow(e) {
  return el('tr', {},
    el('td', {}, timeEl(e.at)),
    el('td', {}, e.action),
    el('td', {}, e.actor),
    el('td', { class: 'num' }, e.version),
    el('td', {}, el('code', {}, e.details && Object.keys(e.details).length ? JSON.stringify(e.details) : '')));
}

// The output of one attempt of the job's latest run, with a selector.
function logsSection(view, reload) {
  const select = el('select', { id: 'log-attempt', name: 'attempt',
    onchange: () => { view.followLatest = select.value === select.options[select.options.length - 1]?.value; reload(); } });
  const meta = el('p', { id: 'log-meta', class: 'note' });
  // A log region each, named by its heading, focusable so that a keyboard can scroll it.
  const stream = (name) => el('pre', { id: `log-${name}`, 'data-testid': `log-${name}`, tabindex: '0',
    role: 'log', 'aria-labelledby': `log-${name}-title` });
  const out = stream('stdout');
  const err = stream('stderr');
  const node = section('Output', 'logs',
    el('div', { class: 'filters' }, el('label', { for: 'log-attempt' }, 'Attempt'), select), meta,
    el('h3', { id: 'log-stdout-title' }, 'Standard output'), out, el('h3', { id: 'log-stderr-title' }, 'Standard error'), err);
  return {
    node,
    selected: () => select.value,
    setAttempts(attempts) {
      const keep = view.followLatest ? null : select.value;
      const numbers = attempts.map((a) => String(a.attempt));
      if (numbers.join() === [...select.options].map((o) => o.value).join()) return;
      replace(select, numbers.map((n) => el('option', { value: n }, `Attempt ${n}`)));
      select.value = keep && numbers.includes(keep) ? keep : numbers[numbers.length - 1] || '';
    },
    show(a, note) {
      meta.textContent = a ? `Attempt ${a.attempt} on ${a.worker || '?'}: ${a.outcome}` : note || '';
      out.textContent = a ? a.stdout : '';
      err.textContent = a ? a.stderr : '';
    },
  };
}

// ---------------------------------------------------------------- dead letter

const dlqState = { queue: '', since: '', selected: new Set() };

function viewDeadLetter() {
  const gen = session.generation;
  const t = table('dlq-table', 'Dead runs, newest first',
    ['Select', 'Run', 'Job', 'Queue', 'Died', 'Attempts', 'Error', 'Action']);
  const bulk = el('div', { class: 'actions', id: 'dlq-actions' },
    actionButton('dlq-replay-selected', 'Replay selected', () => onSelected('Replay', '/dead-letter/replay', load)),
    actionButton('dlq-replay-all', 'Replay all matching filter', () => replayAll(load)),
    actionButton('dlq-dismiss-selected', 'Dismiss selected',
      () => onSelected('Dismiss', '/dead-letter/dismiss', load)));
  pageFrame('Dead letter', dlqFilters(() => load()), bulk, t.node);
  const load = () => guarded(async () => {
    const runs = await api(`/dead-letter${query({ queue: dlqState.queue, since: dlqState.since, limit: 200 })}`);
    if (!current(gen)) return;
    const ids = new Set(runs.map((j) => j.run.id));
    for (const id of [...dlqState.selected]) if (!ids.has(id)) dlqState.selected.delete(id);
    fillTable(t, runs, (job) => deadRow(job, load), 'The dead-letter queue is empty.');
    enableSelectedActions();
  });
  load();
  every(5000, load);
}

function dlqFilters(apply) {
  const queue = el('input', { id: 'dlq-queue', name: 'queue', type: 'text', value: dlqState.queue, spellcheck: 'false' });
  const since = el('input', { id: 'dlq-since', name: 'since', type: 'text', value: dlqState.since,
    placeholder: '2h or 2026-01-31T00:00:00Z', 'aria-describedby': 'dlq-since-help' });
  return el('form', { class: 'filters', id: 'dlq-filters', role: 'search', onsubmit: (e) => {
    e.preventDefault();
    dlqState.queue = queue.value.trim();
    dlqState.since = since.value.trim();
    apply();
  } },
  el('label', { for: 'dlq-queue' }, 'Queue'), queue,
  el('label', { for: 'dlq-since' }, 'Died since'), since,
  el('span', { id: 'dlq-since-help', class: 'note' }, 'a duration ago (2h) or an RFC 3339 time'),
  el('button', { type: 'submit', id: 'dlq-apply' }, 'Filter'));
}

function deadRow(job, reload) {
  const run = job.run;
  const box = el('input', { type: 'checkbox', id: `dlq-select-${run.id}`, 'data-testid': 'dlq-select',
    checked: dlqState.selected.has(run.id), disabled: !can('operate'),
    onchange: () => {
      if (box.checked) dlqState.selected.add(run.id);
      else dlqState.selected.delete(run.id);
      enableSelectedActions();
    } });
  return el('tr', { 'data-testid': 'dlq-row', 'data-run-id': run.id, 'data-job-id': job.id },
    el('td', {}, box, el('label', { for: box.id, class: 'visually-hidden' }, `Select run ${run.id}`)),
    el('td', { class: 'id' }, run.id),
    el('td', {}, link(`#/jobs/${enc(run.id)}`, job.name || job.id)),
    el('td', {}, job.queue),
    el('td', {}, timeEl(run.finished_at)),
    el('td', { class: 'num' }, run.attempts),
    el('td', {}, run.error),
    el('td', {}, actionButton(`dlq-replay-${run.id}`, 'Replay',
      () => act(`Replay ${run.id}`, `/dead-letter/${enc(run.id)}/replay`, { refresh: reload })),
    ' ', actionButton(`dlq-dismiss-${run.id}`, 'Dismiss', () => {
      if (!window.confirm(`Dismiss run ${run.id}? It leaves the queue without running again, and stays in history.`)) return;
      act(`Dismiss ${run.id}`, `/dead-letter/${enc(run.id)}/dismiss`, { refresh: reload });
    })));
}

// The buttons that act on the selected runs, usable while one is selected.
function enableSelectedActions() {
  for (const id of ['dlq-replay-selected', 'dlq-dismiss-selected']) {
    const button = $(id);
    if (button) button.disabled = dlqState.selected.size === 0;
  }
}

// verb: 'Replay' or 'Dismiss', at path, for every selected run.
function onSelected(verb, path, reload) {
  const ids = [...dlqState.selected];
  if (!ids.length) return;
  if (verb === 'Dismiss' && !window.confirm(`Dismiss ${ids.length} run(s)? They leave the queue without running again.`)) return;
  dlqState.selected.clear();
  for (const box of document.querySelectorAll('[data-testid="dlq-select"]')) box.checked = false;
  act(`${verb} ${ids.length} run(s)`, path, { body: { ids }, refresh: reload });
}

function replayAll(reload) {
  const body = { all: true };
  if (dlqState.queue) body.queue = dlqState.queue;
  if (dlqState.since) body.since = dlqState.since;
  const scope = `${dlqState.queue ? ` of queue ${dlqState.queue}` : ''}${dlqState.since ? ` dead since ${dlqState.since}` : ''}`;
  if (!window.confirm(`Replay every dead run${scope}?`)) return;
  act('Replay all', '/dead-letter/replay', { body, refresh: reload });
}

// ---------------------------------------------------------------- schedules

function viewSchedules() {
  const gen = session.generation;
  const t = table('schedules-table', 'Schedules, the soonest to fire first',
    ['Name', 'Cron', 'Zone', 'Next fire', 'Last run', 'Paused', 'Action']);
  pageFrame('Schedules', t.node);
  const load = () => guarded(async () => {
    const schedules = await api('/schedules');
    if (current(gen)) fillTable(t, schedules, (s) => scheduleRow(s, load), 'No schedules.');
  });
  load();
  every(5000, load);
}

function scheduleRow(s, reload) {
  const sc = s.schedule || {};
  return el('tr', { 'data-testid': 'schedule-row', 'data-job-id': s.id },
    el('td', {}, link(`#/schedules/${enc(s.id)}`, s.name || s.id, { 'data-testid': 'schedule-link' })),
    el('td', {}, el('code', {}, sc.cron)),
    el('td', {}, sc.tz),
    el('td', {}, s.next_fire ? timeEl(s.next_fire) : 'never'),
    el('td', {}, s.status ? statusBadge(s.status) : '–'),
    el('td', {}, s.paused ? 'paused' : ''),
    el('td', {}, triggerButton(s, reload, `schedule-trigger-${s.id}`)));
}

function triggerButton(s, reload, id) {
  return actionButton(id, 'Trigger now', () => act(`Trigger ${s.name || s.id}`, `/schedules/${enc(s.id)}/trigger`, { refresh: reload }));
}

function viewSchedule(id) {
  const gen = session.generation;
  const summary = el('div', { id: 'schedule-summary' });
  const actions = el('div', { class: 'actions', id: 'schedule-actions' });
  const runs = table('schedule-runs-table', 'Runs, newest first', ['Run', 'Occurrence', 'Status', 'Started', 'Finished', 'Note']);
  pageFrame(`Schedule ${id}`, actions, summary, section('Runs', 'schedule-runs', runs.node));
  const load = () => guarded(async () => {
    const [job, list, history] = await Promise.all([
      api(`/jobs/${enc(id)}`), api('/schedules'), api(`/schedules/${enc(id)}/runs?limit=50`)]);
    if (!current(gen)) return;
    const listed = list.find((s) => s.id === job.id);
    $('page-title').textContent = `Schedule ${job.name || job.id}`;
    replace(summary, scheduleFields(job, listed ? listed.next_fire : null));
    renderScheduleActions(actions, job, load);
    fillTable(runs, history, scheduleRunRow, 'No run is due or done yet.');
  });
  load();
  every(5000, load);
}

function scheduleFields(job, nextFire) {
  const sc = job.schedule || {};
  return definitions([
    ['ID', el('span', { class: 'id' }, job.id)],
    ['Name', job.name],
    ['Kind', job.kind],
    ['Command', commandText(job) ? el('code', {}, commandText(job)) : ''],
    ['Cron', el('code', {}, sc.cron)],
    ['Zone', sc.tz],
    ['Next fire', nextFire ? timeEl(nextFire) : 'never'],
    ['Misfire', sc.misfire],
    ['Overlap', sc.overlap],
    ['Jitter', sc.jitter],
    ['Queue', job.queue],
    ['Paused', job.paused ? 'yes' : 'no'],
    ['Last run', job.status ? statusBadge(job.status) : ''],
    ['Job', link(`#/jobs/${enc(job.id)}`, job.id)],
  ], 'schedule-fields');
}

function renderScheduleActions(box, job, reload) {
  replaceIfChanged(box, String(job.paused), () => scheduleActionButtons(job, reload));
}

function scheduleActionButtons(job, reload) {
  const id = enc(job.id);
  const buttons = [
    triggerButton(job, reload, 'schedule-trigger'),
    actionButton('schedule-pause', 'Pause', () => act('Pause', `/jobs/${id}/pause`, { refresh: reload })),
    actionButton('schedule-resume', 'Resume', () => act('Resume', `/jobs/${id}/resume`, { refresh: reload })),
  ].filter(Boolean);
  for (const b of buttons) {
    if (b.id === 'schedule-pause') b.disabled = job.paused;
    if (b.id === 'schedule-resume') b.disabled = !job.paused;
  }
  return buttons;
}

function scheduleRunRow(r) {
  const isDag = r.dag_run_id && !r.job_id;
  const target = isDag ? link(`#/dags/${enc(r.dag_run_id)}`, r.dag_run_id) : link(`#/jobs/${enc(r.id)}`, r.id);
  return el('tr', { 'data-testid': 'schedule-run-row' },
    el('td', { class: 'id' }, target),
    el('td', {}, r.occurrence ? timeEl(r.occurrence) : '(forced trigger)'),
    el('td', {}, statusBadge(r.status)),
    el('td', {}, timeEl(r.started_at)),
    el('td', {}, timeEl(r.finished_at)),
    el('td', {}, r.error || ''));
}

// ---------------------------------------------------------------- DAGs

function viewDags() {
  const gen = session.generation;
  const t = table('dags-table', 'DAG runs, newest first', ['Run', 'Name', 'Status', 'Nodes', 'Created', 'Finished']);
  pageFrame('DAG runs', t.node);
  const load = () => guarded(async () => {
    const runs = await api('/dags?limit=50');
    if (current(gen)) fillTable(t, runs, dagRow, 'No DAG runs.');
  });
  load();
  every(5000, load);
}

function countsText(counts) {
  return Object.entries(counts || {}).map(([k, v]) => `${v} ${k}`).join(', ');
}

function dagRow(d) {
  return el('tr', { 'data-testid': 'dag-row', 'data-dag-run-id': d.id },
    el('td', {}, link(`#/dags/${enc(d.id)}`, d.id, { class: 'id', 'data-testid': 'dag-link' })),
    el('td', {}, d.name),
    el('td', {}, statusBadge(d.status, 'dag-status')),
    el('td', {}, countsText(d.nodes)),
    el('td', {}, timeEl(d.created_at)),
    el('td', {}, timeEl(d.finished_at)));
}

function viewDag(id) {
  const gen = session.generation;
  const state = { status: null };
  const summary = el('div', { id: 'dag-summary' });
  const actions = el('div', { class: 'actions', id: 'dag-actions' });
  const figure = el('figure', { id: 'dag-figure', class: 'graph' });
  const nodes = table('dag-nodes-table', 'Nodes', ['Node', 'Depends on', 'Status', 'Attempts', 'Job']);
  pageFrame(`DAG run ${id}`, actions, summary, section('Graph', 'dag-graph', figure), section('Nodes', 'dag-nodes', nodes.node));
  const load = () => guarded(async () => {
    const run = await api(`/dags/${enc(id)}/status`);
    if (!current(gen)) return;
    state.status = run.status;
    $('page-title').textContent = `DAG run ${run.name}`;
    replace(summary, definitions([
      ['Status', statusBadge(run.status, 'dag-detail-status')], ['ID', el('span', { class: 'id' }, run.id)],
      ['DAG', run.dag_id], ['On failure', run.on_failure], ['Nodes', countsText(run.counts)],
      ['Created', timeEl(run.created_at)], ['Finished', timeEl(run.finished_at)]], 'dag-fields'));
    renderDagActions(actions, run, load);
    replaceIfChanged(figure, JSON.stringify(run.nodes.map((n) => [n.name, n.run.status])), () => [dagGraph(run),
      el('figcaption', {}, `${run.nodes.length} nodes; an arrow goes from a node to one that depends on it.`)]);
    fillTable(nodes, run.nodes, dagNodeRow, 'No nodes.');
  });
  load();
  every(2000, () => (DAG_FINAL.has(state.status) ? Promise.resolve() : load()));
}

function renderDagActions(box, run, reload) {
  replaceIfChanged(box, run.status, () => dagActionButtons(run, reload));
}

function dagActionButtons(run, reload) {
  const id = enc(run.id);
  const final = DAG_FINAL.has(run.status);
  const buttons = [
    actionButton('dag-cancel', 'Cancel', () => {
      if (window.confirm(`Cancel DAG run ${run.name}? Running nodes are killed.`)) act('Cancel', `/dags/${id}/cancel`, { refresh: reload });
    }),
    actionButton('dag-pause', 'Pause', () => act('Pause', `/dags/${id}/pause`, { refresh: reload })),
    actionButton('dag-resume', 'Resume', () => act('Resume', `/dags/${id}/resume`, { refresh: reload })),
    actionButton('dag-retry', 'Retry', () => act('Retry', `/dags/${id}/retry`, { refresh: reload })),
  ].filter(Boolean);
  const enabled = { 'dag-cancel': !final, 'dag-pause': run.status === 'running', 'dag-resume': run.status === 'paused',
    'dag-retry': run.status === 'failed' || run.status === 'cancelled' };
  for (const b of buttons) b.disabled = !enabled[b.id];
  return buttons;
}

function dagNodeRow(n) {
  return el('tr', { 'data-testid': 'dag-node-row', 'data-node': n.name },
    el('th', { scope: 'row' }, n.name),
    el('td', {}, (n.depends_on || []).join(', ')),
    el('td', {}, statusBadge(n.run.status)),
    el('td', { class: 'num' }, n.run.attempts),
    el('td', {}, link(`#/jobs/${enc(n.run.id)}`, n.job_id, { class: 'id' })));
}

// Each node's layer: 0 for a root, else one more than its deepest parent.
function dagLayers(nodes) {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const depth = new Map();
  const visit = (name, seen) => {
    if (depth.has(name)) return depth.get(name);
    if (seen.has(name)) return 0;  // a cycle cannot come from the store; do not loop if it does
    seen.add(name);
    const parents = (byName.get(name)?.depends_on || []).filter((p) => byName.has(p));
    const d = parents.length ? 1 + Math.max(...parents.map((p) => visit(p, seen))) : 0;
    depth.set(name, d);
    return d;
  };
  const layers = [];
  for (const n of nodes) {
    const d = visit(n.name, new Set());
    (layers[d] = layers[d] || []).push(n);
  }
  return layers.map((l) => l || []);
}

const NODE = { w: 170, h: 48, gapX: 70, gapY: 22, pad: 16 };

// The DAG run as an SVG: layers left to right, edges parent → child.
function dagGraph(run) {
  const layers = dagLayers(run.nodes);
  const pos = new Map();
  layers.forEach((layer, i) => layer.forEach((n, j) => pos.set(n.name, {
    x: NODE.pad + i * (NODE.w + NODE.gapX), y: NODE.pad + j * (NODE.h + NODE.gapY) })));
  const tallest = Math.max(1, ...layers.map((l) => l.length));
  const width = NODE.pad * 2 + layers.length * NODE.w + Math.max(0, layers.length - 1) * NODE.gapX;
  const height = NODE.pad * 2 + tallest * NODE.h + (tallest - 1) * NODE.gapY;
  const root = svg('svg', { id: 'dag-svg', 'data-testid': 'dag-svg', width, height, viewBox: `0 0 ${width} ${height}`,
    role: 'group', 'aria-label': `Graph of DAG run ${run.name}` },
  svg('defs', {}, svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' },
    svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow-head' }))));
  for (const n of run.nodes)
    for (const p of n.depends_on || []) if (pos.has(p)) root.append(dagEdge(pos.get(p), pos.get(n.name), p, n.name));
  for (const n of run.nodes) root.append(dagNode(n, pos.get(n.name)));
  return root;
}

function dagEdge(from, to, parent, child) {
  const x1 = from.x + NODE.w, y1 = from.y + NODE.h / 2, x2 = to.x - 2, y2 = to.y + NODE.h / 2;
  const mid = (x1 + x2) / 2;
  return svg('path', { class: 'dag-edge', 'data-testid': 'dag-edge', 'data-from': parent, 'data-to': child,
    d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`, 'marker-end': 'url(#arrow)' });
}

function dagNode(n, p) {
  const status = n.run.status;
  return svg('a', { href: `#/jobs/${enc(n.run.id)}`, class: `dag-node node-${status}`, 'data-testid': 'dag-node',
    'data-node': n.name, 'data-status': status },  // named by its text: the name, then the status
  svg('rect', { x: p.x, y: p.y, width: NODE.w, height: NODE.h, rx: 6 }),
  svg('text', { x: p.x + 10, y: p.y + 20, class: 'node-name' }, clip(n.name, 20)),
  svg('text', { x: p.x + 10, y: p.y + 38, class: 'node-status' }, status),
  svg('title', {}, `${n.name}: ${status}`));
}

function clip(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

// ---------------------------------------------------------------- workers

function viewWorkers() {
  const gen = session.generation;
  const t = table('workers-table', 'Agents',
    ['Name', 'Host', 'State', 'Leader', 'Queues', 'Labels', 'Running / capacity', 'Heartbeat age', 'Version']);
  pageFrame('Workers', t.node);
  const load = () => guarded(async () => {
    const workers = await api('/workers');
    if (current(gen)) fillTable(t, workers, workerRow, 'No agent has registered.');
  });
  load();
  every(5000, load);
}

function workerRow(w) {
  return el('tr', { 'data-testid': 'worker-row', 'data-worker': w.name },
    el('th', { scope: 'row' }, w.name),
    el('td', {}, w.host),
    el('td', {}, statusBadge(w.state)),
    el('td', {}, w.leader ? el('span', { class: 'leader', 'data-testid': 'worker-leader' }, '★ leader') : ''),
    el('td', {}, (w.queues || []).join(', ')),
    el('td', {}, (w.labels || []).join(', ')),
    el('td', { class: 'num' }, `${w.running} / ${w.capacity}`),
    el('td', { class: 'num' }, el('span', { title: w.heartbeat_at }, age(w.heartbeat_at))),
    el('td', {}, w.version));
}

// ---------------------------------------------------------------- dashboard

function viewDashboard() {
  const gen = session.generation;
  const t = table('stats-table', 'Per queue and priority, over the last hour',
    ['Queue', 'Priority', 'Ready', 'Scheduled', 'Running', 'Succeeded', 'Dead', 'Failure rate', 'Per minute',
      'Lag p99', 'Oldest ready', 'Agents']);
  const charts = el('div', { class: 'charts', id: 'charts' });
  pageFrame('Dashboard', section('Queues', 'queues', t.node), section('Last hour', 'series', charts));
  const load = () => guarded(async () => {
    const [stats, series] = await Promise.all([api('/stats?since=1h'), api('/stats/series?since=1h&step=1m')]);
    if (!current(gen)) return;
    fillTable(t, stats, statsRow, 'No activity in the last hour.');
    renderCharts(charts, series);
  });
  load();
  every(10000, load);
}

function statsRow(s) {
  return el('tr', { 'data-testid': 'stats-row' },
    el('th', { scope: 'row' }, s.queue, s.queue_paused ? ' (paused)' : ''),
    el('td', {}, s.priority),
    ...[s.ready, s.scheduled, s.running, s.succeeded, s.dead].map((v) => el('td', { class: 'num' }, v)),
    el('td', { class: 'num' }, percent(s.failure_rate)),
    el('td', { class: 'num' }, (s.throughput_per_s * 60).toFixed(1)),
    el('td', { class: 'num' }, s.lag_s && s.lag_s.samples ? seconds(s.lag_s.p99) : '–'),
    el('td', { class: 'num' }, seconds(s.oldest_ready_s)),
    el('td', { class: 'num' }, s.live_agents));
}

function renderCharts(box, series) {
  const points = series.points || [];
  // The server's rate of the attempts that ended; none in the step: no point.
  const failure = (p) => p.failure_rate;  // null when no attempt ended in the step
  replace(box,
    chart('chart-throughput', 'Throughput', 'succeeded runs per minute', points, (p) => p.succeeded, { bars: true, fmt: (v) => v.toFixed(0) }),
    chart('chart-failure', 'Failure rate', 'failed attempts / (failed + succeeded), per minute', points, failure,
      { max: 1, fmt: percent }),
    chart('chart-lag', 'Scheduling lag p99', 'seconds from due to start', points, (p) => p.lag_p99_s, { fmt: seconds }));
}

const CHART = { w: 380, h: 170, left: 52, right: 10, top: 10, bottom: 26 };

// One series as bars or a line (broken where a value is null), in a figure.
function chart(id, title, unit, points, value, { bars = false, max, fmt = String } = {}) {
  const values = points.map(value);
  const known = values.filter((v) => v !== null && v !== undefined);
  const top = max || Math.max(...known, 0) || 1;
  const plotW = CHART.w - CHART.left - CHART.right, plotH = CHART.h - CHART.top - CHART.bottom;
  const step = plotW / Math.max(1, points.length);
  const x = (i) => CHART.left + i * step;
  const y = (v) => CHART.top + plotH - (v / top) * plotH;
  const latest = known.length ? fmt(known[known.length - 1]) : 'no data';
  const root = svg('svg', { id, 'data-testid': id, class: 'chart', width: CHART.w, height: CHART.h,
    viewBox: `0 0 ${CHART.w} ${CHART.h}`, role: 'img', 'aria-label': `${title}, ${unit}; latest ${latest}, highest ${fmt(top)}` },
  svg('title', {}, `${title} (${unit})`), chartAxes(points, top, fmt, x, y));
  if (bars) values.forEach((v, i) => v && root.append(svg('rect', { class: 'bar', x: x(i) + 0.5, y: y(v), width: Math.max(1, step - 1), height: CHART.top + plotH - y(v) })));
  else for (const d of linePaths(values, (i) => x(i) + step / 2, y)) root.append(svg('path', { class: 'line', d }));
  return el('figure', { class: 'chart-box' }, root, el('figcaption', {}, el('strong', {}, title), ` — ${unit}. Latest: ${latest}.`));
}

function chartAxes(points, top, fmt, x, y) {
  const g = svg('g', { class: 'axes' });
  const bottom = y(0);
  g.append(svg('line', { x1: CHART.left, y1: bottom, x2: CHART.w - CHART.right, y2: bottom }),
    svg('line', { x1: CHART.left, y1: CHART.top, x2: CHART.left, y2: bottom }),
    svg('text', { x: CHART.left - 4, y: CHART.top + 8, 'text-anchor': 'end' }, fmt(top)),
    svg('text', { x: CHART.left - 4, y: bottom, 'text-anchor': 'end' }, fmt(0)));
  if (points.length) {
    const hhmm = (iso) => { const d = new Date(iso); return `${pad(d.getHours())}:${pad(d.getMinutes())}`; };
    g.append(svg('text', { x: CHART.left, y: CHART.h - 8 }, hhmm(points[0].at)),
      svg('text', { x: CHART.w - CHART.right, y: CHART.h - 8, 'text-anchor': 'end' }, hhmm(points[points.length - 1].at)));
  }
  return g;
}

// Path data for the runs of non-null values.
function linePaths(values, x, y) {
  const paths = [];
  let d = '';
  values.forEach((v, i) => {
    if (v === null || v === undefined) {
      if (d) paths.push(d);
      d = '';
      return;
    }
    d += `${d ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)} `;
  });
  if (d) paths.push(d);
  // A single point draws nothing as a path: make it a small circle.
  return paths.map((p) => (p.includes('L') ? p : `${p}m-2.5,0 a2.5,2.5 0 1,0 5,0 a2.5,2.5 0 1,0 -5,0`));
}

// ---------------------------------------------------------------- not found

function viewNotFound(path) {
  pageFrame('Not found', el('p', {}, `There is no page ${path}. `, link('#/jobs', 'Go to the jobs.')));
}

// ---------------------------------------------------------------- router

const ROUTES = [
  [/^\/jobs$/, viewJobs, 'jobs'],
  [/^\/jobs\/([^/]+)$/, viewJob, 'jobs'],
  [/^\/dead-letter$/, viewDeadLetter, 'dead-letter'],
  [/^\/schedules$/, viewSchedules, 'schedules'],
  [/^\/schedules\/([^/]+)$/, viewSchedule, 'schedules'],
  [/^\/dags$/, viewDags, 'dags'],
  [/^\/dags\/([^/]+)$/, viewDag, 'dags'],
  [/^\/workers$/, viewWorkers, 'workers'],
  [/^\/dashboard$/, viewDashboard, 'dashboard'],
];

function route() {
  const path = window.location.hash.replace(/^#/, '').split('?')[0] || '/jobs';
  stopTimers();
  session.generation += 1;
  clearMessages();
  for (const [re, view, nav] of ROUTES) {
    const m = re.exec(path);
    if (!m) continue;
    let args;
    try {
      args = m.slice(1).map(decodeURIComponent);
    } catch (e) {  // a malformed %-escape typed into the address
      break;
    }
    markNav(nav);
    view(...args);
    return;
  }
  markNav(null);
  viewNotFound(path);
}

function markNav(name) {
  for (const a of document.querySelectorAll('nav a')) {
    if (a.id === `nav-${name}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

// ---------------------------------------------------------------- start

async function loadWhoami() {
  const me = await api('/whoami');
  session.me = me;
  $('whoami-name').textContent = me.name;
  $('whoami-role').textContent = me.role;
}

async function logout() {
  try {
    await fetch('/ui/logout', { method: 'POST', credentials: 'same-origin', headers: { 'X-Jobctl-Console': '1' } });
  } finally {
    goToLogin();
  }
}

// The skip link moves focus without touching the hash the router reads.
function skipToMain(e) {
  e.preventDefault();
  $('main').focus();
}

async function startApp() {
  $('logout').addEventListener('click', logout);
  $('skip-link').addEventListener('click', skipToMain);
  try {
    await loadWhoami();
  } catch (err) {
    showProblem(err, 'Who am I');
  }
  if (!window.location.hash) window.history.replaceState(null, '', '#/jobs');
  window.addEventListener('hashchange', route);
  route();
}

// The login page: a token that reached it (in ?token= or via the form's
// ?error=bad-token) was not accepted; the token leaves the address bar.
function startLogin() {
  const params = new URLSearchParams(window.location.search);
  if (params.get('error') === 'bad-token' || params.has('token')) {
    $('login-error').textContent = 'That token is not valid';
    if (params.has('token')) window.history.replaceState(null, '', '/ui/?error=bad-token');
  }
  $('token').focus();
}

document.addEventListener('DOMContentLoaded', () => {
  if (document.body.dataset.page === 'login') startLogin();
  else startApp();
});
