// pushdrain status page. Reads GET ops/status (function key) every few seconds and draws it;
// POST ops/redrive (admin key) from the poison and Service Bus sections. Keys live in memory only: typed in,
// or read once from the URL fragment (#key=…&refresh=ms), which is then removed from the URL. With
// PUSHDRAIN_AUTH=entra a pasted token (a dev token locally) is sent as a bearer token instead, and the
// page hides what the token's roles do not allow (elements marked data-role); the app checks again.
'use strict';
(() => {
  const state = { key: '', token: '', roles: null, refreshMs: 2000, timer: 0, loaded: false };
  const $ = (id) => document.getElementById(id);
  const fmt = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'));

  function readFragment() {
    const p = new URLSearchParams(location.hash.slice(1));
    if (p.has('state')) return; // MSAL's sign-in response (a code and its state): not a function key
    const key = p.get('key') ?? p.get('code');
    if (key !== null) state.key = key;
    const refresh = Number(p.get('refresh'));
    if (refresh >= 250 && refresh <= 60000) state.refreshMs = refresh;
    if (p.has('key') || p.has('code')) {
      p.delete('key');
      p.delete('code');
      const rest = p.toString();
      history.replaceState(null, '', location.pathname + location.search + (rest ? `#${rest}` : ''));
    }
  }

  /** Builds an element; children are nodes or text (never parsed as HTML). */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat()) if (c !== undefined && c !== null) el.append(c instanceof Node ? c : String(c));
    return el;
  }

  function fill(tbodyOf, rows) {
    const body = $(tbodyOf).tBodies[0];
    body.replaceChildren(...rows);
  }

  function age(seconds) {
    if (seconds === null || seconds === undefined) return '–';
    if (seconds < 90) return `${Math.round(seconds)} s`;
    if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
    return `${(seconds / 3600).toFixed(1)} h`;
  }

  const since = (iso, now) => (iso ? age((now - Date.parse(iso)) / 1000) + ' ago' : '–');
  const ms = (n) => (n === undefined ? '–' : n < 10000 ? `${fmt(n)} ms` : `${(n / 1000).toFixed(1)} s`);

  function headers(key) {
    return {
      ...(key ? { 'x-functions-key': key } : {}),
      ...(state.token ? { Authorization: `Bearer ${state.token}` } : {}),
    };
  }

  // The token's claims, read only to decide what to show: the app validates the token on every request.
  function claimsOf(token) {
    try {
      const part = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
      return JSON.parse(atob(part.padEnd(part.length + ((4 - (part.length % 4)) % 4), '=')));
    } catch {
      return null;
    }
  }

  const allows = (role) => state.roles === null || state.roles.includes(role);

  function showRoles() {
    for (const el of document.querySelectorAll('[data-role]')) el.hidden = !allows(el.dataset.role);
    for (const el of document.querySelectorAll('.redrive-batch')) el.hidden = !allows('Operations.Admin');
  }

  // Who submitted a batch (token callers only): the name, else the object id; the app id on hover.
  function submitter(b) {
    if (!b.submitter) return '';
    const s = b.submitter;
    return h(
      'span',
      { class: 'muted submitter', title: `oid ${s.objectId}${s.appId ? `, app ${s.appId}` : ''}` },
      ` ${s.name || s.objectId}`,
    );
  }

  function showError(text) {
    const el = $('error');
    el.hidden = !text;
    el.textContent = text || '';
  }

  // Says what the app answered and points at the credential it asked for: a token where the app
  // wants one (it names the roles, or challenges with Bearer), else the function key.
  function refused(res, body) {
    if (state.token) {
      showError(`Refused (${res.status}): ${body.message || 'the token was not accepted'}`);
      return $('token').focus();
    }
    const wantsToken = Array.isArray(body.requiredRoles) || /^bearer/i.test(res.headers.get('www-authenticate') || '');
    if (!wantsToken) {
      showError(`The function key was refused (${res.status}). Enter it above.`);
      return $('key').focus();
    }
    const msal = !$('msal-sign-in').hidden;
    const how = msal
      ? 'Sign in with Microsoft, or paste a token into "Entra token"'
      : 'Paste a token into "Entra token"';
    showError(`Refused (${res.status}): ${body.message || 'a bearer token is required'}. ${how} above.`);
    (msal ? $('msal-sign-in') : $('token')).focus();
  }

  async function poll() {
    clearTimeout(state.timer);
    await freshToken();
    if (state.token && !allows('Batches.Read')) return pollMine(); // a submitter: its own batches only
    try {
      const res = await fetch('ops/status', { headers: headers(state.key), cache: 'no-store' });
      if (res.status === 401 || res.status === 403) {
        const body = await res.json().catch(() => ({}));
        refused(res, body);
        return; // no retry loop with a wrong key
      }
      if (!res.ok) throw new Error(`status ${res.status}: ${(await res.text()).slice(0, 200)}`);
      render(await res.json());
      showRoles();
      showError('');
    } catch (e) {
      showError(`Could not read the status: ${e.message}`);
    }
    state.timer = setTimeout(poll, state.refreshMs);
  }

  function tile(label, value, bad, title) {
    return h('div', { class: bad ? 'tile bad' : 'tile', title }, h('b', {}, value), h('span', {}, label));
  }

  function render(s) {
    const now = Date.parse(s.generatedAt);
    $('instance').textContent = `instance ${s.instance.id}, up ${age(s.instance.uptimeSeconds)}`;
    $('updated').textContent = `updated ${new Date(now).toLocaleTimeString()}`;
    const input = s.queues.filter((q) => q.role === 'input').reduce((n, q) => n + q.depth, 0);
    const results = s.queues.filter((q) => q.role === 'output').reduce((n, q) => n + q.depth, 0);
    const dead = s.serviceBus.available ? s.serviceBus.entities.reduce((n, e) => n + e.deadLetters, 0) : null;
    $('tiles').replaceChildren(
      tile('queued chunks (input)', fmt(input)),
      tile('queued results', fmt(results)),
      tile('poison messages', fmt(s.poison.total), s.poison.total > 0),
      tile('dead letters', fmt(dead), dead > 0),
      tile('drains here (tasks)', `${fmt(s.drains.running)} (${fmt(s.drains.tasks)})`),
      // Work done twice here (a message taken by another delivery) and slot leases lost: overload.
      tile(
        'chunks done twice / drains cut short here',
        `${fmt(s.drains.duplicates)} / ${fmt(s.drains.leasesLost)}`,
        s.drains.duplicates > 0 || s.drains.leasesLost > 0,
        'Chunks done twice: work finished here on a message that another drain had taken meanwhile ' +
          '(it became visible again before this one deleted it); harmless, the report counts each chunk once. ' +
          "Drains cut short: drains here that lost their queue's drain slot (a blob lease) and stopped taking work. " +
          'Both stay at 0 unless the app is overloaded (a starved CPU, a slow Storage).',
      ),
      tile('open batches', fmt(s.batches.counts.accepted + s.batches.counts.processing)),
    );
    renderCharts(s);
    renderBatches(s, now);
    renderQueues(s);
    renderPoison(s);
    renderDeliveries(s, now);
    renderBus(s);
    renderCost(s);
    if (!state.loaded) {
      state.loaded = true;
      document.body.dataset.loaded = 'true';
    }
  }

  function progress(b) {
    const settled = b.chunksDone + b.chunksFailed;
    const pct = b.chunks > 0 ? (100 * settled) / b.chunks : 0;
    const fillEl = h('div', {});
    fillEl.style.width = `${pct.toFixed(1)}%`;
    return h(
      'div',
      {
        class: b.chunksFailed > 0 ? 'bar failed' : 'bar',
        role: 'progressbar',
        'aria-valuemin': 0,
        'aria-valuemax': b.chunks,
        'aria-valuenow': settled,
        'aria-label': `batch ${b.batchId}`,
      },
      fillEl,
    );
  }

  function renderBatches(s, now) {
    const { open, recent, counts, scanned, truncated } = s.batches;
    $('open-count').textContent =
      `${fmt(counts.accepted + counts.processing)} open of ${fmt(scanned)} batches${truncated ? ' (listing truncated)' : ''}`;
    $('recent-count').textContent =
      `${fmt(counts.completed)} completed, ${fmt(counts.failed)} failed${recent.length > 10 ? '; the latest 10' : ''}`;
    fill(
      'open-batches',
      open.map((b) =>
        h(
          'tr',
          { 'data-batch': b.batchId },
          h('td', {}, h('code', {}, b.batchId), submitter(b)),
          h('td', { class: `status status-${b.status}` }, b.status),
          h('td', {}, progress(b)),
          h(
            'td',
            {},
            `${fmt(b.chunksDone)}/${fmt(b.chunks)}${b.chunksFailed ? `, ${fmt(b.chunksFailed)} failed` : ''}`,
          ),
          h('td', {}, fmt(b.transactions)),
          h('td', {}, since(b.submittedAt, now)),
        ),
      ),
    );
    fill(
      'recent-batches',
      recent
        .slice(0, 10)
        .map((b) =>
          h(
            'tr',
            { 'data-batch': b.batchId },
            h('td', {}, h('code', {}, b.batchId), submitter(b)),
            h('td', { class: `status status-${b.status}`, title: b.error || '' }, b.status),
            h('td', {}, fmt(b.transactions)),
            h('td', {}, ms(b.latencyMs)),
            h('td', {}, since(b.completedAt, now)),
            h(
              'td',
              {},
              b.status === 'completed'
                ? [
                    h('button', { type: 'button', onclick: () => download(b.batchId, 'json') }, 'JSON'),
                    ' ',
                    h('button', { type: 'button', onclick: () => download(b.batchId, 'csv') }, 'CSV'),
                  ]
                : h('span', { class: 'muted' }, (b.error || '').slice(0, 80)),
            ),
          ),
        ),
    );
  }

  async function download(batchId, kind) {
    const res = await fetch(`batches/${encodeURIComponent(batchId)}/report${kind === 'csv' ? '?format=csv' : ''}`, {
      headers: headers(state.key),
    });
    if (!res.ok) return showError(`report ${batchId}: ${res.status}`);
    const url = URL.createObjectURL(await res.blob());
    const a = h('a', { href: url, download: `${batchId}.${kind}` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  function renderQueues(s) {
    const draining = new Map(s.drains.byQueue.map((d) => [d.queue, d]));
    fill(
      'queues',
      s.queues.map((q) => {
        const d = draining.get(q.name);
        return h(
          'tr',
          { 'data-queue': q.name },
          h('td', {}, q.name),
          h('td', {}, q.role),
          h('td', { class: 'depth' }, fmt(q.depth)),
          h('td', {}, age(q.oldestAgeSeconds)),
          h('td', { class: 'poison-depth' }, fmt(q.poison.depth)),
          h('td', {}, age(q.poison.oldestAgeSeconds)),
          h('td', {}, d ? `${d.state}, ${d.tasks} tasks (peak ${d.peakTasks})` : '–'),
        );
      }),
    );
  }

  // The poison rows as last drawn: they are drawn again only when they change, because a table
  // rebuilt between a click's press and its release swallows the click (the page polls often).
  let poisonDrawn = '';

  function renderPoison(s) {
    $('poison-count').textContent =
      `${fmt(s.poison.total)} message(s)${s.poison.shown.length < s.poison.total ? `, ${s.poison.shown.length} shown` : ''}`;
    const drawn = JSON.stringify(s.poison.shown);
    if (drawn === poisonDrawn) return;
    poisonDrawn = drawn;
    fill(
      'poison',
      s.poison.shown.map((p) =>
        h(
          'tr',
          { 'data-poison': p.messageId },
          h('td', {}, p.queue),
          h('td', {}, p.batchId ? h('code', {}, p.batchId) : '–'),
          h('td', {}, p.chunk ?? '–'),
          h('td', { class: 'reason' }, p.reason),
          h('td', {}, p.at ? new Date(p.at).toLocaleString() : '–'),
          h('td', {}, fmt(p.dequeueCount)),
          h(
            'td',
            {},
            p.batchId
              ? h(
                  'button',
                  { type: 'button', class: 'redrive-batch', onclick: () => redrive({ batchId: p.batchId }) },
                  'Redrive batch',
                )
              : '',
          ),
        ),
      ),
    );
  }

  async function redrive(body) {
    const dead = body.deadLetters === true;
    const out = $(dead ? 'dead-letter-result' : 'redrive-result');
    out.textContent = 'redriving…';
    try {
      const res = await fetch('ops/redrive', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...headers($('admin-key').value) },
        body: JSON.stringify(body),
      });
      const json = await res.json().catch(() => ({}));
      if (res.status === 401 || res.status === 403) out.textContent = `the admin key was refused (${res.status})`;
      else if (!res.ok) out.textContent = `redrive failed: ${json.message || res.status}`;
      else if (dead) out.textContent = deadLetterOutcome(json);
      else
        out.textContent = `moved ${json.moved} message(s) back${json.reopenedBatches.length ? `; reopened ${json.reopenedBatches.join(', ')}` : ''}`;
    } catch (e) {
      out.textContent = `redrive failed: ${e.message}`;
    }
    poll();
  }

  // ---- event deliveries: pending, retrying, poisoned; "send a test event" ----
  function renderDeliveries(s, now) {
    const d = s.deliveries;
    if (!d) return;
    const more = d.moreBatches > 0 ? ` and ${fmt(d.moreBatches)} more batch(es)` : '';
    $('deliveries-count').textContent =
      `${fmt(d.pending)} pending, ${fmt(d.retrying)} retrying${more}; ${fmt(d.poisoned.depth)} poisoned`;
    const last = (status, error) => error || (status === undefined ? '–' : `HTTP ${status}`);
    const row = (x, state, next) =>
      h(
        'tr',
        { 'data-delivery': x.eventId, 'data-state': state },
        h('td', {}, h('code', {}, x.batchId)),
        h('td', {}, x.eventType.replace(/^com\.pushdrain\./, '')),
        h('td', { class: 'target' }, `${x.kind} ${x.target}`),
        h('td', { class: `state delivery-${state}` }, state),
        h('td', { class: 'attempts' }, fmt(x.attempts)),
        h('td', {}, next),
        h('td', { class: 'reason' }, last(x.lastStatus, x.lastError)),
      );
    const inFuture = (iso) => (Date.parse(iso) > now ? `in ${age((Date.parse(iso) - now) / 1000)}` : 'due');
    fill('deliveries', [
      ...d.shown.map((x) => row(x, x.state, inFuture(x.nextAttemptAt))),
      ...d.poisoned.shown.map((x) => row(x, 'poisoned', `redrive (${since(x.at, now)})`)),
    ]);
  }

  async function testWebhooks() {
    const out = $('webhook-test-result');
    out.textContent = 'sending…';
    try {
      const res = await fetch('ops/webhooks/test', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...headers($('admin-key').value) },
        body: '{}',
      });
      const json = await res.json().catch(() => ({}));
      if (res.status === 401 || res.status === 403) out.textContent = `the admin key was refused (${res.status})`;
      else if (!res.ok) out.textContent = `test event not sent: ${json.message || res.status}`;
      else
        out.replaceChildren(
          ...json.targets.map((t) =>
            h(
              'div',
              { class: t.ok ? 'test-ok' : 'test-failed', 'data-target': t.target },
              `${t.target}: ${t.ok ? 'ok' : 'failed'}${t.status === undefined ? '' : `, HTTP ${t.status}`}, ${ms(t.ms)}${t.error ? `: ${t.error}` : ''}`,
            ),
          ),
        );
    } catch (e) {
      out.textContent = `test event not sent: ${e.message}`;
    }
  }

  function deadLetterOutcome(r) {
    const where = Object.entries(r.byEntity)
      .filter(([, n]) => n > 0)
      .map(([e, n]) => `${e}: ${n}`);
    const failed = Object.entries(r.failed).map(([e, err]) => `${e} failed: ${err}`);
    return [
      `resubmitted ${r.moved} dead letter(s)${where.length ? ` (${where.join(', ')})` : ''}`,
      r.kept.length ? `${r.kept.length} kept (unreadable)` : '',
      ...failed,
    ]
      .filter(Boolean)
      .join('; ');
  }

  function renderBus(s) {
    const bus = s.serviceBus;
    if (!bus.available) {
      $('bus-note').textContent = `Not available: ${bus.reason}`;
      fill('bus', []);
      fill('dead-letters', []);
      return;
    }
    $('bus-note').textContent = `Counted by peeking (Listen right only), up to ${bus.limit} per entity.`;
    const at = (truncated, n) => `${truncated ? '≥' : ''}${fmt(n)}`;
    fill(
      'bus',
      bus.entities.map((e) =>
        h(
          'tr',
          { 'data-entity': e.entity },
          h('td', {}, e.entity),
          h('td', {}, at(e.truncated, e.active)),
          h('td', {}, fmt(e.scheduled)),
          h('td', { class: 'dead' }, at(e.deadLettersTruncated, e.deadLetters)),
          h('td', { class: 'muted' }, e.error || ''),
        ),
      ),
    );
    fill(
      'dead-letters',
      bus.entities.flatMap((e) =>
        e.deadLettered.map((d) =>
          h(
            'tr',
            { 'data-entity': e.entity },
            h('td', {}, e.entity),
            h('td', { class: 'reason' }, d.reason),
            h('td', { class: 'reason' }, d.description || ''),
            h('td', {}, new Date(d.enqueuedAt).toLocaleString()),
            h('td', {}, h('code', {}, d.body)),
          ),
        ),
      ),
    );
  }

  // Only time with no work in flight counts as idle. An hourly rate only once the app gives one (after
  // enough idle time for it to mean something); before that, the count and the idle time it covers.
  function idleTile(w) {
    if (w.idlePerHour !== null)
      return tile(`idle Storage tx per hour (${age(w.idleSeconds)} idle)`, fmt(Math.round(w.idlePerHour)));
    if (!w.idleSeconds) return tile('idle Storage tx', 'no idle period yet');
    return tile(
      `idle Storage tx in ${age(w.idleSeconds)} idle (a rate per hour after ${age(w.idleRateAfterSeconds)} of idle)`,
      fmt(w.idleStorageTransactions),
    );
  }

  function renderCost(s) {
    const w = s.storage.window;
    const status = s.storage.statusRequests.total || 0;
    $('cost').replaceChildren(
      tile(
        `Storage tx per 1,000 business tx (last ${age(w.seconds)})`,
        w.perThousand === null ? '–' : w.perThousand.toFixed(1),
      ),
      idleTile(w),
      tile(`Storage tx in window, ${fmt(w.businessTransactions)} billed`, fmt(w.storageTransactions)),
      tile('Storage tx since start', fmt(s.storage.byOperation.total)),
      tile('Storage tx of status reads', fmt(status)),
    );
    fill(
      'storage-ops',
      Object.entries(s.storage.byOperation)
        .filter(([k]) => k !== 'total')
        .map(([k, v]) => h('tr', {}, h('td', {}, k), h('td', {}, fmt(v)))),
    );
  }

  // ---- charts: hand-drawn SVG polylines over the history buckets ----
  const W = 600;
  const H = 170;
  const PAD = { l: 44, r: 8, t: 8, b: 22 };
  const SVG = 'http://www.w3.org/2000/svg';
  const svg = (tag, attrs, text) => {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    if (text !== undefined) el.textContent = text;
    return el;
  };

  function niceMax(v) {
    if (v <= 1) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    return [1, 2, 5, 10].map((m) => m * p).find((m) => m >= v);
  }

  /** series: [{name, values: (number|null)[]}] over the same buckets; null breaks the line. */
  function chart(id, legendId, series, minutes) {
    const el = $(id);
    const n = Math.max(2, ...series.map((s) => s.values.length));
    const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values.filter((v) => v !== null))));
    const x = (i) => PAD.l + ((W - PAD.l - PAD.r) * i) / (n - 1);
    const y = (v) => H - PAD.b - ((H - PAD.t - PAD.b) * v) / max;
    const parts = [
      svg('line', { class: 'axis', x1: PAD.l, y1: y(0), x2: W - PAD.r, y2: y(0) }),
      svg('line', { class: 'axis', x1: PAD.l, y1: y(max), x2: W - PAD.r, y2: y(max) }),
      svg('text', { x: PAD.l - 4, y: y(max) + 4, 'text-anchor': 'end' }, fmt(max)),
      svg('text', { x: PAD.l - 4, y: y(0) + 4, 'text-anchor': 'end' }, '0'),
      svg('text', { x: PAD.l, y: H - 4 }, `−${minutes} min`),
      svg('text', { x: W - PAD.r, y: H - 4, 'text-anchor': 'end' }, 'now'),
    ];
    series.forEach((s, k) => {
      let run = [];
      const flush = () => {
        if (run.length === 1) run.push(`${Number(run[0].split(',')[0]) + 2},${run[0].split(',')[1]}`);
        if (run.length > 1) parts.push(svg('polyline', { class: `s${k % 6}`, points: run.join(' ') }));
        run = [];
      };
      s.values.forEach((v, i) =>
        v === null ? flush() : run.push(`${x(i + n - s.values.length).toFixed(1)},${y(v).toFixed(1)}`),
      );
      flush();
    });
    el.replaceChildren(...parts);
    $(legendId).replaceChildren(...series.map((s, k) => h('span', { class: `s${k % 6}` }, s.name)));
  }

  function renderCharts(s) {
    const points = s.history.points.slice(-90); // the last 15 minutes of 10 s buckets
    const minutes = Math.max(1, Math.round((points.length * s.history.bucketSeconds) / 60));
    const queues = s.queues.map((q) => q.name);
    const depthSeries = queues.map((q) => ({
      name: q,
      values: points.map((p) => (p.depths && q in p.depths ? p.depths[q] : null)),
    }));
    // Chunks are queue messages, so what was billed per bucket reads on the same scale as the depths.
    depthSeries.push({ name: 'chunks billed', values: points.map((p) => p.chunks ?? 0) });
    chart('chart-depth', 'legend-depth', depthSeries, minutes);
    const per = s.history.bucketSeconds;
    chart(
      'chart-throughput',
      'legend-throughput',
      [
        { name: 'billed', values: points.map((p) => p.billed / per) },
        { name: 'accepted', values: points.map((p) => p.accepted / per) },
      ],
      minutes,
    );
    chart('chart-storage', 'legend-storage', [{ name: 'app', values: points.map((p) => p.storage / per) }], minutes);
  }

  $('key-form').addEventListener('submit', (e) => {
    e.preventDefault();
    state.key = $('key').value;
    poll();
  });
  $('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    signInWith($('token').value.trim());
    $('token').value = '';
  });
  function signInWith(token) {
    state.token = token;
    $('mine').hidden = true;
    const claims = state.token ? claimsOf(state.token) : null;
    state.roles = claims ? (Array.isArray(claims.roles) ? claims.roles : []) : null;
    $('who').textContent = claims
      ? `signed in as ${claims.name || claims.oid || 'unknown'} (${state.roles.join(', ') || 'no role'})`
      : '';
    $('sign-out').hidden = !state.token;
    showRoles();
    showError('');
    poll();
  }
  $('find-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const id = $('find-id').value.trim();
    const out = $('find-result');
    if (!id) return;
    const res = await fetch(`batches/${encodeURIComponent(id)}`, { headers: headers(state.key) }).catch((err) => ({
      ok: false,
      status: err.message,
    }));
    if (!res.ok) {
      out.textContent = res.status === 404 ? `no batch ${id}` : `lookup failed: ${res.status}`;
      return;
    }
    const b = await res.json();
    out.replaceChildren(
      h('code', {}, b.batchId),
      ' ',
      h('span', { class: `status-${b.status}` }, b.status),
      ` ${fmt(b.chunksDone)}/${fmt(b.chunks)} chunks${b.chunksFailed ? `, ${fmt(b.chunksFailed)} failed` : ''}, ${fmt(b.transactions)} transactions, submitted ${since(b.submittedAt, Date.now())}`,
      b.error ? h('div', { class: 'status-failed' }, b.error) : '',
      b.cost ? h('div', {}, costText(b.cost)) : '',
    );
    showTimeline(b.batchId);
  });
  $('redrive-form').addEventListener('submit', (e) => {
    e.preventDefault();
    redrive({});
  });
  $('webhook-test-form').addEventListener('submit', (e) => {
    e.preventDefault();
    testWebhooks();
  });
  $('dead-letter-form').addEventListener('submit', (e) => {
    e.preventDefault();
    redrive({ deadLetters: true });
  });

  /** What a batch used (the status body's `cost`) and its estimate at list prices. */
  function costText(c) {
    const cpu = c.cpuMs.ingest + c.cpuMs.map + c.cpuMs.reduce;
    const e = c.estimate;
    return `cost: ${fmt(c.storageTransactions)} storage transactions, ${fmt(c.serviceBusOperations)} Service Bus operations, CPU ${cpu.toFixed(1)} ms; est. $${e.perBatch.toPrecision(3)} per batch, $${e.per1000Transactions.toPrecision(3)} per 1,000 transactions (${e.pricesAsOf ? `list prices of ${e.pricesAsOf}` : 'your prices'})`;
  }

  // ---- batch timeline: where one batch's time went (GET batches/{id}/timeline), as a waterfall ----
  const timeline = { id: '', timer: 0 };

  async function showTimeline(batchId) {
    clearTimeout(timeline.timer);
    timeline.id = batchId;
    $('timeline-section').hidden = false;
    $('timeline-title').textContent = batchId;
    const res = await fetch(`batches/${encodeURIComponent(batchId)}/timeline`, {
      headers: headers(state.key),
      cache: 'no-store',
    }).catch((err) => ({ ok: false, status: err.message }));
    if (timeline.id !== batchId) return; // another batch was asked for meanwhile
    if (!res.ok) {
      $('batch-timeline').replaceChildren(
        h('p', { class: 'muted' }, res.status === 404 ? `no batch ${batchId}` : `timeline failed: ${res.status}`),
      );
      return;
    }
    const t = await res.json();
    renderTimeline(t);
    // A batch still in work: follow it at a calmer pace than the status.
    if (t.status !== 'completed' && t.status !== 'failed')
      timeline.timer = setTimeout(() => showTimeline(batchId), Math.max(2000, state.refreshMs * 2));
  }

  function renderTimeline(t) {
    const open = t.status !== 'completed' && t.status !== 'failed';
    const elapsed = open ? Math.max(0, Date.now() - Date.parse(t.submittedAt)) : 0;
    const total = Math.max(1, elapsed, ...t.steps.map((s) => s.endMs ?? s.startMs));
    const pct = (v) => `${Math.min(100, (100 * v) / total).toFixed(2)}%`;
    const rows = t.steps.map((s) => {
      const end = s.endMs ?? Math.max(s.startMs, elapsed);
      const bar = h('div', { class: `tl-bar tl-${s.step}${s.endMs === undefined ? ' tl-open' : ''}` });
      bar.style.left = pct(s.startMs);
      bar.style.width = pct(Math.max(0, end - s.startMs));
      const what = s.delivery
        ? `${s.delivery.kind}: ${s.delivery.state} (${fmt(s.delivery.attempts)} attempt${s.delivery.attempts === 1 ? '' : 's'})`
        : s.chunks !== undefined
          ? `${s.label}: ${fmt(s.chunks)}`
          : s.label;
      const when =
        s.endMs === undefined
          ? `${ms(s.startMs)} → …`
          : `${ms(s.startMs)} → ${ms(s.endMs)} (${ms(s.endMs - s.startMs)})`;
      return h(
        'div',
        { class: 'tl-row', 'data-step': s.step },
        h('span', { class: 'tl-label' }, what),
        h('div', { class: 'tl-track' }, bar),
        h('span', { class: 'tl-time' }, when),
      );
    });
    if (t.buckets) {
      const series = (label, counts, cls) => {
        const peak = Math.max(1, ...counts);
        const cols = counts.map((n, i) => {
          if (!n) return null;
          const from = i * t.buckets.bucketMs;
          const col = h('div', {
            class: `tl-col tl-${cls}`,
            title: `${fmt(n)} chunk(s) ${ms(from)}–${ms(from + t.buckets.bucketMs)} after submission`,
          });
          col.style.left = pct(from);
          col.style.width = pct(t.buckets.bucketMs);
          col.style.height = `${Math.max(8, (100 * n) / peak).toFixed(0)}%`;
          return col;
        });
        return h(
          'div',
          { class: 'tl-row tl-series', 'data-series': cls },
          h('span', { class: 'tl-label' }, `${label} per ${ms(t.buckets.bucketMs)}`),
          h('div', { class: 'tl-track' }, cols),
          h('span', { class: 'tl-time' }, `peak ${fmt(Math.max(0, ...counts))}`),
        );
      };
      rows.push(series('chunks billed', t.buckets.billed, 'map'), series('chunks folded', t.buckets.reduced, 'reduce'));
    }
    const work = t.map
      ? `; map work ${ms(t.map.workMs)} summed${t.map.slowest ? `, slowest chunk ${t.map.slowest.chunk} (${ms(t.map.slowest.ms)})` : ''}`
      : '';
    $('batch-timeline').replaceChildren(
      h(
        'p',
        { class: 'tl-summary' },
        h('span', { class: `status-${t.status}` }, t.status),
        ` ${fmt(t.transactions)} transactions in ${fmt(t.chunks)} chunks, ${open ? `${ms(elapsed)} so far` : `${ms(total)} from submission`}${work}`,
      ),
      ...rows,
    );
  }

  // A row of the batch tables (a submitter's own too) shows that batch's timeline (its buttons keep their own action).
  for (const id of ['open-batches', 'recent-batches', 'my-batches'])
    $(id).addEventListener('click', (e) => {
      const row = e.target.closest('tr[data-batch]');
      if (row && !e.target.closest('button')) showTimeline(row.dataset.batch);
    });

  // ---- a submitter's own batches (GET batches: the app lists only the caller's) ----
  async function pollMine() {
    try {
      const res = await fetch('batches?limit=20', { headers: headers(state.key), cache: 'no-store' });
      const body = await res.json().catch(() => ({}));
      if (!res.ok) return showError(`Could not list your batches (${res.status}): ${body.message || ''}`);
      renderMine(body);
    } catch (e) {
      showError(`Could not list your batches: ${e.message}`);
    }
    state.timer = setTimeout(poll, state.refreshMs);
  }

  function renderMine(page) {
    $('mine').hidden = false;
    $('mine-count').textContent =
      `${fmt(page.batches.length)} shown, newest first${page.next ? '; older ones not shown' : ''}`;
    const now = Date.now();
    fill(
      'my-batches',
      page.batches.map((b) =>
        h(
          'tr',
          { 'data-batch': b.batchId },
          h('td', {}, h('code', {}, b.batchId)),
          h('td', { class: `status status-${b.status}`, title: b.error || '' }, b.status),
          h(
            'td',
            {},
            `${fmt(b.chunksDone)}/${fmt(b.chunks)}${b.chunksFailed ? `, ${fmt(b.chunksFailed)} failed` : ''}`,
          ),
          h('td', {}, fmt(b.transactions)),
          h('td', {}, since(b.submittedAt, now)),
          h(
            'td',
            {},
            b.status === 'completed'
              ? [
                  h('button', { type: 'button', onclick: () => download(b.batchId, 'json') }, 'JSON'),
                  ' ',
                  h('button', { type: 'button', onclick: () => download(b.batchId, 'csv') }, 'CSV'),
                ]
              : '',
          ),
        ),
      ),
    );
  }

  // ---- MSAL: sign in with Microsoft Entra ID (authorization code flow with PKCE) ----
  // The config is a JSON block the app serves (client id, authority, scope: nothing secret). MSAL
  // keeps its tokens in this tab's sessionStorage (a redirect flow cannot work from memory alone):
  // gone when the tab closes, never shared with another tab.
  const signIn = (() => {
    try {
      return JSON.parse($('sign-in-config')?.textContent || 'null');
    } catch {
      return null;
    }
  })();
  let msalApp = null;
  let account = null;

  async function startMsal() {
    const msal = globalThis.msal;
    if (!signIn || !msal) return;
    msalApp = await msal.createStandardPublicClientApplication({
      auth: {
        clientId: signIn.clientId,
        authority: signIn.authority,
        knownAuthorities: signIn.knownAuthorities,
        redirectUri: location.origin + location.pathname,
      },
      cache: { cacheLocation: 'sessionStorage' },
    });
    const button = $('msal-sign-in');
    button.hidden = false;
    button.addEventListener('click', () =>
      msalApp
        .loginRedirect({ scopes: signIn.scopes })
        .catch((e) => showError(`Sign-in failed: ${e.errorCode || e.message}`)),
    );
    try {
      const result = await msalApp.handleRedirectPromise();
      if (result && result.accessToken) {
        account = result.account;
        signInWith(result.accessToken);
      } else if (msalApp.getAllAccounts().length > 0) {
        // A reload in a signed-in tab: the cached token (or a renewed one), no redirect.
        account = msalApp.getAllAccounts()[0];
        signInWith((await msalApp.acquireTokenSilent({ scopes: signIn.scopes, account })).accessToken);
      }
    } catch (e) {
      showError(`Sign-in failed: ${e.errorCode || e.message}`);
    }
  }

  // Sign-out forgets the token here; with MSAL it also clears MSAL's cache in this tab and ends the
  // session at the authority, which sends the browser back to this page.
  $('sign-out').addEventListener('click', () => {
    const signedIn = msalApp && account;
    signInWith('');
    if (!signedIn) return;
    const to = location.origin + location.pathname;
    const who = account;
    account = null;
    msalApp
      .logoutRedirect({ account: who, postLogoutRedirectUri: to })
      .catch((e) => showError(`Sign-out failed: ${e.errorCode || e.message}`));
  });

  // A token about to expire is renewed silently (MSAL's refresh token) before the next request.
  async function freshToken() {
    if (!msalApp || !account || !state.token) return;
    const exp = (claimsOf(state.token) || {}).exp || 0;
    if (exp * 1000 - Date.now() > 5 * 60 * 1000) return;
    try {
      state.token = (await msalApp.acquireTokenSilent({ scopes: signIn.scopes, account })).accessToken;
    } catch {
      showError('The sign-in has expired: sign in again.');
    }
  }

  readFragment();
  startMsal().finally(() => state.token || poll());
})();
