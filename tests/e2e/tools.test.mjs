// tools.test.mjs — the codex profile's session tools through the official
// MCP SDK client (which also checks every structuredContent against the
// tool's outputSchema): exec_command, write_stdin, kill_session,
// list_sessions, read_output and the session log resources, against real
// processes on pipes and PTYs.  Nothing here sleeps to synchronise: waits
// end on exits, wait_for matches, awaiting_input, or a polled condition
// with a bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  closeSync, constants, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync,
  realpathSync, statSync, writeFileSync, writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { REIN_BIN, connectSdk } from './lib.mjs';

// One state dir (registry, logs) for this file; the server's cwd is WORK.
const STATE = realpathSync(mkdtempSync(join(tmpdir(), 'rein-e2e-tools-')));
const WORK = join(STATE, 'work');
mkdirSync(WORK);

// The bound of any polled condition.
const POLL_LIMIT_MS = 10000;
// Codex's header lines, in order, then rein's, then Output.
const HEADER = /^Chunk ID: [0-9a-f]{6}\nWall time: \d+\.\d{4} seconds\n(Process exited with code -?\d+|Process running with session ID \d+)\nOriginal token count: \d+\n(?:[A-Z][A-Za-z ]*: .*\n)*Output:\n/;

function connect(env = {}) {
  return connectSdk({ name: 'rein-e2e-tools', cwd: WORK, env: { REIN_STATE_DIR: STATE, ...env } });
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  return r;
}

// exec_command / write_stdin: checks the text against structuredContent.
async function run(client, name, args) {
  const r = await call(client, name, args);
  assert.ok(!r.isError, `${name} failed: ${r.content?.[0]?.text}`);
  const sc = r.structuredContent;
  const text = r.content[0].text;
  const m = HEADER.exec(text);
  assert.ok(m, `header lines: ${JSON.stringify(text.slice(0, 300))}`);
  assert.equal(text.slice(m[0].length), sc.output, 'the text after Output: is structuredContent.output');
  if (sc.session_id !== undefined) {
    assert.equal(sc.exit_code, undefined);
    assert.match(text, new RegExp(`Process running with session ID ${sc.session_id}\\n`));
  } else {
    assert.match(text, new RegExp(`Process exited with code ${sc.exit_code}\\n`));
  }
  assert.equal(sc.original_token_count, Number(/Original token count: (\d+)/.exec(text)[1]));
  return sc;
}

const exec = (c, args) => run(c, 'exec_command', args);
const write = (c, args) => run(c, 'write_stdin', args);

// Polls until the process is gone (reaped by rein), within the bound.
async function gone(pid) {
  const t0 = Date.now();
  while (existsSync(`/proc/${pid}`)) {
    assert.ok(Date.now() - t0 < POLL_LIMIT_MS, `pid ${pid} still there`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Polls write_stdin until the session exits; returns every output joined.
async function drain(c, id, first = '') {
  let out = first;
  for (let i = 0; i < 100; i++) {
    const r = await write(c, { session_id: id, yield_time_ms: 5000 });
    out += r.output;
    if (r.exit_code !== undefined) return { out, exit_code: r.exit_code, last: r };
  }
  assert.fail('session never exited');
}

function descendants(pid) {
  const all = [];
  const walk = (p) => {
    let kids = [];
    try {
      for (const t of readdirSync(`/proc/${p}/task`))
        kids = kids.concat(readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
    } catch { /* gone */ }
    for (const k of kids) { all.push(k); walk(k); }
  };
  walk(pid);
  return all;
}

test('early exit: exit code, header lines, no session id, stderr merged', async () => {
  const { client } = await connect();
  try {
    const t0 = Date.now();
    const r = await exec(client, { cmd: 'echo hi; echo err >&2; exit 3' });
    assert.ok(Date.now() - t0 < 2000);
    assert.equal(r.exit_code, 3);
    assert.equal(r.output, 'hi\nerr\n');
    assert.equal(r.session_id, undefined);
    assert.equal(r.tty, false);
    assert.equal(r.cwd, WORK);
    assert.equal(r.awaiting_input, false);
    assert.match(r.chunk_id, /^[0-9a-f]{6}$/);
    assert.equal(r.original_token_count, Math.ceil(7 / 4));
    assert.ok(r.log_path.startsWith(STATE));
    assert.equal(readFileSync(r.log_path, 'utf8'), 'hi\nerr\n');
  } finally {
    await client.close();
  }
});

test('yield, then polls: every byte once, nothing repeated, exit drained', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, {
      cmd: 'for i in 1 2 3 4 5 6; do echo line$i; sleep 0.15; done', yield_time_ms: 250,
    });
    assert.ok(r.session_id >= 1000);
    assert.equal(r.yield_time_ms, 250);
    const { out, exit_code } = await drain(client, r.session_id, r.output);
    assert.equal(exit_code, 0);
    assert.equal(out, 'line1\nline2\nline3\nline4\nline5\nline6\n');
  } finally {
    await client.close();
  }
});

test('a terminal command whose background job dies of the hangup as it exits: the result says so', async () => {
  const { client } = await connect();
  try {
    // `server & echo started` on a terminal, the job not ignoring SIGHUP:
    // as the command (the session's leader) exits, the kernel hangs up
    // its terminal's foreground group, the job's, before rein looks.  It
    // used to be reported nowhere; now the model is told it died.  The
    // command waits on a FIFO until the job runs.  On pipes there is no
    // hangup: rein ends the job, as ever.
    for (const tty of [true, false]) {
      const cmd = "rm -f hup.fifo; mkfifo hup.fifo; sh -c 'echo up > hup.fifo; exec sleep 300' & " +
        'echo "job $!"; cat hup.fifo; echo started';
      const r = await call(client, 'exec_command', { cmd, tty, yield_time_ms: 20000 });
      const sc = r.structuredContent;
      assert.equal(sc.exit_code, 0);
      assert.equal(sc.reason, 'exit');
      if (tty) {
        assert.equal(sc.background_hung_up, true);
        assert.equal(sc.background_ended, undefined);
        assert.match(r.content[0].text,
          /\nBackground: processes the command left running \(`cmd &`\) were killed by the terminal's hangup as it exited, as in any terminal; to keep a server running, /);
      } else {
        assert.equal(sc.background_hung_up, undefined);
        assert.equal(sc.background_ended, true);
        assert.match(r.content[0].text, /\nBackground: processes the command left running .* were ended with it; /);
      }
      await gone(Number(/job (\d+)/.exec(sc.output)[1]));
    }
    // One job killed by the hangup, one (ignoring it) ended by rein: one
    // line says both.
    const both = "rm -f hup1.fifo hup2.fifo; mkfifo hup1.fifo hup2.fifo; " +
      "sh -c 'echo up > hup1.fifo; exec sleep 300' & cat hup1.fifo; " +
      "(trap '' HUP; echo up > hup2.fifo; exec sleep 300) & cat hup2.fifo; echo started";
    const r = await call(client, 'exec_command', { cmd: both, tty: true, yield_time_ms: 20000 });
    assert.equal(r.structuredContent.background_hung_up, true);
    assert.equal(r.structuredContent.background_ended, true);
    assert.match(r.content[0].text,
      /\nBackground: processes the command left running \(`cmd &`\) were killed by the terminal's hangup as it exited, as in any terminal, and the others \(nohup, setsid\) were ended with it; to keep a server running, /);
  } finally {
    await client.close();
  }
});

test('a command that exits leaving a background job: the job is ended and the result says so', async () => {
  const { client } = await connect();
  try {
    for (const tty of [false, true]) {
      // `server & echo started`, the job ignoring the hangup a terminal's
      // end sends: still running when its command exits, so rein ends it,
      // and the model is told (it would think its server runs).  The
      // command waits on a FIFO until the job's trap is set: a job still
      // starting when a terminal's command exits dies of its hangup.
      const cmd = "rm -f bg.fifo; mkfifo bg.fifo; (trap '' HUP; echo up > bg.fifo; exec sleep 300) & " +
        "echo \"job $!\"; cat bg.fifo; echo started";
      const t0 = Date.now();
      const r = await call(client, 'exec_command', { cmd, tty, yield_time_ms: 20000 });
      const sc = r.structuredContent;
      assert.ok(Date.now() - t0 < 10000, `returned after ${Date.now() - t0} ms`);
      assert.equal(sc.exit_code, 0);
      assert.equal(sc.reason, 'exit');
      assert.equal(sc.background_ended, true);
      assert.match(r.content[0].text, /\nBackground: processes the command left running .* were ended with it; /);
      await gone(Number(/job (\d+)/.exec(sc.output)[1]));
      // Nothing left behind: nothing said.
      const p = await call(client, 'exec_command', { cmd: 'echo plain', tty });
      assert.equal(p.structuredContent.exit_code, 0);
      assert.equal(p.structuredContent.background_ended, undefined);
      assert.doesNotMatch(p.content[0].text, /Background:/);
    }
  } finally {
    await client.close();
  }
});

test('wait_for finds a match followed by more than 16 KiB in the same read, and in output already waiting', async () => {
  const { client } = await connect();
  try {
    // One write: the match, then 20 000 bytes after it (the match window
    // was the last 16 KiB of each read, so this waited out its yield).
    const cmd = "python3 -c \"import sys; sys.stdout.write('READY\\n' + 'x' * 20000 + '\\n')\"; exec sleep 30";
    let t0 = Date.now();
    const r = await exec(client, { cmd, wait_for: 'READY', yield_time_ms: 20000 });
    assert.ok(Date.now() - t0 < 10000, `returned after ${Date.now() - t0} ms`);
    assert.equal(typeof r.session_id, 'number');
    assert.match(r.output, /^READY\n/);
    await call(client, 'kill_session', { session_id: r.session_id });
    // Already waiting when the poll starts: READY, then 48 KB of lines,
    // all printed after the first call returned and before the second.
    const q = await exec(client, { cmd: 'sleep 0.5; echo READY; seq 1 10000; exec sleep 30', yield_time_ms: 250 });
    assert.equal(typeof q.session_id, 'number');
    const until = Date.now() + POLL_LIMIT_MS;
    for (;;) {
      const e = (await call(client, 'list_sessions', {})).structuredContent.sessions
        .find((x) => x.session_id === q.session_id);
      if (e.bytes >= 48895) break;
      assert.ok(Date.now() < until, 'the output never came');
    }
    t0 = Date.now();
    const w = await write(client, { session_id: q.session_id, wait_for: 'READY', yield_time_ms: 20000 });
    assert.ok(Date.now() - t0 < 10000, `returned after ${Date.now() - t0} ms`);
    assert.equal(w.exit_code, undefined); /* still running: the match woke it */
    await call(client, 'kill_session', { session_id: q.session_id });
  } finally {
    await client.close();
  }
});

// A pattern that backtracks without end, (a+)+$ on lines of a's ending in
// b, is given up at its match limit with an error naming it: wait_for
// returns at once (it re-ran on every read until its yield), and a grep
// ends at the first such line (it took PCRE2's default 0.1 s per line).
// Both with PCRE2's JIT and with the interpreter.
for (const jit of ['1', '0']) {
  test(`a pattern that backtracks without end is given up (REIN_PCRE2_JIT=${jit})`, async () => {
    const { client } = await connect({ REIN_PCRE2_JIT: jit });
    try {
      const cmd = "python3 -c \"import sys; sys.stdout.write(('a' * 16000 + 'b\\n') * 300 + 'DONE\\n')\"; exec sleep 30";
      const t0 = Date.now();
      const r = await exec(client, { cmd, wait_for: '(a+)+$', yield_time_ms: 20000 });
      assert.ok(Date.now() - t0 < 10000, `returned after ${Date.now() - t0} ms`);
      assert.equal(typeof r.session_id, 'number');
      assert.match(r.wait_for_error, /^the pattern `\(a\+\)\+\$` reached its match limit/);
      const text = (await call(client, 'write_stdin', { session_id: r.session_id, yield_time_ms: 250 })).content[0].text;
      assert.doesNotMatch(text, /Wait for:/, 'only the wait that gave up says so');
      // Once all 300 lines are in the log, grep them.
      const until = Date.now() + POLL_LIMIT_MS;
      for (;;) {
        const e = (await call(client, 'list_sessions', {})).structuredContent.sessions
          .find((x) => x.session_id === r.session_id);
        if (e.bytes >= 300 * 16002 + 5) break;
        assert.ok(Date.now() < until, 'the output never came');
      }
      const g0 = Date.now();
      const g = await call(client, 'read_output', { session_id: r.session_id, grep: '(a+)+$' });
      assert.ok(Date.now() - g0 < 10000, `grep returned after ${Date.now() - g0} ms`);
      assert.equal(g.isError, true);
      assert.match(g.content[0].text, /`grep`: the pattern `\(a\+\)\+\$` reached its match limit .* \(at log line 1\)\.$/);
      // An ordinary pattern over the same log still works.
      const ok = await call(client, 'read_output', { session_id: r.session_id, grep: '^DONE$|^a+b$', tail_lines: 1 });
      assert.ok(!ok.isError, ok.content[0].text);
      assert.match(ok.structuredContent.output, /^301: DONE\n$/);
      await call(client, 'kill_session', { session_id: r.session_id });
    } finally {
      await client.close();
    }
  });
}

// read_output with tail_lines and no grep reads back from the end no
// further than its budget shows: a tail_lines of a trillion on a log of a
// gigabyte (sparse here) reads a few hundred KiB, not the whole log, which
// held the server's loop up for seconds.  Measured as the server's own
// read count (/proc/PID/io rchar), not as time.
test('read_output tail_lines reads back no further than it shows', async () => {
  const { client, transport } = await connect();
  try {
    const r = await exec(client, { cmd: 'echo first; echo last' });
    assert.equal(r.exit_code, 0);
    const id = Number(/(\d+)\.log$/.exec(r.log_path)[1]);
    execFileSync('truncate', ['-s', '1G', r.log_path]);
    const rchar = () => Number(/^rchar: (\d+)$/m.exec(readFileSync(`/proc/${transport.pid}/io`, 'utf8'))[1]);
    const before = rchar();
    const t = await call(client, 'read_output', { session_id: id, tail_lines: 1e12 });
    const read = rchar() - before;
    assert.ok(!t.isError, t.content[0].text);
    assert.equal(t.structuredContent.truncated, true);
    assert.ok(read < 8 * 1024 * 1024, `read ${read} bytes of the log`);
  } finally {
    await client.close();
  }
});

// read_output's grep runs at most REIN_GREP_TIME_MS (5 s by default): the
// server's loop waits for it.  Past it the grep stops at a line's end and
// says where; calls from there search on, each at least one line, until
// the whole log is searched and every match found.
test('read_output grep stops at its time budget and goes on from where it said', async () => {
  for (const [env, stops] of [[{ REIN_GREP_TIME_MS: '1' }, true], [{ REIN_GREP_TIME_MS: 'soon' }, false]]) {
    const { client } = await connect(env);
    try {
      const r = await exec(client, { cmd: 'seq 1 200000', yield_time_ms: 20000 });
      assert.equal(r.exit_code, 0);
      const id = Number(/(\d+)\.log$/.exec(r.log_path)[1]);
      let offset = 0, calls = 0, stopped = 0;
      const found = [];
      for (;;) {
        const g = await call(client, 'read_output', { session_id: id, grep: '^(1|77777|200000)$', offset });
        assert.ok(!g.isError, g.content[0].text);
        calls++;
        found.push(...g.structuredContent.output.split('\n').filter(Boolean));
        const at = g.structuredContent.grep_stopped_at;
        if (at === undefined) {
          assert.doesNotMatch(g.content[0].text, /^Grep:/m);
          break;
        }
        stopped++;
        assert.ok(at > offset, `no progress: stopped at ${at} from ${offset}`);
        assert.match(g.content[0].text, new RegExp(`^Grep: stopped after 1 ms at line \\d+ \\(byte ${at}\\): the rest was not searched; call again with offset: ${at} to go on$`, 'm'));
        assert.equal(g.structuredContent.offset + g.structuredContent.length, at);
        offset = at;
        assert.ok(calls < 100000, 'the grep never ended');
      }
      assert.deepEqual(found, ['1: 1', '77777: 77777', '200000: 200000']);
      assert.equal(stopped > 0, stops, `stopped ${stopped} times`);
    } finally {
      await client.close();
    }
  }
});

// grep with tail_lines searches back from the end of the log, so the last
// matches are found first: with a time budget of 1 ms (a forward search
// runs out long before the end of these 2 MB) the first call already
// gives the newest of them, and the calls from where each stopped
// (before: grep_stopped_at, tail_lines: what is still missing) give the
// rest, never an older match.
test('read_output grep with tail_lines finds the last matches past a tiny time budget', async () => {
  const { client } = await connect({ REIN_GREP_TIME_MS: '1' });
  try {
    const r = await exec(client, { cmd: 'seq 1 300000', yield_time_ms: 20000 });
    assert.equal(r.exit_code, 0);
    const id = Number(/(\d+)\.log$/.exec(r.log_path)[1]);
    const last = ['299996: 299996', '299997: 299997', '299998: 299998', '299999: 299999', '300000: 300000'];
    let tail = 5, before, calls = 0;
    let found = [];
    for (;;) {
      const args = { session_id: id, grep: '^(1|2|29999\\d|300000)$', tail_lines: tail };
      if (before !== undefined) args.before = before;
      const g = await call(client, 'read_output', args);
      assert.ok(!g.isError, g.content[0].text);
      calls++;
      const got = g.structuredContent.output.split('\n').filter(Boolean);
      if (calls === 1) assert.ok(got.length > 0 && got.at(-1) === '300000: 300000', `first call: ${got}`);
      found = [...got, ...found];
      const at = g.structuredContent.grep_stopped_at;
      if (at === undefined) {
        assert.doesNotMatch(g.content[0].text, /^Grep:/m);
        break;
      }
      assert.equal(g.structuredContent.offset, at, 'the range searched starts where it stopped');
      const m = new RegExp(`^Grep: stopped after 1 ms searching back, at line (\\d+) \\(byte ${at}\\): the lines before it were not searched, and ${got.length} of the ${tail} matches asked for were found; call again with before: ${at} and tail_lines: ${tail - got.length} to go on$`, 'm').exec(g.content[0].text);
      assert.ok(m, g.content[0].text);
      assert.equal(Number(m[1]) - 1, readFileSync(r.log_path).subarray(0, at).toString().split('\n').length - 1);
      tail -= got.length;
      before = at;
      assert.ok(calls < 1000, 'the grep never ended');
    }
    assert.deepEqual(found, last);
    // The last three of all: two from the log's start, found back.
    tail = 13; before = undefined; found = [];
    for (calls = 0; ; calls++) {
      const args = { session_id: id, grep: '^(1|2|29999\\d|300000)$', tail_lines: tail };
      if (before !== undefined) args.before = before;
      const g = (await call(client, 'read_output', args)).structuredContent;
      const got = g.output.split('\n').filter(Boolean);
      found = [...got, ...found];
      if (g.grep_stopped_at === undefined) break;
      tail -= got.length;
      before = g.grep_stopped_at;
      assert.ok(calls < 100000, 'the grep never ended');
    }
    assert.equal(calls > 0, true, 'a search over the whole log stopped for time');
    assert.deepEqual(found.slice(0, 3), ['1: 1', '2: 2', '299990: 299990']);
    assert.equal(found.length, 13);
  } finally {
    await client.close();
  }
});

// The last n matches of grep, searched back: calls from where each
// stopped for time (before: grep_stopped_at), asking for what is still
// missing, until one searched to the log's start or found them all.
async function lastMatches(client, args, n) {
  let found = [], before, calls = 0;
  for (;;) {
    const a = { ...args, tail_lines: n };
    if (before !== undefined) a.before = before;
    const g = await call(client, 'read_output', a);
    assert.ok(!g.isError, g.content[0].text);
    const got = g.structuredContent.output.split('\n').slice(0, -1);
    found = [...got, ...found];
    const at = g.structuredContent.grep_stopped_at;
    if (at === undefined) return found;
    assert.ok(before === undefined || at < before, `no progress: stopped at ${at} before ${before}`);
    n -= got.length;
    before = at;
    assert.ok(++calls < 100000, 'the grep never ended');
  }
}

// Searched back or forward, a grep sees the same lines with the same
// numbers: a line longer than the 64 KiB kept of it, '\r' ends, empty
// lines, UTF-8, no final newline; as many matches as asked for, fewer,
// none.  Back, under a time budget of 1 ms, which a search forward of
// these logs runs out of.
test('read_output grep gives the same last matches back as forward', async () => {
  const { client } = await connect();
  const { client: quick } = await connect({ REIN_GREP_TIME_MS: '1' });
  try {
    const long = "head -c 100000 /dev/zero | tr '\\0' x; printf 'E long end\\n'";
    const logs = [
      `${long}; printf 'a E\\r\\n\\r\\n\\nE é\\r\\r\\nb\\nE last'`,
      `printf 'E 1\\nE 2\\nE 3\\n'`,
      `printf 'x\\nE only\\ny\\n'`,
      `printf 'no match\\n\\n'; ${long}`,
      `printf 'E\\n%.0s' $(seq 1 20000); printf 'tail E'`,
    ];
    for (const cmd of logs) {
      const r = await exec(client, { cmd, yield_time_ms: 20000 });
      assert.equal(r.exit_code, 0);
      const id = Number(/(\d+)\.log$/.exec(r.log_path)[1]);
      for (const grep of ['E', '^$', 'x$', 'é', 'nothing']) {
        const all = (await call(client, 'read_output', { session_id: id, grep, max_output_tokens: 1000000 })).structuredContent;
        assert.equal(all.truncated, false);
        assert.equal(all.grep_stopped_at, undefined);
        const lines = all.output.split('\n').slice(0, -1);
        for (const n of [1, 3, 5, lines.length, lines.length + 2]) {
          const back = await lastMatches(quick, { session_id: id, grep, max_output_tokens: 1000000 }, n);
          assert.deepEqual(back, lines.slice(Math.max(0, lines.length - n)), `${cmd} /${grep}/ tail ${n}`);
        }
      }
    }
  } finally {
    await client.close();
    await quick.close();
  }
});

// before bounds tail_lines, with grep or without: only lines that start
// before that byte; past the log it is the log's end, 0 leaves nothing,
// and it goes with tail_lines only.
test('read_output before: the last lines that start before a byte', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: "printf 'one\\ntwo\\nthree\\nfour\\n'" });
    const id = Number(/(\d+)\.log$/.exec(r.log_path)[1]);
    const ro = async (args) => (await call(client, 'read_output', { session_id: id, ...args })).structuredContent;
    // "three" starts at byte 8 and ends at 14; "four" ends at 19.
    assert.equal((await ro({ grep: 'o', tail_lines: 5, before: 8 })).output, '1: one\n2: two\n');
    assert.equal((await ro({ grep: 'e', tail_lines: 5, before: 9 })).output, '1: one\n3: three\n', 'a line that starts before the byte is searched whole');
    assert.equal((await ro({ grep: 'o', tail_lines: 1, before: 14 })).output, '2: two\n');
    assert.equal((await ro({ grep: 'o', tail_lines: 5, before: 1000 })).output, '1: one\n2: two\n4: four\n');
    const none = await ro({ grep: 'o', tail_lines: 5, before: 0 });
    assert.equal(none.output, '');
    assert.equal(none.length, 0);
    assert.equal((await ro({ tail_lines: 2, before: 8 })).output, 'one\ntwo\n');
    assert.equal((await ro({ tail_lines: 2, before: 9 })).output, 'two\nthree\n');
    assert.equal((await ro({ tail_lines: 2, before: 0 })).output, '');
    assert.equal((await ro({ tail_lines: 2, before: 19 })).output, 'three\nfour\n');
    for (const [args, why] of [
      [{ grep: 'o', before: 8 }, /^`before` goes with `tail_lines`/],
      [{ before: 8, offset: 0 }, /^`before` goes with `tail_lines`/],
      [{ grep: 'o', tail_lines: 1, before: 8, offset: 0 }, /not both/],
      [{ grep: 'o', tail_lines: 1, before: -1 }, /`before` must be at least 0/],
      [{ tail_lines: 1, before: 'end' }, /`before` must be an integer/],
    ]) {
      const e = await call(client, 'read_output', { session_id: id, ...args });
      assert.equal(e.isError, true, JSON.stringify(args));
      assert.match(e.content[0].text, why);
    }
  } finally {
    await client.close();
  }
});

// write_stdin's default yield is 250 ms after a write: with wait_for and
// no yield_time_ms it waits for the match instead (it used to end first).
test('write_stdin with wait_for and no yield_time_ms waits for the match', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: 'echo ready; read x; sleep 1; echo "done $x"; sleep 30', wait_for: 'ready' });
    const w = await write(client, { session_id: r.session_id, chars: 'go\n', wait_for: 'done \\w+' });
    assert.match(w.output, /done go/);
    assert.equal(w.yield_time_ms, 30000);
    const p = await write(client, { session_id: r.session_id, chars: '', wait_for: 'never', yield_time_ms: 5000 });
    assert.equal(p.yield_time_ms, 5000, 'an explicit yield still rules');
    await call(client, 'kill_session', { session_id: r.session_id, signal: 'KILL' });
  } finally {
    await client.close();
  }
});

test('an exit between calls is still drained by the next poll', async () => {
  const { client } = await connect();
  const flag = join(WORK, 'go-between');
  try {
    const r = await exec(client, {
      cmd: `echo start; while [ ! -e ${flag} ]; do sleep 0.02; done; echo end; exit 4`,
      wait_for: 'start',
    });
    const pid = (await call(client, 'list_sessions', {})).structuredContent.sessions
      .find((s) => s.session_id === r.session_id).pid;
    writeFileSync(flag, '');
    await gone(pid);
    const t0 = Date.now();
    const p = await write(client, { session_id: r.session_id, yield_time_ms: 30000 });
    assert.ok(Date.now() - t0 < 2000, 'an exited session answers at once');
    assert.equal(p.exit_code, 4);
    assert.equal(r.output + p.output, 'start\nend\n');
    const again = await call(client, 'write_stdin', { session_id: r.session_id });
    assert.equal(again.isError, true);
    assert.match(again.content[0].text, new RegExp(String(r.session_id)));
    // Input for a process that exited between calls goes nowhere: said so.
    const late = await exec(client, { cmd: `echo start; while [ ! -e ${flag}2 ]; do sleep 0.02; done`, wait_for: 'start' });
    const pid2 = (await call(client, 'list_sessions', {})).structuredContent.sessions
      .find((s) => s.session_id === late.session_id).pid;
    writeFileSync(`${flag}2`, '');
    await gone(pid2);
    const w = await write(client, { session_id: late.session_id, chars: 'yes\n' });
    assert.equal(w.exit_code, 0);
    assert.match(w.write_error ?? '', /not written: the process had already exited/);
  } finally {
    await client.close();
  }
});

// An Ink-style block with a row wider than the session's terminal, erased
// (a `ESC[2K ESC[1A` per screen row: the wide row is two) to write lines
// that stay: the session's width makes its rows count as the program's,
// so the lines written to stay are all in the result, whole or condensed,
// and none of the block's earlier frames.
test('a redrawn block with a row wider than the terminal keeps the lines written above it', async () => {
  const script = [
    'import sys',
    'w = sys.stdout.write',
    "wide = 'Compiling ' + 'src/components/very-long-directory-name/' * 3 + 'Widget.tsx'",
    "w('Starting build\\n' + wide + '\\nProgress 0%\\n')",
    "kept = ['warning: package foo is deprecated', 'Built chunk main.js (120 kB)', 'Built chunk vendor.js (900 kB)', 'Build finished']",
    'for i, k in enumerate(kept):',
    "    w('\\x1b[2K\\x1b[1A' * 3 + '\\x1b[2K\\x1b[G' + k + '\\n')",
    '    if i < 3:',
    "        w(wide + '\\nProgress %d%%\\n' % (30 * (i + 1)))",
    "for i in range(400):",
    "    w('step %d of the build went fine\\n' % i)",
  ].join('\n');
  const file = join(WORK, 'inkish.py');
  writeFileSync(file, script);
  const { client } = await connect();
  try {
    for (const max_output_tokens of [undefined, 300]) {
      const r = await exec(client, { cmd: `python3 ${file}`, tty: true, cols: 80, rows: 24, yield_time_ms: 20000, max_output_tokens });
      assert.equal(r.exit_code, 0);
      for (const k of ['warning: package foo is deprecated', 'Built chunk main.js (120 kB)', 'Built chunk vendor.js (900 kB)']) {
        assert.ok(r.output.includes(k), `${k} kept (max_output_tokens ${max_output_tokens}): ${r.output.slice(0, 2000)}`);
      }
      assert.ok(!r.output.includes('Progress 30%'), `no stale frame: ${r.output.slice(0, 2000)}`);
    }
  } finally {
    await client.close();
  }
});

test('interactive bash on a tty keeps its state; resize is seen by stty size', async () => {
  const { client } = await connect();
  try {
    const big = await call(client, 'exec_command', { cmd: 'stty size', tty: true, cols: 1000, rows: 3, yield_time_ms: 5000 });
    assert.match(big.content[0].text, /\nTerminal size: 400x5 \(clamped/);
    assert.match(big.structuredContent.output, /5 400/);
    const r = await exec(client, { cmd: 'bash --norc --noprofile', tty: true, cols: 100, rows: 30 });
    assert.equal(r.awaiting_input, true);
    assert.equal(r.tty, true);
    const id = r.session_id;
    await write(client, { session_id: id, chars: 'X=42; cd /usr\n', yield_time_ms: 5000 });
    let w = await write(client, { session_id: id, chars: 'echo "v=$X d=$PWD"\n', yield_time_ms: 5000, wait_for: 'v=42 d=/usr' });
    assert.match(w.output, /v=42 d=\/usr/);
    w = await write(client, { session_id: id, chars: 'stty size\n', yield_time_ms: 5000, wait_for: '\\d+ \\d+' });
    assert.match(w.output, /30 100/);
    await write(client, { session_id: id, cols: 90, rows: 25 });
    w = await write(client, { session_id: id, chars: 'stty size\n', yield_time_ms: 5000, wait_for: '25 90' });
    assert.match(w.output, /25 90/);
    const scr = await call(client, 'read_output', { session_id: id, view: 'screen' });
    assert.ok(!scr.isError);
    assert.match(scr.structuredContent.output, /25 90/);
    // One dimension: the other stays (it was reset to the default).
    await write(client, { session_id: id, cols: 44 });
    w = await write(client, { session_id: id, chars: 'stty size\n', yield_time_ms: 5000, wait_for: '25 44' });
    assert.match(w.output, /25 44/);
    // Below the range: the smallest size, not the default, and the
    // result says it was clamped (a size in range says nothing).
    const low = await call(client, 'write_stdin', { session_id: id, cols: -5, rows: 0 });
    assert.match(low.content[0].text, /\nTerminal size: 20x5 \(clamped to 20\.\.400 columns, 5\.\.200 rows\)\n/);
    w = await write(client, { session_id: id, chars: 'stty size\n', yield_time_ms: 5000, wait_for: '5 20' });
    assert.match(w.output, /5 20/);
    const inRange = await call(client, 'write_stdin', { session_id: id, cols: 400, rows: 5 });
    assert.doesNotMatch(inRange.content[0].text, /Terminal size:/);
    w = await write(client, { session_id: id, chars: 'exit 7\n', yield_time_ms: 5000 });
    assert.equal(w.exit_code, 7);
  } finally {
    await client.close();
  }
});

test('a Python REPL over a PTY: prompt awaiting input, then answers, then exit()', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: 'python3 -q -i', tty: true, yield_time_ms: 10000 });
    assert.equal(r.awaiting_input, true);
    assert.match(r.prompt, />>> ?$/);
    const w = await write(client, { session_id: r.session_id, chars: 'print(6*7)\n', yield_time_ms: 5000 });
    assert.match(w.output, /42/);
    assert.equal(w.awaiting_input, true);
    const e = await write(client, { session_id: r.session_id, chars: 'exit()\n', yield_time_ms: 5000 });
    assert.equal(e.exit_code, 0);
  } finally {
    await client.close();
  }
});

test('cat echoes on a pipe; ^D (\\x04) ends it with exit 0; stdin param', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: 'cat' });
    assert.equal(r.awaiting_input, true, 'cat blocked reading its stdin pipe');
    const w = await write(client, { session_id: r.session_id, chars: 'hello\\n', yield_time_ms: 5000, wait_for: 'hello' });
    assert.equal(w.output, 'hello\n');
    const d = await write(client, { session_id: r.session_id, chars: '\\x04', yield_time_ms: 5000 });
    assert.equal(d.exit_code, 0);
    const s = await exec(client, { cmd: 'cat', stdin: 'abc\n' });
    assert.equal(s.exit_code, 0);
    assert.equal(s.output, 'abc\n');
    const t = await exec(client, { cmd: 'cat', tty: true, wait_for: 'hi' , stdin: 'hi\n' });
    assert.match(t.output, /hi/);
  } finally {
    await client.close();
  }
});

for (const tty of [false, true]) {
  test(`Ctrl-C (${tty ? 'tty' : 'pipe'}): trapped exits 42, untrapped 130`, async () => {
    const { client } = await connect();
    try {
      const a = await exec(client, {
        cmd: "trap 'exit 42' INT; echo READY; while :; do sleep 0.05; done", tty, wait_for: 'READY',
      });
      let w = await write(client, { session_id: a.session_id, chars: '\\x03', yield_time_ms: 5000 });
      assert.equal(w.exit_code, 42);
      const b = await exec(client, { cmd: 'echo READY; exec sleep 30', tty, wait_for: 'READY' });
      w = await write(client, { session_id: b.session_id, keys: ['ctrl+c'], yield_time_ms: 5000 });
      assert.equal(w.exit_code, 130);
      assert.equal(w.signal, 'SIGINT');
    } finally {
      await client.close();
    }
  });
}

test('workdir relative to the server cwd; bad workdir, shell, env names and an empty cmd are errors', async () => {
  const { client } = await connect();
  try {
    mkdirSync(join(WORK, 'sub'), { recursive: true });
    const r = await exec(client, { cmd: 'pwd', workdir: 'sub' });
    assert.equal(r.output, `${join(WORK, 'sub')}\n`);
    assert.equal(r.cwd, join(WORK, 'sub'));
    let e = await call(client, 'exec_command', { cmd: 'pwd', workdir: 'no/such/dir' });
    assert.equal(e.isError, true);
    assert.match(e.content[0].text, /workdir/);
    e = await call(client, 'exec_command', { cmd: 'pwd', shell: '/no/such/shell' });
    assert.equal(e.isError, true);
    assert.match(e.content[0].text, /shell/);
    for (const cmd of ['', ' \t\n']) {
      e = await call(client, 'exec_command', { cmd });
      assert.equal(e.isError, true, JSON.stringify(cmd));
      assert.equal(e.content[0].text, '`cmd` is empty: give the command to run.');
    }
    for (const name of ['', 'A=B']) {
      e = await call(client, 'exec_command', { cmd: 'true', env: { [name]: 'x' } });
      assert.equal(e.isError, true, JSON.stringify(name));
      assert.equal(e.content[0].text,
        `\`env\` name \`${name}\` is not a valid variable name (it is empty or holds '=').`);
    }
    const l = await exec(client, { cmd: 'echo $0 ok', shell: 'sh', login: true });
    assert.equal(l.exit_code, 0);
    // A shell named, not a path, is the one found on the server's PATH:
    // a PATH in env is the command's (it was "No such file or directory").
    const p = await exec(client, { cmd: 'echo "$PATH"', shell: 'bash', env: { PATH: '/nonexistent' } });
    assert.equal(p.exit_code, 0);
    assert.equal(p.output, '/nonexistent\n');
    // A tool without arguments says so (it listed none: "are: .").
    e = await call(client, 'list_sessions', { all: true });
    assert.equal(e.isError, true);
    assert.equal(e.content[0].text, 'Unknown argument `all`; this tool takes no arguments.');
  } finally {
    await client.close();
  }
});

// SHELL_ARG_MAX in src/exec/shell.h: the longest exec argument, its NUL
// included; a longer cmd reaches a POSIX shell in pieces.
const SHELL_ARG_MAX = 128 * 1024;

// A cmd of exactly len bytes: first, then a heredoc of 'x' lines that wc
// counts; returns the cmd and that count.
function longCmd(first, len) {
  const head = `${first}wc -c <<'EOF'\n`;
  const tail = '\nEOF\n';
  let body = '';
  const n = len - head.length - tail.length;
  for (let i = 0; i < n; i++) body += i % 80 === 79 ? '\n' : 'x';
  return { cmd: head + body + tail, count: n + 1 };
}

test('a cmd too long for one exec argument runs in pieces under a POSIX shell; past ARG_MAX it is a clear error', async () => {
  const { client } = await connect();
  try {
    const first = 'echo "$# ${__rein_c-none} ${__rein_p-none} ${#BASH_EXECUTION_STRING}"; ';
    // At the edge the cmd is still one argument: bash -c runs it as it is.
    let { cmd, count } = longCmd(first, SHELL_ARG_MAX - 1);
    let r = await exec(client, { cmd });
    assert.equal(r.exit_code, 0);
    assert.equal(r.output, `0 none none ${SHELL_ARG_MAX - 1}\n${count}\n`);
    // One byte more, and 1.6 MB, with a login shell: joined, nothing of the
    // joining left for the command to see.
    for (const [len, login] of [[SHELL_ARG_MAX, false], [1600000, true]]) {
      ({ cmd, count } = longCmd(first, len));
      r = await exec(client, { cmd, login });
      assert.equal(r.exit_code, 0);
      assert.match(r.output, new RegExp(`^0 none none \\d+\\n${count}\\n$`));
      assert.notEqual(r.output.split(' ')[3], `${len}\n`);
    }
    // list_sessions shows a long command cut (CODEX_LIST_COMMAND_MAX, 1024
    // bytes, on a character), with its whole length.
    ({ cmd } = longCmd('read x; ', 200000));
    r = await exec(client, { cmd, yield_time_ms: 250 });
    assert.equal(typeof r.session_id, 'number');
    const ls = (await call(client, 'list_sessions', {})).structuredContent.sessions;
    const big = ls.find((e) => e.session_id === r.session_id);
    assert.equal(big.command_bytes, 200000);
    assert.equal(big.command, `${cmd.slice(0, 1024)}\u2026`);
    await run(client, 'write_stdin', { session_id: r.session_id, chars: '\n', yield_time_ms: 5000 });
    ({ cmd } = longCmd('', SHELL_ARG_MAX));
    r = await exec(client, { cmd, shell: 'dash' });
    assert.equal(r.exit_code, 0);
    let e = await call(client, 'exec_command', { cmd, shell: 'python3' });
    assert.equal(e.isError, true);
    assert.equal(e.content[0].text, `\`cmd\` is ${SHELL_ARG_MAX} bytes: a command over 128 KiB runs `
      + 'only under a POSIX shell (sh, bash, zsh, dash, ksh), not python3. Split it into several commands.');
    ({ cmd } = longCmd('', 3 * 1024 * 1024));
    e = await call(client, 'exec_command', { cmd });
    assert.equal(e.isError, true);
    assert.match(e.content[0].text, /the command \(3145728 bytes\) and its environment are over what the system passes to a program \(ARG_MAX, \d+ bytes\)\. Split it/);
  } finally {
    await client.close();
  }
});

test('write_stdin decodes escapes, base64 and named keys; bad input is an error', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: 'od -An -c' });
    await write(client, { session_id: r.session_id, chars: 'a\\tb\\x41\\u00e9\\\\\\n' });
    await write(client, { session_id: r.session_id, chars_b64: Buffer.from('Z\n').toString('base64') });
    // An empty one of the two is no input, not a second one.
    await write(client, { session_id: r.session_id, chars: '', chars_b64: Buffer.from('Y').toString('base64') });
    await write(client, { session_id: r.session_id, chars: 'X', chars_b64: '' });
    await write(client, { session_id: r.session_id, chars: '', chars_b64: '' });
    await write(client, { session_id: r.session_id, keys: ['enter'] });
    const d = await write(client, { session_id: r.session_id, close_stdin: true, yield_time_ms: 5000 });
    const all = r.output + d.output;
    assert.equal(d.exit_code, 0);
    assert.match(all, /a\s+\\t\s+b\s+A\s+303\s+251\s+\\\s+\\n/);
    assert.match(all, /Z\s+\\n\s+Y\s+X\s+\\n/);
    const k = await exec(client, { cmd: 'cat -v', tty: true });
    const w = await write(client, { session_id: k.session_id, keys: ['up', 'enter'], yield_time_ms: 5000, wait_for: '\\^\\[\\[A\\r?\\n' });
    assert.match(w.output, /\^\[\[A/);
    // Other tools' spellings (tmux, emacs, ^X) send rein's own keys.
    const t = await write(client, { session_id: k.session_id, keys: ['M-x', 'PgUp', 'C-M-Left', 'enter'], yield_time_ms: 5000, wait_for: '\\^\\[\\[1;7D\\r?\\n' });
    assert.match(t.output, /\^\[x\^\[\[5~\^\[\[1;7D/);
    for (const bad of [
      { chars: 'x', chars_b64: 'eA==' }, { chars_b64: '!!notbase64!!' }, { keys: ['nosuchkey'] },
      { keys: ['ctrl+c+d'] }, { keys: ['hyper+q'] }, { keys: ['C-cuddle'] },
    ]) {
      const e = await call(client, 'write_stdin', { session_id: k.session_id, ...bad });
      assert.equal(e.isError, true, JSON.stringify(bad));
      if (bad.keys) assert.match(e.content[0].text, /modifiers \(shift, ctrl, alt, super\) and then one key/);
    }
    await call(client, 'kill_session', { session_id: k.session_id });
  } finally {
    await client.close();
  }
});

test('a NUL byte is refused in a command, a path or the environment, and passed in stdin bytes', async () => {
  const { client } = await connect();
  try {
    for (const bad of [
      { cmd: 'echo a\u0000; echo b' }, { cmd: 'pwd', workdir: '/tmp\u0000/etc' },
      { cmd: 'true', env: { A: 'x\u0000y' } },
    ]) {
      const e = await call(client, 'exec_command', bad);
      assert.equal(e.isError, true, JSON.stringify(bad));
      assert.match(e.content[0].text, /contains a NUL byte/);
    }
    const r = await exec(client, { cmd: 'od -An -c', stdin: 'x\u0000y', yield_time_ms: 5000 });
    assert.equal(r.exit_code, 0);
    assert.match(r.output, /x\s+\\0\s+y/);
    const k = await exec(client, { cmd: 'od -An -c' });
    const w = await write(client, { session_id: k.session_id, chars: 'p\u0000q', close_stdin: true, yield_time_ms: 5000 });
    assert.match(k.output + w.output, /p\s+\\0\s+q/);
    // A NUL in the output: the text carries all of it, as the structured
    // output does (exec checks that they are equal); the text used to end
    // at the NUL, and the error after it was lost.
    const n = await exec(client, { cmd: "printf 'a\\0b\\nerror: boom\\n'" });
    assert.equal(n.output, 'a\u0000b\nerror: boom\n');
    const ro = await call(client, 'read_output', { session_id: n.session_id ?? Number(/(\d+)\.log$/.exec(n.log_path)[1]) });
    assert.ok(ro.content[0].text.endsWith('a\u0000b\nerror: boom\n'), JSON.stringify(ro.content[0].text));
    // More stdin than a pipe holds, closed in the same call: every byte
    // arrives before the EOF (past 64 KiB they were dropped).
    const big = await exec(client, { cmd: 'wc -c', stdin: 'x'.repeat(300000), yield_time_ms: 10000 });
    assert.equal(big.output.trim(), '300000');
  } finally {
    await client.close();
  }
});

test('a line longer than a canonical terminal keeps is said to be cut', async () => {
  const { client } = await connect();
  try {
    // 4095 bytes and the newline go in whole; a byte more is dropped by
    // the kernel, and the result says so.
    const edge = await exec(client, { cmd: 'wc -c', tty: true, stdin: 'x'.repeat(4095) + '\n', yield_time_ms: 10000 });
    assert.match(edge.output, /\b4096\b/);
    assert.equal(edge.write_error, undefined);
    const over = await exec(client, { cmd: 'wc -c', tty: true, stdin: 'x'.repeat(5000) + '\n', yield_time_ms: 10000 });
    assert.match(over.output, /\b4096\b/);
    assert.equal(over.write_error, 'a line of 5000 bytes was cut to 4095: the terminal reads lines (canonical mode) and keeps at most 4095 bytes of one; start the command with tty: false to give it long lines whole');
    // write_stdin alike; a raw-mode reader takes the line whole, unsaid.
    const r = await exec(client, { cmd: 'cat > /dev/null', tty: true, yield_time_ms: 250 });
    const w = await write(client, { session_id: r.session_id, chars: 'y'.repeat(4096) + '\n', yield_time_ms: 250 });
    assert.match(w.write_error, /^a line of 4096 bytes was cut to 4095/);
    await call(client, 'kill_session', { session_id: r.session_id });
    const raw = await exec(client, { cmd: 'stty raw; head -c 6000 | wc -c', tty: true, yield_time_ms: 500 });
    const wr = await write(client, { session_id: raw.session_id, chars: 'z'.repeat(6000), yield_time_ms: 10000, wait_for: '6000' });
    assert.equal(wr.write_error, undefined);
    assert.match(wr.output, /6000/);
  } finally {
    await client.close();
  }
});

test('write_stdin refuses input once 1 MiB waits unread, and says so', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: 'sleep 60', yield_time_ms: 250 });
    const chunk = 'x'.repeat(600 * 1024);
    // 600 KiB: the pipe takes 64 KiB, the rest waits in rein.
    const a = await write(client, { session_id: r.session_id, chars: chunk, yield_time_ms: 250 });
    assert.equal(a.write_error, undefined);
    // Under the limit before it, so it goes in whole, past the limit.
    const b = await write(client, { session_id: r.session_id, chars: chunk, yield_time_ms: 250 });
    assert.equal(b.write_error, undefined);
    const c = await write(client, { session_id: r.session_id, chars: 'y', yield_time_ms: 250 });
    assert.match(c.write_error,
      /^stdin write refused: the process has not read \d+ bytes sent earlier \(at most 1048576 may wait\), so this write \(1 bytes\) was not sent$/);
    await call(client, 'kill_session', { session_id: r.session_id });
  } finally {
    await client.close();
  }
});

test('awaiting input is read from the kernel: pipe and tty prompts yes, sleep no', async () => {
  const { client } = await connect();
  try {
    for (const tty of [false, true]) {
      const r = await exec(client, { cmd: "printf 'Name: '; read x; echo \"hi $x\"", tty, yield_time_ms: 10000 });
      assert.equal(r.awaiting_input, true, `tty=${tty}`);
      assert.equal(r.prompt, 'Name: ');
      const w = await write(client, { session_id: r.session_id, chars: 'bob\n', yield_time_ms: 5000 });
      assert.match(w.output, /hi bob/);
      assert.equal(w.exit_code, 0);
    }
    const t0 = Date.now();
    const s = await exec(client, { cmd: 'sleep 30', yield_time_ms: 1000 });
    assert.ok(Date.now() - t0 >= 900, 'a sleeping process is not waiting for input');
    assert.equal(s.awaiting_input, false);
    const p = await exec(client, { cmd: "printf 'Continue? '; sleep 30", yield_time_ms: 800 });
    assert.equal(p.awaiting_input, false, 'a prompt-looking line alone is not input');
    // KILL asked for: no escalation (it said escalated: true).
    const k1 = await call(client, 'kill_session', { session_id: s.session_id, signal: 'KILL' });
    assert.equal(k1.structuredContent.signal, 'SIGKILL');
    assert.equal(k1.structuredContent.escalated, false);
    await call(client, 'kill_session', { session_id: p.session_id, signal: 'sigkill' });
  } finally {
    await client.close();
  }
});

// A stdio server (an LSP, an MCP server) waits for requests in an event
// loop over its stdin and other fds, and goes back to it while it works on
// one: the call must wait for the reply, not end at once with nothing
// (and every later poll the same).  A REPL in such a loop (node's) that
// shows its prompt still ends the call early.
test('a server in an event loop over its stdin: the call waits for its reply; a prompt still ends it', async () => {
  const { client } = await connect();
  const server = join(WORK, 'loop-server.js');
  writeFileSync(server, [
    "process.stdin.on('data', (d) => setTimeout(() => {",
    "  const l = String(d).trim();",
    "  if (l === 'prompt') process.stdout.write('> ');",
    "  else console.log('reply to ' + l);",
    '}, 700));',
    "console.log('ready');",
  ].join('\n'));
  try {
    for (const tty of [false, true]) {
      const r = await exec(client, { cmd: `node ${server}`, tty, wait_for: 'ready', yield_time_ms: 10000 });
      assert.ok(r.session_id, `tty=${tty}: running`);
      const w = await write(client, { session_id: r.session_id, chars: 'req1\n', yield_time_ms: 8000 });
      assert.match(w.output, /reply to req1/, `tty=${tty}: the reply, not an early empty result`);
      assert.equal(w.awaiting_input, true, 'still reported as waiting for input');
      const t0 = Date.now();
      const p = await write(client, { session_id: r.session_id, chars: 'prompt\n', yield_time_ms: 8000 });
      assert.match(p.output, /> $/);
      assert.ok(Date.now() - t0 < 4000, `tty=${tty}: a prompt ends the wait (${Date.now() - t0} ms)`);
      assert.equal(p.prompt, '> ');
      await call(client, 'kill_session', { session_id: r.session_id, signal: 'KILL' });
    }
  } finally {
    await client.close();
  }
});

test('kill_session: TERM-ignoring child escalates to KILL; names normalised; unknown signal and overlong grace refused', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: "trap '' TERM; echo READY; sleep 100", wait_for: 'READY' });
    const bad = await call(client, 'kill_session', { session_id: r.session_id, signal: 'SIGBOGUS' });
    assert.equal(bad.isError, true);
    const still = (await call(client, 'list_sessions', {})).structuredContent.sessions
      .find((s) => s.session_id === r.session_id);
    assert.equal(still.running, true, 'nothing was signalled');
    // CODEX_MAX_KILL_GRACE_MS: past it refused, nothing signalled.
    const long = await call(client, 'kill_session', { session_id: r.session_id, grace_ms: 60001 });
    assert.equal(long.isError, true);
    assert.equal(long.content[0].text, '`grace_ms` must be at most 60000; nothing was signalled.');
    const alive = (await call(client, 'list_sessions', {})).structuredContent.sessions
      .find((s) => s.session_id === r.session_id);
    assert.equal(alive.running, true, 'nothing was signalled');
    const k = await call(client, 'kill_session', { session_id: r.session_id, signal: 'term', grace_ms: 300 });
    assert.deepEqual(
      { ...k.structuredContent },
      { session_id: r.session_id, found: true, signal: 'SIGTERM', signalled: true, escalated: true, exit_code: 137, cleanup_incomplete: false },
    );
    const i = await exec(client, { cmd: 'echo READY; exec sleep 100', wait_for: 'READY' });
    const ki = await call(client, 'kill_session', { session_id: i.session_id, signal: 'INT', grace_ms: 60000 });
    assert.equal(ki.structuredContent.signal, 'SIGINT');
    assert.equal(ki.structuredContent.exit_code, 130);
    assert.equal(ki.structuredContent.escalated, false);
    const none = await call(client, 'kill_session', { session_id: 999999 });
    assert.equal(none.structuredContent.found, false);
    assert.equal(none.structuredContent.signalled, false);
  } finally {
    await client.close();
  }
});

// kill_session answers once the session has ended.  While it waits out
// its grace, write_stdin is refused (its wait would take the kill's place
// and answer it early, as if it had ended); a second kill_session with
// KILL ends it at once and answers with the exit, and the first answers
// then, saying it was superseded.  The server takes calls in order, so the
// first kill is waiting before the write arrives.
test('kill_session in its grace: write_stdin refused, a second kill with KILL ends it, the first says superseded', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: "trap '' TERM; echo READY; sleep 100", wait_for: 'READY' });
    const first = call(client, 'kill_session', { session_id: r.session_id, grace_ms: 60000 });
    const w = await call(client, 'write_stdin', { session_id: r.session_id, chars: 'x' });
    assert.equal(w.isError, true);
    assert.equal(w.content[0].text, `Session ${r.session_id} is being ended by kill_session, which answers once it has ended; nothing was written (read_output reads its output meanwhile).`);
    const second = await call(client, 'kill_session', { session_id: r.session_id, signal: 'KILL' });
    assert.equal(second.structuredContent.exit_code, 137);
    assert.equal(second.structuredContent.cleanup_incomplete, false);
    const f = await first;
    assert.equal(f.content[0].text, `Superseded by a later kill_session of session ${r.session_id}, which answers once it has ended; it is still ending.`);
    assert.equal(f.structuredContent.exit_code, null);
  } finally {
    await client.close();
  }
});

test('list_sessions reports an exit once; read_output reads the log afterwards', async () => {
  const { client } = await connect();
  const flag = join(WORK, 'go-list');
  try {
    const r = await exec(client, {
      cmd: `seq 1 50; echo needle-17; while [ ! -e ${flag} ]; do sleep 0.02; done; exit 9`, wait_for: 'needle',
    });
    let l = (await call(client, 'list_sessions', {})).structuredContent.sessions;
    const e = l.find((s) => s.session_id === r.session_id);
    assert.equal(e.running, true);
    assert.equal(e.exit_code, null);
    assert.equal(e.command.includes('needle-17'), true);
    assert.ok(Date.parse(e.started_at) > 0);
    writeFileSync(flag, '');
    await gone(e.pid);
    l = (await call(client, 'list_sessions', {})).structuredContent.sessions;
    const x = l.find((s) => s.session_id === r.session_id);
    assert.equal(x.running, false);
    assert.equal(x.exit_code, 9);
    l = (await call(client, 'list_sessions', {})).structuredContent.sessions;
    assert.equal(l.find((s) => s.session_id === r.session_id), undefined, 'reported once');
    const w = await call(client, 'write_stdin', { session_id: r.session_id });
    assert.equal(w.isError, true);
    let ro = (await call(client, 'read_output', { session_id: r.session_id })).structuredContent;
    assert.equal(ro.total_bytes, readFileSync(ro.log_path).length);
    assert.match(ro.output, /needle-17/);
    ro = (await call(client, 'read_output', { session_id: r.session_id, offset: 0, length: 4 })).structuredContent;
    assert.equal(ro.output, '1\n2\n');
    ro = (await call(client, 'read_output', { session_id: r.session_id, tail_lines: 2 })).structuredContent;
    assert.equal(ro.output, '50\nneedle-17\n');
    ro = (await call(client, 'read_output', { session_id: r.session_id, grep: '^needle' })).structuredContent;
    assert.equal(ro.output, '51: needle-17\n');
    // grep goes with tail_lines (the last matches) or with a byte range;
    // length alone reads from the start.
    ro = (await call(client, 'read_output', { session_id: r.session_id, grep: '^4', tail_lines: 2 })).structuredContent;
    assert.equal(ro.output, '48: 48\n49: 49\n');
    ro = (await call(client, 'read_output', { session_id: r.session_id, grep: '^[0-9]$', offset: 2, length: 4 })).structuredContent;
    assert.equal(ro.output, '2: 2\n3: 3\n');
    ro = (await call(client, 'read_output', { session_id: r.session_id, length: 4 })).structuredContent;
    assert.equal(ro.output, '1\n2\n');
    const both = await call(client, 'read_output', { session_id: r.session_id, tail_lines: 2, offset: 0 });
    assert.equal(both.isError, true);
    assert.match(both.content[0].text, /not both/);
  } finally {
    await client.close();
  }
});

test('read_output grep reads a line of 100 MB without holding it', async () => {
  const { client, transport } = await connect();
  try {
    const r = await exec(client, {
      cmd: "head -c 100000000 /dev/zero | tr '\\0' a; echo; echo 'error: END at e.c:2'",
      yield_time_ms: 30000,
    });
    const id = Number(/(\d+)\.log$/.exec(r.log_path)[1]);
    const g = await call(client, 'read_output', { session_id: id, grep: 'error' });
    assert.match(g.structuredContent.output, /^2: error: END at e\.c:2\n$/);
    // getline held the whole line: the server's peak grew by 100 MB.
    const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${transport.pid}/status`, 'utf8'))[1]);
    assert.ok(hwm < 64 * 1024, `peak ${hwm} kB`);
  } finally {
    await client.close();
  }
});

test('read_output over a capped log: grep and reads skip the dropped range', async () => {
  // A log past its cap (1 GiB) has a hole punched after its head and a
  // note naming the range; the same state is made here by hand, with the
  // same syscall (fallocate's punch), on a small log.
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: 'seq 1 100000', yield_time_ms: 10000 });
    assert.equal(r.exit_code, 0);
    const id = Number(/(\d+)\.log$/.exec(r.log_path)[1]);
    const [a, b] = [200704, 399360]; // whole 4 KiB blocks, as the spool punches
    execFileSync('fallocate', ['-p', '-o', String(a), '-l', String(b - a), r.log_path]);
    writeFileSync(`${r.log_path}.dropped`, `dropped ${a}-${b}\n`);
    const log = readFileSync(r.log_path);
    assert.equal(log[a], 0, 'the range reads as zeros');
    // The lines wholly inside the hole are gone; those around it are found.
    const before = log.subarray(0, a).toString().split('\n').slice(-2)[0];
    const after = log.subarray(b).toString().split('\n')[1];
    let g = (await call(client, 'read_output', { session_id: id, grep: `^(${before}|50000|${after})$` })).structuredContent;
    const found = g.output.split('\n').filter(Boolean).map((l) => l.replace(/^\d+: /, ''));
    assert.deepEqual(found, [before, after]);
    // Past the hole a match is numbered without the dropped lines, which
    // were never counted; the result says so.
    assert.ok(Number(/^(\d+): /m.exec(g.output.split('\n')[1])[1]) < Number(after));
    const gt = await call(client, 'read_output', { session_id: id, grep: `^${after}$` });
    assert.match(gt.content[0].text, new RegExp(`\nDropped: bytes ${a}-${b} \\(past the log's size cap\\); matches after them are numbered without their lines\nOutput:\n`));
    // Searched back, the same lines and numbers; a search back that never
    // reached the dropped range still says its numbers lack those lines.
    const back = (await call(client, 'read_output', { session_id: id, grep: `^(${before}|50000|${after})$`, tail_lines: 5 })).structuredContent;
    assert.equal(back.output, g.output);
    const bt = await call(client, 'read_output', { session_id: id, grep: `^${after}$`, tail_lines: 1 });
    assert.ok(bt.structuredContent.offset > b, `searched from ${bt.structuredContent.offset}`);
    assert.equal(bt.structuredContent.output, gt.structuredContent.output);
    assert.match(bt.content[0].text, new RegExp(`\nDropped: bytes ${a}-${b} \\(past the log's size cap\\); matches after them are numbered without their lines\nOutput:\n`));
    assert.equal(gt.structuredContent.dropped, `${a}-${b}`);
    g = (await call(client, 'read_output', { session_id: id, grep: '\\x00' })).structuredContent;
    assert.equal(g.output, '', 'no zero of the hole is a line');
    const ro = (await call(client, 'read_output', { session_id: id, offset: a - 8, length: 16 + (b - a) })).structuredContent;
    assert.match(ro.output, new RegExp(`\\[\\.\\.\\. bytes ${a}-${b} dropped: the log passed its size cap \\.\\.\\.\\]`));
    assert.ok(!ro.output.includes('\0'));
    const rt = await call(client, 'read_output', { session_id: id, offset: a - 8, length: 16 + (b - a) });
    assert.match(rt.content[0].text, new RegExp(`\nDropped: bytes ${a}-${b} \\(past the log's size cap\\)\nOutput:\n`));
    const head = await call(client, 'read_output', { session_id: id, offset: 0, length: 100 });
    assert.ok(!head.content[0].text.includes('Dropped:'), 'a range clear of the hole does not name it');
  } finally {
    await client.close();
  }
});

test('read_output cut to its budget starts on a character, never on half of one', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: "printf '\\303\\251\\303\\251\\303\\251\\303\\251\\303\\251\\n'" });
    const id = Number(/(\d+)\.log$/.exec(r.log_path)[1]);
    for (const [max, want] of [[2, 'ééé\n'], [1, 'é\n']]) {
      const o = await call(client, 'read_output', { session_id: id, max_output_tokens: max });
      assert.equal(o.structuredContent.output, want, `max_output_tokens ${max}`);
      assert.equal(o.structuredContent.offset, 11 - Buffer.byteLength(want));
    }
  } finally {
    await client.close();
  }
});

test('EPIPE on a closed stdin is reported, never fatal', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: 'exec 0<&-; echo READY; sleep 30', wait_for: 'READY' });
    const w = await write(client, { session_id: r.session_id, chars: 'data\n' });
    assert.match(w.write_error, /Broken pipe \(the process closed its input\)/);
    assert.ok(w.session_id, 'the session goes on');
    assert.deepEqual(await client.ping(), {});
    await call(client, 'kill_session', { session_id: r.session_id });
    // Closed at rein's end (Ctrl-D), the process is not blamed.
    const c = await exec(client, { cmd: 'sleep 30', yield_time_ms: 250 });
    const d = await write(client, { session_id: c.session_id, chars: '\\x04' });
    assert.equal(d.write_error, undefined);
    const m = await write(client, { session_id: c.session_id, chars: 'more' });
    assert.equal(m.write_error, "stdin write failed: stdin was already closed at rein's end (by an earlier \\x04 or close_stdin), so this write was not sent");
    await call(client, 'kill_session', { session_id: c.session_id });
  } finally {
    await client.close();
  }
});

// CODEX_SCAN_MAX (src/mcp/codex.h): the most log a condensed view reads.
const SCAN_MAX = 64 * 1024 * 1024;

// The log bytes [from, to) a condensed result covers, from its Truncated:
// line, and the log line it starts on.
function covers(text) {
  const m = /\nTruncated: \d+ bytes not shown \(over max_output_tokens\); this output covers log bytes (\d+)-(\d+)(?:, from log line (\d+))?\n/.exec(text);
  assert.ok(m, `no Truncated: line in ${JSON.stringify(text.slice(0, 600))}`);
  return { from: Number(m[1]), to: Number(m[2]), line: Number(m[3]) };
}

// Checks a condensed view ending at log byte `to` against its log: every
// line is a marker or a line of the log, nothing else (no bare gap line);
// each `omitted` marker names whole lines of the log, its byte range
// starting and ending on a line start (or at `to`) and its line numbers
// the log's, as read_output's grep counts them (one more than the
// newlines before); the exit marker counts the log's lines up to `to`.
// Returns the omitted markers, parsed.
function checkView(output, log, to) {
  const nl = [];
  for (let i = log.indexOf(10); i >= 0 && i < to; i = log.indexOf(10, i + 1)) nl.push(i);
  const before = (off) => { // newlines in log[0, off)
    let lo = 0, hi = nl.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (nl[m] < off) lo = m + 1; else hi = m; }
    return lo;
  };
  const linesTo = (off) => before(off) + (off > 0 && log[off - 1] !== 10 ? 1 : 0);
  const text = log.subarray(0, to).toString();
  for (const l of output.split('\n').slice(0, -1))
    assert.ok(/^\[rein\] [a-z]+(?: .*)?$/.test(l) || text.includes(`${l}\n`) || text.endsWith(l),
      `neither a marker nor a line of the log: ${JSON.stringify(l.slice(0, 200))}`);
  const exit = /^\[rein\] (?:exit|signal) .*· (\d+) lines?$/m.exec(output);
  assert.ok(exit, 'an exit marker');
  assert.equal(Number(exit[1]), linesTo(to), 'the exit marker counts the log\'s lines');
  const found = [];
  for (const m of output.matchAll(/^\[rein\] omitted (\d+) lines? \(lines? (\d+)(?:-(\d+))?, bytes (\d+)-(\d+)(; not scanned)?[;)]/gm)) {
    const [n, a, x, y] = [m[1], m[2], m[4], m[5]].map(Number);
    const b = m[3] === undefined ? a : Number(m[3]);
    assert.ok(x === 0 || log[x - 1] === 10, `${m[0]}: starts a line`);
    assert.ok(y === to || log[y - 1] === 10, `${m[0]}: ends a line`);
    assert.equal(a, before(x) + 1, `${m[0]}: its first line is the log's`);
    assert.equal(b, linesTo(y), `${m[0]}: its last line is the log's`);
    assert.equal(n, b - a + 1, `${m[0]}: its count`);
    found.push({ a, b, x, y, unscanned: m[6] !== undefined });
  }
  return found;
}

test('markers of a later poll name log bytes and log lines, under and over 1 MiB', async () => {
  const { client } = await connect();
  try {
    // Under 1 MiB: the condensed view is made from the buffered bytes.
    const first = await call(client, 'exec_command', {
      cmd: 'seq 1 20000; echo FIRST-DONE; read x; seq 1 20000 | sed "s/^/b/"; echo "x.c:1:1: error: SECOND"; seq 1 20000 | sed "s/^/c/"',
      wait_for: 'FIRST-DONE', max_output_tokens: 200,
    });
    const s = first.structuredContent;
    assert.ok(s.session_id);
    const c0 = covers(first.content[0].text);
    assert.deepEqual([c0.from, c0.to, c0.line], [0, 108894 + 11, 1]);
    const firstText = (await call(client, 'write_stdin', { session_id: s.session_id, yield_time_ms: 5000 })).content[0].text;
    assert.doesNotMatch(firstText, /Truncated:/, 'nothing new before the input');
    const w = await call(client, 'write_stdin', { session_id: s.session_id, chars: 'go\n', yield_time_ms: 10000, max_output_tokens: 200 });
    const out = w.structuredContent.output;
    assert.equal(w.structuredContent.exit_code, 0);
    const c = covers(w.content[0].text);
    assert.equal(c.from, 108894 + 11, 'after "1".."20000" and "FIRST-DONE"');
    assert.equal(c.line, 20002);
    const log = readFileSync(w.structuredContent.log_path);
    checkView(s.output, log, c0.to);
    const marks = checkView(out, log, c.to);
    // The gap before the error: its range ends where the error starts,
    // and its last line is the one before the error's, as grep numbers it.
    const m = /bytes (\d+)-(\d+)\)\nx\.c:1:1: error: SECOND$/m.exec(out);
    assert.ok(m, out);
    assert.equal(Number(m[1]), c.from);
    const ro = (await call(client, 'read_output', { session_id: s.session_id, offset: Number(m[2]), length: 22 })).structuredContent;
    assert.equal(ro.output, 'x.c:1:1: error: SECOND');
    const g = (await call(client, 'read_output', { session_id: s.session_id, grep: 'error: SECOND' })).structuredContent;
    assert.equal(Number(/^(\d+): /.exec(g.output)[1]), marks[0].b + 1);
    assert.match(out, /^\[rein\] exit 0 · .*· 60002 lines$/m);

    // Over 1 MiB: the view is made from the log.
    const t = await exec(client, {
      cmd: 'seq 1 100; echo FIRST-DONE; read x; seq 1 200000; echo "error: mid at y.c:9"; seq 1 200000',
      wait_for: 'FIRST-DONE', max_output_tokens: 300,
    });
    const v = await call(client, 'write_stdin', { session_id: t.session_id, chars: 'go\n', yield_time_ms: 10000, max_output_tokens: 300 });
    assert.match(v.content[0].text, /\nOmitted: \d+ bytes over the 1 MiB buffer; the condensed output was made from the log/);
    const cv = covers(v.content[0].text);
    assert.equal(cv.line, 102);
    const vlog = readFileSync(v.structuredContent.log_path);
    const vm = checkView(v.structuredContent.output, vlog, cv.to);
    assert.equal(vm[0].a, 102);
    const vg = (await call(client, 'read_output', { session_id: t.session_id, grep: 'error: mid' })).structuredContent;
    assert.equal(Number(/^(\d+): /.exec(vg.output)[1]), 200102);
    assert.ok(vm.some((k) => k.b === 200101), 'a gap ends on the line before the error');
  } finally {
    await client.close();
  }
});

test('a hazard in the middle the 1 MiB buffer dropped is still shown, with log offsets', async () => {
  const { client } = await connect();
  try {
    const r = await call(client, 'exec_command', {
      cmd: 'seq 1 200000; echo "error: boom at x.c:3"; seq 1 200000', max_output_tokens: 300,
    });
    const sc = r.structuredContent;
    const text = r.content[0].text;
    assert.match(text, /\nOmitted: \d+ bytes over the 1 MiB buffer; the condensed output was made from the log/);
    assert.match(sc.output, /^error: boom at x\.c:3$/m);
    // The marker before it names the log bytes up to the error line.
    const at = Number(/bytes 0-(\d+)\)\nerror: boom/.exec(sc.output)[1]);
    // The session exited: its id is in its log's name.
    const id = Number(/logs\/(\d+)\.log/.exec(text)[1]);
    const ro = (await call(client, 'read_output', { session_id: id, offset: at, length: 21 })).structuredContent;
    assert.equal(ro.output, 'error: boom at x.c:3\n');

    // A budget that holds it all gets it all, verbatim, from the log.
    const whole = await exec(client, { cmd: 'seq 1 300000', max_output_tokens: 1000000 });
    assert.equal(whole.truncated, false);
    assert.equal(whole.omitted_bytes, 0);
    assert.equal(whole.output, Array.from({ length: 300000 }, (_, i) => `${i + 1}\n`).join(''));

    // A later chunk of a running session: ranges are offsets in its log.
    const s = await exec(client, {
      cmd: 'seq 1 300000; echo FIRST-DONE; read x; seq 1 200000; echo "error: mid at y.c:9"; seq 1 200000',
      wait_for: 'FIRST-DONE', max_output_tokens: 300,
    });
    assert.ok(s.session_id);
    const w = await write(client, { session_id: s.session_id, chars: 'go\n', yield_time_ms: 10000, max_output_tokens: 300 });
    assert.equal(w.exit_code, 0);
    assert.match(w.output, /^error: mid at y\.c:9$/m);
    const m = /bytes (\d+)-(\d+)\)\nerror: mid/.exec(w.output);
    assert.ok(Number(m[1]) > 0, 'the range starts past the first chunk');
    const ro2 = (await call(client, 'read_output', { session_id: s.session_id, offset: Number(m[2]), length: 19 })).structuredContent;
    assert.equal(ro2.output, 'error: mid at y.c:9');
  } finally {
    await client.close();
  }
});

test('CODEX_SCAN_MAX: a middle up to it is read from the log, past it the head and tail are condensed around a marker', async () => {
  const { client } = await connect();
  try {
    // 33554430 bytes are whole lines of "ordinary\n", so the error starts a line.
    const cmd = (n) => `{ yes ordinary | head -c 33554430; echo "error: boom at x.c:3"; yes ordinary | head -c 40000000; } | head -c ${n}`;
    const at = await call(client, 'exec_command', { cmd: cmd(SCAN_MAX), max_output_tokens: 300 });
    assert.match(at.content[0].text, /the condensed output was made from the log and covers them/);
    assert.match(at.structuredContent.output, /^error: boom at x\.c:3$/m);
    // One byte past it, in a later poll (its bytes and lines do not start
    // at the log's first), ending mid-line: the head and tail the buffer
    // kept are condensed, the middle between them is one marker that
    // says it was not scanned, and every number is the log's.
    const s = await exec(client, { cmd: `seq 1 5; echo READY; read x; ${cmd(SCAN_MAX + 1)}`, wait_for: 'READY' });
    const past = await call(client, 'write_stdin', { session_id: s.session_id, chars: 'go\n', yield_time_ms: 30000, max_output_tokens: 300 });
    const text = past.content[0].text;
    assert.equal(past.structuredContent.exit_code, 0);
    assert.match(text, /held in the log only \(over the 1 MiB buffer\); hazards among them are not shown \(the output is over the 64 MiB a condensed view reads from the log\): read_output with grep searches them\n/);
    const c = covers(text);
    assert.deepEqual([c.from, c.to, c.line], [16, 16 + SCAN_MAX + 1, 7]);
    const out = past.structuredContent.output;
    assert.ok(Buffer.byteLength(out) <= 1200);
    assert.doesNotMatch(out, /^\[\.\.\./m, 'no bare gap line');
    const log = readFileSync(past.structuredContent.log_path);
    const marks = checkView(out, log, c.to);
    const gap = marks.filter((k) => k.unscanned);
    assert.equal(gap.length, 1, out);
    // It holds the buffer's omitted middle and the error in it; the
    // condensed head and tail are within the 1 MiB kept in memory.
    assert.ok(gap[0].x <= c.from + 512 * 1024 && gap[0].y >= c.to - 512 * 1024, out);
    assert.ok(gap[0].x <= c.from + 33554430 && gap[0].y > c.from + 33554430);
    const g = (await call(client, 'read_output', { session_id: s.session_id, grep: 'error: boom' })).structuredContent;
    const line = Number(/^(\d+): error: boom at x\.c:3$/m.exec(g.output)[1]);
    assert.ok(line >= gap[0].a && line <= gap[0].b, `grep's line ${line} is in ${gap[0].a}-${gap[0].b}`);
  } finally {
    await client.close();
  }
});

test('max_output_tokens: never over budget, hazards kept, truncation named', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, {
      cmd: 'seq 1 20000; echo "error: the build broke at step 7"; seq 1 3000', max_output_tokens: 200,
    });
    assert.equal(r.exit_code, 0);
    assert.ok(Buffer.byteLength(r.output) <= 800, `${Buffer.byteLength(r.output)} bytes`);
    assert.match(r.output, /error: the build broke at step 7/);
    assert.equal(r.truncated, true);
    assert.ok(r.omitted_bytes > 0);
    assert.ok(r.original_token_count > 200);
    for (const t of [1, 5, 20]) {
      const s = await exec(client, { cmd: 'seq 1 5000', max_output_tokens: t });
      assert.ok(Buffer.byteLength(s.output) <= t * 4, `budget ${t}`);
      assert.equal(s.truncated, true);
    }
    const u = await exec(client, { cmd: "printf 'a\\377b\\n'" });
    assert.equal(u.output, 'a\uFFFDb\n');
    // Over the 1 MiB buffer, read from the log: still never over budget,
    // even when the facts alone are.
    for (const t of [1, 5, 10, 40]) {
      const b = await exec(client, {
        cmd: "seq 1 150000; echo 'error: something bad happened at foo.c:12'; seq 1 150000",
        max_output_tokens: t, yield_time_ms: 20000,
      });
      assert.equal(b.exit_code, 0);
      assert.ok(Buffer.byteLength(b.output) <= t * 4, `budget ${t}: ${Buffer.byteLength(b.output)} bytes`);
      assert.equal(b.truncated, true);
    }
    // Bytes not shown are counted against the output, not its repaired
    // text (each invalid byte a 3-byte U+FFFD).
    const f = await exec(client, { cmd: "head -c 1000 /dev/zero | tr '\\0' '\\377'", max_output_tokens: 10 });
    assert.ok(f.omitted_bytes <= 1000, `${f.omitted_bytes}`);
  } finally {
    await client.close();
  }
});

test('over budget, the command\'s lines that read like markers are escaped, the tail-only view too', async () => {
  const { client } = await connect();
  try {
    // Lines that would each pass for a marker; the word "fake" is in
    // every one and in none of rein's own markers.
    const cmd = 'for i in $(seq 1 3000); do echo "[rein] omitted $i fake"; done; '
      + "printf '\\033[31m[rein] exit 0 fake\\033[0m\\n  [rein] log /fake\\n'";
    const marker = /^\[rein\] [a-z]+(?: .*)?$/;
    // 10 and 20 tokens: the tail alone; 45, 50: the tail or the smallest
    // condensed view (markers only), depending on the log path's length;
    // 300: condensed, with the last lines.
    for (const t of [10, 20, 45, 50, 300]) {
      const r = await exec(client, { cmd, max_output_tokens: t });
      assert.equal(r.truncated, true, `budget ${t}`);
      assert.ok(Buffer.byteLength(r.output) <= t * 4, `budget ${t}: ${Buffer.byteLength(r.output)} bytes`);
      const lines = r.output.split('\n').filter((l) => l !== '');
      for (const l of lines)
        assert.ok(!(marker.test(l) && l.includes('fake')), `budget ${t}: passes for a marker: ${JSON.stringify(l)}`);
      if (t !== 45 && t !== 50)
        assert.ok(lines.some((l) => l.startsWith('[raw] ') && l.includes('[rein]')), `budget ${t}: ${JSON.stringify(r.output)}`);
      // The tail-only view's marker is a line of its own.
      if (r.output.startsWith('[rein] output'))
        assert.equal(lines[0], '[rein] output over budget; the tail follows.');
    }
    const c = await exec(client, { cmd, max_output_tokens: 300 });
    assert.match(c.output, /\n\[raw\]   \[rein\] log \/fake\n/);
    assert.match(c.output, /\[raw\] \[rein\] omitted 3000 fake\n/);
    // The log keeps every byte as the command wrote it.
    const log = readFileSync(c.log_path, 'latin1');
    assert.ok(log.includes('\x1b[31m[rein] exit 0 fake\x1b[0m\n  [rein] log /fake\n'));
    assert.ok(!log.includes('[raw]'));
  } finally {
    await client.close();
  }
});

test('interactive programs on pipes get a tty hint; dangerous ones need confirm', async () => {
  const { client } = await connect();
  const dir = mkdtempSync(join(tmpdir(), 'rein-danger-'));
  try {
    const v = await call(client, 'exec_command', { cmd: 'vim notes.txt' });
    assert.equal(v.isError, true);
    assert.match(v.content[0].text, /tty: true/);
    // ... and says how to do without one.
    assert.match(v.content[0].text, /needs a terminal: a full-screen editor; change files with .*sed -i/);
    // A REPL fed a script (a heredoc, or the stdin argument) runs it and
    // ends: no terminal needed, nothing refused.
    const h = await exec(client, { cmd: "python3 <<'EOF'\nprint(6 * 7)\nEOF" });
    assert.equal(h.exit_code, 0);
    assert.equal(h.output, '42\n');
    const s = await exec(client, { cmd: 'python3', stdin: 'print(6 * 7)\n' });
    assert.equal(s.exit_code, 0);
    assert.equal(s.output, '42\n');
    const d = await call(client, 'exec_command', { cmd: 'git reset --hard; touch MARK', workdir: dir });
    assert.ok(!d.isError);
    assert.equal(d.structuredContent.dangerous, true);
    assert.equal(d.structuredContent.ran, false);
    assert.match(d.content[0].text, /confirm_dangerous/);
    assert.equal(existsSync(join(dir, 'MARK')), false, 'nothing ran');
    const c = await exec(client, { cmd: 'git reset --hard; touch MARK', workdir: dir, confirm_dangerous: true });
    assert.ok(c.exit_code !== undefined);
    assert.equal(existsSync(join(dir, 'MARK')), true);
  } finally {
    await client.close();
  }
});

test('on pipes, editors set to no-terminal programs, pagers and a shell on the pipe run; a bare commit or REPL is still refused', async () => {
  // No editor from the runner's environment: an empty one is unset.
  const { client } = await connect({ GIT_EDITOR: '', VISUAL: '', EDITOR: '', GIT_SEQUENCE_EDITOR: '' });
  const dir = mkdtempSync(join(tmpdir(), 'rein-editor-'));
  const ident = {
    GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@x', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@x',
  };
  try {
    execFileSync('git', ['init', '-q', dir]);
    writeFileSync(join(dir, 'f.txt'), 'one\n');
    execFileSync('git', ['add', 'f.txt'], { cwd: dir });
    const subjects = () => execFileSync('git', ['log', '--format=%s'], { cwd: dir, encoding: 'utf8' });
    // A bare commit opens vi: refused with the tty hint, nothing committed.
    const bare = await call(client, 'exec_command', { cmd: 'git commit -q', workdir: dir, env: ident });
    assert.equal(bare.isError, true);
    assert.match(bare.content[0].text, /tty: true/);
    assert.match(bare.content[0].text, /git opens an editor for the commit message; give the message with -m/);
    // The editor set on the line, or in the `env` argument, to a program
    // that needs no terminal: it runs, and the editor wrote the message.
    const line = await exec(client, { cmd: "GIT_EDITOR='sed -i 1s/^/on-the-line/' git commit -q", workdir: dir, env: ident });
    assert.equal(line.exit_code, 0, line.output);
    const viaEnv = await exec(client, {
      cmd: 'git commit -q --allow-empty', workdir: dir, env: { ...ident, GIT_EDITOR: 'sed -i 1s/^/via-env/' },
    });
    assert.equal(viaEnv.exit_code, 0, viaEnv.output);
    assert.equal(subjects(), 'via-env\non-the-line\n');
    // ... but not to one that needs a terminal.
    const vim = await call(client, 'exec_command', { cmd: 'GIT_EDITOR=vim git commit --allow-empty', workdir: dir, env: ident });
    assert.equal(vim.isError, true);
    // A pager whose output is a pipe prints, like cat.
    const less = await exec(client, { cmd: 'less f.txt', workdir: dir });
    assert.equal(less.exit_code, 0);
    assert.equal(less.output, 'one\n');
    // A shell on pipes reads commands from them: driven with write_stdin.
    const sh = await exec(client, { cmd: 'bash', yield_time_ms: 250 });
    assert.ok(sh.session_id !== undefined, 'bash waits for commands');
    const w = await write(client, { session_id: sh.session_id, chars: 'echo $((6 * 7))\n', wait_for: '^42$' });
    assert.match(w.output, /^42$/m);
    const end = await write(client, { session_id: sh.session_id, chars: 'exit 3\n', yield_time_ms: 5000 });
    assert.equal(end.exit_code, 3);
    // A bare REPL on pipes reads the whole script before running it, with
    // no prompt: still refused.
    const py = await call(client, 'exec_command', { cmd: 'python3' });
    assert.equal(py.isError, true);
    assert.match(py.content[0].text, /tty: true/);
  } finally {
    await client.close();
  }
});

test('session log resources: read (tail), subscribe, updated on new output', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: 'echo first; read x; echo "second $x"; read y', wait_for: 'first' });
    const uri = `rein://session/${r.session_id}/log`;
    const { resources } = await client.listResources();
    assert.ok(resources.some((x) => x.uri === uri));
    const got = await client.readResource({ uri });
    assert.equal(got.contents[0].text, 'first\n');
    const updated = new Promise((resolve) => {
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
        if (n.params.uri === uri) resolve(n);
      });
    });
    await client.subscribeResource({ uri });
    await write(client, { session_id: r.session_id, chars: 'go\n', wait_for: 'second' });
    await updated;
    const again = await client.readResource({ uri });
    assert.equal(again.contents[0].text, 'first\nsecond go\n');
    await call(client, 'kill_session', { session_id: r.session_id });
  } finally {
    await client.close();
  }
});

test('timeout_ms and idle_timeout_ms end the session', async () => {
  const { client } = await connect();
  try {
    // The result says rein ended it: a SIGTERM alone reads like a crash.
    const t = await call(client, 'exec_command', { cmd: 'sleep 30', timeout_ms: 300, yield_time_ms: 10000 });
    assert.equal(t.structuredContent.exit_code, 143);
    assert.equal(t.structuredContent.reason, 'overall-timeout');
    assert.match(t.content[0].text, /\nEnded: timeout_ms reached; rein ended the session\n/);
    const i = await exec(client, { cmd: 'echo a; sleep 30', idle_timeout_ms: 300, yield_time_ms: 10000 });
    assert.equal(i.exit_code, 143);
    assert.equal(i.reason, 'no-output-timeout');
    assert.equal(i.output, 'a\n');
    const e = await exec(client, { cmd: 'exit 3', yield_time_ms: 10000 });
    assert.equal(e.reason, 'exit');
  } finally {
    await client.close();
  }
});

test('LRU at 64: the least recently used is pruned (exited first) and named', async () => {
  const { client } = await connect();
  const flag = join(WORK, 'go-lru');
  try {
    const ids = [];
    for (let i = 0; i < 64; i++) {
      const cmd = i === 10
        ? `echo up; while [ ! -e ${flag} ]; do sleep 0.02; done`
        : 'echo up; exec sleep 60';
      const r = await exec(client, { cmd, wait_for: 'up' });
      assert.ok(r.session_id, `session ${i} runs`);
      ids.push(r.session_id);
      // From the 60th on, a result that leaves one running warns (Codex's
      // WARNING_SESSIONS); before, none does.
      assert.equal(r.open_sessions, i + 1 >= 60 ? i + 1 : undefined, `session ${i}`);
    }
    assert.equal(new Set(ids).size, 64, 'ids are never reused');
    // Full: a command that exits within its yield takes no place (Codex:
    // it never touches the store), so it prunes none of the 64.
    const quick = await exec(client, { cmd: 'echo quick' });
    assert.equal(quick.exit_code, 0);
    assert.deepEqual(quick.pruned, [], 'an early exit prunes nothing');
    assert.equal((await call(client, 'list_sessions', {})).structuredContent.sessions.length, 64);
    const pid10 = (await call(client, 'list_sessions', {})).structuredContent.sessions
      .find((s) => s.session_id === ids[10]).pid;
    writeFileSync(flag, '');
    await gone(pid10);
    // Full: the exited (unreported) session goes before the oldest live one.
    let r = await exec(client, { cmd: 'echo up; exec sleep 60', wait_for: 'up' });
    assert.deepEqual(r.pruned, [ids[10]]);
    // Full again: now the least recently used live one, ids[0]...
    await write(client, { session_id: ids[1] }); // ...after touching ids[1]
    r = await exec(client, { cmd: 'echo up; exec sleep 60', wait_for: 'up' });
    assert.deepEqual(r.pruned, [ids[0]]);
    const w = await call(client, 'write_stdin', { session_id: ids[0] });
    assert.equal(w.isError, true);
    r = await exec(client, { cmd: 'echo up; exec sleep 60', wait_for: 'up' });
    assert.deepEqual(r.pruned, [ids[2]], 'ids[1] was used recently');
    const list = (await call(client, 'list_sessions', {})).structuredContent.sessions;
    assert.equal(list.length, 64);
  } finally {
    await client.close();
  }
});

// More exec_commands at once than the cap: the two past the 64 starting
// at once take their place at spawn, with their spawn time as their stamp,
// while their first call is in flight.  The other 64 return first, and
// must not prune those two (the oldest stamps): no session is pruned while
// a call on it is in flight, so each pruned one was returned (as running)
// before a later result names it, no result names its own session, and
// every session not named answers write_stdin.
test('LRU: 66 exec_commands at once; none is pruned while its first call is in flight', async () => {
  const { client } = await connect();
  const N = 66;
  const fifos = [join(WORK, 'go-first'), join(WORK, 'go-last')];
  // Each held open for writing (O_RDWR does not block), so each shell's
  // `read` waits for its line, however late it opens its fifo.
  const go = fifos.map((f) => {
    execFileSync('mkfifo', [f]);
    return openSync(f, constants.O_RDWR);
  });
  try {
    const order = [];
    const calls = [];
    for (let i = 0; i < N; i++) {
      const cmd = `echo up; read -r -u 3 _ 3<${fifos[i < 64 ? 0 : 1]}; echo go; exec sleep 300`;
      calls.push(call(client, 'exec_command', { cmd, wait_for: 'go', yield_time_ms: 30000 })
        .then((r) => { order.push(r); return r; }));
    }
    // Every first call is in flight (its session listed) before any ends.
    const t0 = Date.now();
    while ((await call(client, 'list_sessions', {})).structuredContent.sessions.length < N) {
      assert.ok(Date.now() - t0 < POLL_LIMIT_MS, 'all sessions started');
      await new Promise((r) => setImmediate(r));
    }
    // The 64 that started first return, then the last two.
    writeSync(go[0], 'x\n'.repeat(64));
    await Promise.all(calls.slice(0, 64));
    writeSync(go[1], 'x\n'.repeat(N - 64));
    await Promise.all(calls);
    const returned = new Set();
    const pruned = new Set();
    for (const r of order) {
      assert.ok(!r.isError, r.content[0].text);
      const sc = r.structuredContent;
      const text = r.content[0].text;
      assert.ok(sc.session_id, `running: ${text.slice(0, 300)}`);
      assert.ok(!pruned.has(sc.session_id), `session ${sc.session_id} was pruned before its result`);
      assert.doesNotMatch(text, /Session: pruned/);
      for (const id of sc.pruned) {
        assert.ok(returned.has(id) || id === sc.session_id,
          `session ${id} pruned while its first call was in flight`);
        assert.notEqual(id, sc.session_id, 'a result names its own session as pruned');
        pruned.add(id);
      }
      if (sc.pruned.length)
        assert.match(text, new RegExp(`Pruned sessions: ${sc.pruned.join(', ')}\\n`));
      returned.add(sc.session_id);
    }
    assert.equal(returned.size, N);
    assert.equal(pruned.size, N - 64, 'pruned back to the cap');
    const kept = [...returned].filter((id) => !pruned.has(id)).sort();
    const list = (await call(client, 'list_sessions', {})).structuredContent.sessions;
    assert.deepEqual(list.map((e) => e.session_id).sort(), kept);
    // Each one kept is still driven: a write (a key, not an empty poll,
    // which lasts at least 5 s) returns it running.
    const ws = await Promise.all(kept.map((id) => write(client, { session_id: id, chars: '\n' })));
    assert.deepEqual(ws.map((w) => w.session_id).sort(), kept);
  } finally {
    go.forEach((fd) => closeSync(fd));
    await client.close();
  }
});

test('100 MB of output: server memory stays bounded, the log is complete', async () => {
  const { client, transport } = await connect();
  try {
    const total = 100 * 1000 * 1000;
    const r = await exec(client, {
      cmd: `yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c ${total}`, yield_time_ms: 30000,
    });
    let last = r;
    if (r.exit_code === undefined) last = (await drain(client, r.session_id)).last;
    assert.equal(last.exit_code, 0);
    assert.equal(statSync(r.log_path).size, total);
    const status = readFileSync(`/proc/${transport.pid}/status`, 'utf8');
    const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(status)[1]);
    assert.ok(hwm < 64 * 1024, `server peak RSS ${hwm} kB`);
    assert.ok(Buffer.byteLength(r.output) <= 40000);
    assert.equal(r.truncated, true);
  } finally {
    await client.close();
  }
});

test('stdin EOF: every session and its descendants end, exit 0 within 3 s', async () => {
  const { client, transport } = await connect();
  const server = transport.pid;
  const pids = [], ids = [];
  try {
    await exec(client, { cmd: 'echo up; exec sleep 100', wait_for: 'up' });
    await exec(client, { cmd: "trap '' TERM; echo up; sleep 100", wait_for: 'up' });
    const b = await exec(client, { cmd: 'bash --norc --noprofile', tty: true });
    await write(client, { session_id: b.session_id, chars: 'sleep 200 &\n', yield_time_ms: 5000 });
    await write(client, { session_id: b.session_id, chars: 'echo bg=$!\n', yield_time_ms: 5000, wait_for: 'bg=\\d+' });
    for (const s of (await call(client, 'list_sessions', {})).structuredContent.sessions) {
      pids.push(s.pid, ...descendants(s.pid));
      ids.push(s.session_id);
    }
    assert.ok(pids.length >= 4, `pids ${pids}`);
  } finally {
    const t0 = Date.now();
    const exited = new Promise((resolve) => transport._process.on('exit', (code) => resolve(code)));
    transport._process.stdin.end();
    const code = await exited;
    assert.ok(Date.now() - t0 < 3000, `exit took ${Date.now() - t0} ms`);
    assert.equal(code, 0);
    for (const p of pids) assert.equal(existsSync(`/proc/${p}`), false, `pid ${p} survived`);
    await client.close();
  }
  // Each is recorded as ended by rein's shutdown, not as a manual cancel.
  const runs = JSON.parse(execFileSync(REIN_BIN, ['ps', '--all', '--json'],
    { env: { ...process.env, REIN_STATE_DIR: STATE }, maxBuffer: 256 << 20 }).toString());
  assert.equal(ids.length, 3);
  for (const id of ids)
    assert.equal(runs.find((r) => r.id === id)?.reason, 'shutdown', `run ${id}`);
});

// The watchman of server pid (rein serve's `rein reconcile --watch FD
// --pid PID`): found by its arguments, only to be watched, never signalled.
function watchmen(server) {
  const found = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    let argv;
    try { argv = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0'); } catch { continue; }
    if (argv[1] === 'reconcile' && argv[2] === '--watch' && argv[5] === String(server)) found.push(Number(e));
  }
  return found;
}

// /proc/PID/stat's fields after the command: [state, ppid, pgrp, session].
function statOf(pid) {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return s.slice(s.lastIndexOf(')') + 2).split(' ');
}

test('a SIGKILLed server: its watchman ends every session and what it started, at once; a clean stop leaves no watchman', async () => {
  const { client, transport } = await connect();
  const server = transport.pid;
  const pids = [];
  let ids;
  try {
    // One watchman: neither the server's child nor in its session.
    const w = watchmen(server);
    assert.equal(w.length, 1, `watchmen of ${server}: ${w}`);
    const [, ppid, , sid] = statOf(w[0]);
    assert.notEqual(Number(ppid), server);
    assert.notEqual(sid, statOf(server)[3]);
    await exec(client, { cmd: 'sleep 100 & setsid sleep 101 & echo up; exec sleep 102', wait_for: 'up' });
    const b = await exec(client, { cmd: 'bash --norc --noprofile', tty: true });
    await write(client, { session_id: b.session_id, chars: 'sleep 200 &\necho bg=$!\n', yield_time_ms: 5000, wait_for: 'bg=\\d+' });
    const sessions = (await call(client, 'list_sessions', {})).structuredContent.sessions;
    // [the pipe session, the tty one]
    ids = [...sessions].sort((x, y) => Number(x.tty) - Number(y.tty)).map((x) => x.session_id);
    for (const x of sessions) pids.push(x.pid, ...descendants(x.pid));
    assert.ok(pids.length >= 5, `pids ${pids}`);
    const exited = new Promise((resolve) => transport._process.on('exit', (code, signal) => resolve(signal)));
    process.kill(server, 'SIGKILL');
    assert.equal(await exited, 'SIGKILL');
    // No other rein starts: the watchman alone ends them, then itself.
    for (const p of pids) await gone(p);
    await gone(w[0]);
  } finally {
    await client.close();
  }
  const runs = JSON.parse(execFileSync(REIN_BIN, ['ps', '--all', '--json'],
    { env: { ...process.env, REIN_STATE_DIR: STATE }, maxBuffer: 256 << 20 }).toString());
  // The pipe session lives on until the watchman ends it.  The tty one
  // gets the hangup of its terminal as the server's PTY master closes,
  // and may be gone before the watchman looks (then it is recorded lost:
  // nothing of it was left to signal).
  assert.equal(ids.length, 2);
  assert.equal(runs.find((r) => r.id === ids[0])?.reason, 'orphan-reaped', `run ${ids[0]}`);
  assert.ok(['orphan-reaped', 'lost'].includes(runs.find((r) => r.id === ids[1])?.reason), `run ${ids[1]}`);

  // A clean stop: the watchman leaves at once and reconciles nothing.
  const second = await connect();
  const w2 = watchmen(second.transport.pid);
  assert.equal(w2.length, 1);
  const s = await exec(second.client, { cmd: 'echo up; exec sleep 100', wait_for: 'up' });
  await second.client.close();
  await gone(w2[0]);
  const after = JSON.parse(execFileSync(REIN_BIN, ['ps', '--all', '--json'],
    { env: { ...process.env, REIN_STATE_DIR: STATE }, maxBuffer: 256 << 20 }).toString());
  assert.equal(after.find((r) => r.id === s.session_id)?.reason, 'shutdown');
});

test('progress during a wait; cancelling a call ends its wait, not the session', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: 'while :; do echo tick; sleep 0.1; done', wait_for: 'tick' });
    const ac = new AbortController();
    let progressed = 0;
    const pending = client.callTool(
      { name: 'write_stdin', arguments: { session_id: r.session_id, yield_time_ms: 30000 } },
      undefined,
      {
        signal: ac.signal,
        onprogress: (p) => {
          progressed++;
          assert.ok(p.progress > 0);
          ac.abort();
        },
      },
    );
    await assert.rejects(pending);
    assert.ok(progressed >= 1, 'a progress notification arrived');
    const w = await write(client, { session_id: r.session_id, yield_time_ms: 5000, wait_for: 'tick' });
    assert.ok(w.session_id, 'the session survived the cancellation');
    assert.match(w.output, /tick/);
    const k = await call(client, 'kill_session', { session_id: r.session_id });
    assert.equal(k.structuredContent.exit_code, 143);
  } finally {
    await client.close();
  }
});

test('an integer past 64 bits gets an answer naming it, not silence', async () => {
  // JavaScript sends 1e19 as 10000000000000000000, valid JSON that jansson
  // cannot hold: the answer must still carry the call's id.
  const { client } = await connect();
  try {
    await assert.rejects(
      client.callTool({ name: 'exec_command', arguments: { cmd: 'echo ok', yield_time_ms: 1e19 } },
        undefined, { timeout: 5000 }),
      (e) => e.code === -32602 && /integer is out of range \(too big integer near '10000000000000000000'/.test(e.message),
    );
    const r = await exec(client, { cmd: 'echo still-here' });
    assert.match(r.output, /still-here/);
  } finally {
    await client.close();
  }
});

test('wait_for never matches the gap rein puts between a buffer\'s head and tail', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, {
      cmd: "sleep 0.5; head -c 3000000 /dev/zero | tr '\\0' a; echo END; exec sleep 60", yield_time_ms: 250,
    });
    assert.ok(r.session_id);
    // All of it is in the log, none delivered: the buffer holds its head
    // and tail around a gap of about 2 MB.
    const t0 = Date.now();
    while (!existsSync(r.log_path) || statSync(r.log_path).size < 3000004) {
      assert.ok(Date.now() - t0 < POLL_LIMIT_MS, 'the output reached the log');
      await new Promise((res) => setTimeout(res, 20));
    }
    // The gap's own line does not match: the poll waits out its yield.
    let t1 = Date.now();
    await write(client, { session_id: r.session_id, yield_time_ms: 5000, wait_for: 'bytes omitted' });
    assert.ok(Date.now() - t1 >= 4500, `returned after ${Date.now() - t1} ms: matched rein's gap line`);
    const q = await exec(client, {
      cmd: "sleep 0.5; head -c 3000000 /dev/zero | tr '\\0' a; echo END; exec sleep 60", yield_time_ms: 250,
    });
    const t2 = Date.now();
    while (!existsSync(q.log_path) || statSync(q.log_path).size < 3000004) {
      assert.ok(Date.now() - t2 < POLL_LIMIT_MS, 'the output reached the log');
      await new Promise((res) => setTimeout(res, 20));
    }
    // The tail's own text does, at once.
    t1 = Date.now();
    await write(client, { session_id: q.session_id, yield_time_ms: 20000, wait_for: 'aEND' });
    assert.ok(Date.now() - t1 < 10000, `returned after ${Date.now() - t1} ms`);
    await call(client, 'kill_session', { session_id: q.session_id });
    await call(client, 'kill_session', { session_id: r.session_id });
  } finally {
    await client.close();
  }
});

test('a silent wait keeps a short client timeout alive with progress', async () => {
  const { client } = await connect();
  try {
    const r = await exec(client, { cmd: 'exec sleep 300', yield_time_ms: 250 });
    assert.ok(r.session_id);
    // An empty poll of a silent session waits its whole yield (at least
    // 5 s), longer than this client's 2 s request timeout: only progress
    // notifications, one a second whether or not output came, keep it.
    const seen = [];
    const t0 = Date.now();
    const w = await client.callTool(
      { name: 'write_stdin', arguments: { session_id: r.session_id, chars: '', yield_time_ms: 6000 } },
      undefined,
      { timeout: 2000, resetTimeoutOnProgress: true, onprogress: (p) => seen.push(p) },
    );
    assert.ok(!w.isError, w.content?.[0]?.text);
    assert.ok(Date.now() - t0 >= 5000, 'the poll waited its yield');
    assert.equal(w.structuredContent.session_id, r.session_id);
    assert.ok(seen.length >= 3, `progress notifications: ${seen.length}`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress);
    assert.equal(seen[0].total, 6000);
    assert.match(seen[0].message, /^no output yet, \d+ s waited$/);
    const k = await call(client, 'kill_session', { session_id: r.session_id });
    assert.equal(k.structuredContent.exit_code, 143);
  } finally {
    await client.close();
  }
});

test('yield clamps at their edges; REIN_MAX_EMPTY_POLL_MS caps an empty poll', async () => {
  for (const [envv, cap] of [[undefined, 1800000], ['6000', 6000], ['100', 5000], ['junk', 1800000]]) {
    const { client } = await connect(envv === undefined ? {} : { REIN_MAX_EMPTY_POLL_MS: envv });
    try {
      if (envv === undefined) {
        // A number, as the seed types it: a fraction is cut, a negative is 0.
        for (const [asked, eff] of [[249, 250], [250, 250], [30000, 30000], [30001, 30000],
          [1000.5, 1000], [30000.9, 30000], [-5.5, 250], [1e300, 30000]]) {
          const r = await exec(client, { cmd: 'true', yield_time_ms: asked });
          assert.equal(r.yield_time_ms, eff);
        }
        const t = await call(client, 'exec_command', { cmd: 'true', yield_time_ms: 10 });
        assert.match(t.content[0].text, /Yield time: 250 ms \(clamped\)\n/);
      }
      // A session blocked on input answers an empty poll at once.
      const r = await exec(client, { cmd: 'echo up; read x', wait_for: 'up' });
      let w = await write(client, { session_id: r.session_id, yield_time_ms: 4999 });
      assert.equal(w.yield_time_ms, 5000, 'an empty poll is at least 5000');
      w = await write(client, { session_id: r.session_id, yield_time_ms: 1e9 });
      assert.equal(w.yield_time_ms, cap);
      w = await write(client, { session_id: r.session_id, chars: '', yield_time_ms: 100 });
      assert.equal(w.yield_time_ms, 5000, 'empty chars is a poll');
      w = await write(client, { session_id: r.session_id, chars: 'x\n', yield_time_ms: 40000 });
      assert.equal(w.yield_time_ms, 30000);
    } finally {
      await client.close();
    }
  }
});

// A python3 program that asks its terminal, in raw mode, and prints what
// came back (or 'noreply' after 5 s).
const ASK_PY = [
  'import os, select, sys, termios, time, tty',
  'old = termios.tcgetattr(0); tty.setraw(0)',
  'def ask(q, end):',
  '    os.write(1, q); r = b""; t = time.time()',
  '    while not r.endswith(end) and select.select([0], [], [], 5)[0]: r += os.read(0, 64)',
  '    return (repr(r) if r else "noreply") + " in %.2fs" % (time.time() - t)',
  'os.write(1, b"\\x1b[2J\\x1b[Habc\\r\\nhello")',
  'cpr = ask(b"\\x1b[6n", b"R")',
  'da = ask(b"\\x1b[c", b"c")',
  'termios.tcsetattr(0, termios.TCSADRAIN, old)',
  'print("\\nCPR", cpr); print("DA", da)',
].join('\n');

test('a program on a tty gets its cursor position and device attributes from rein, at once', async () => {
  const { client } = await connect();
  try {
    writeFileSync(join(WORK, 'ask.py'), ASK_PY);
    const r = await exec(client, { cmd: 'python3 ask.py', tty: true, yield_time_ms: 20000 });
    assert.equal(r.exit_code, 0, r.output);
    // Row 2, column 6: after "hello" on the second line of a cleared screen.
    assert.match(r.output, /CPR b'\\x1b\[2;6R' in 0\.[0-4]\ds/);
    assert.match(r.output, /DA b'\\x1b\[\?1;2c' in 0\.[0-4]\ds/);
  } finally {
    await client.close();
  }
});

test('a prompt drawn above the cursor, as IPython draws it, is the prompt: the call ends there', async () => {
  const { client } = await connect();
  try {
    // An event loop over stdin and a pipe (not a wait on the terminal
    // alone): the call ends only when a prompt shows.  The prompt, then
    // room below it for a menu, then back up to the prompt's end.
    const py = [
      'import os, select, sys, termios, tty',
      'tty.setraw(0); r, w = os.pipe()',
      'os.write(1, b"In [1]: \\r\\n\\r\\n\\r\\n\\r\\n \\b\\x1b[4A\\x1b[8C")',
      'select.select([0, r], [], [])',
      'os.write(1, b"\\r\\nGOT " + os.read(0, 64) + b"\\r\\n")',
    ].join('\n');
    writeFileSync(join(WORK, 'menu.py'), py);
    const t0 = Date.now();
    const r = await exec(client, { cmd: 'python3 menu.py', tty: true, yield_time_ms: 30000 });
    assert.ok(Date.now() - t0 < 20000, 'the call waited out its yield time');
    assert.equal(r.awaiting_input, true);
    assert.match(r.prompt, /^In \[1\]: ?$/);
    const w = await write(client, { session_id: r.session_id, chars: 'x', yield_time_ms: 10000 });
    assert.match(w.output, /GOT x/);
  } finally {
    await client.close();
  }
});

test('the screen view of a session survives output that crashes or hangs libvterm 0.1.4', async () => {
  const { client } = await connect();
  try {
    // A CSI of 18 arguments: libvterm 0.1.4 writes past its array.
    const r = await exec(client, {
      cmd: "printf 'left\\033[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18mright\\n'; read x",
      tty: true, yield_time_ms: 10000, wait_for: 'right',
    });
    const scr = await call(client, 'read_output', { session_id: r.session_id, view: 'screen' });
    assert.ok(!scr.isError, scr.content?.[0]?.text);
    assert.match(scr.structuredContent.output, /leftright/);
    const w = await write(client, { session_id: r.session_id, chars: '\n', yield_time_ms: 5000 });
    assert.equal(w.exit_code, 0);
    // A REP with nothing before it to repeat: libvterm 0.1.4 loops on it
    // for ever, and it held the whole server.
    const rep = await exec(client, { cmd: "printf '\\033[5b'; echo ok", tty: true });
    assert.equal(rep.exit_code, 0);
    assert.match(rep.output, /ok/);
  } finally {
    await client.close();
  }
});

test('a terminal program that redraws its last lines shows them at their last frame, and a later poll the rows it changed, in their places', async () => {
  const { client } = await connect();
  try {
    // docker's build steps: three rows drawn five times over, then Done.
    const frames = "for i in 1 2 3 4 5; do [ $i -gt 1 ] && printf '\\033[3A'; " +
      "printf '\\033[2K => a %d0%%\\n\\033[2K => b %d5%%\\n\\033[2K => c %d2%%\\n' $i $i $i; done; echo Done";
    const r = await call(client, 'exec_command', { cmd: `echo 'Step 1/3'; ${frames}`, tty: true });
    assert.equal(r.structuredContent.exit_code, 0);
    assert.equal(r.structuredContent.output, 'Step 1/3\n => a 50%\n => b 55%\n => c 52%\nDone\n');
    assert.match(r.content[0].text, /^Terminal: text drawn over/m);
    // jest's status line: erased in the next poll, a line written above
    // it and the status drawn again below.  That poll gives the rows that
    // changed, in their places, not in the order they were drawn.
    const s = await exec(client, {
      cmd: "printf 'a\\n\\nRUNS\\n'; read -s x; printf '\\033[K\\033[1A\\033[K\\033[1Ab\\n\\nRUNS\\n'",
      tty: true,
    });
    assert.equal(s.awaiting_input, true);
    assert.equal(s.output, 'a\n\nRUNS\n');
    const w = await write(client, { session_id: s.session_id, chars: '\r', yield_time_ms: 10000 });
    assert.equal(w.exit_code, 0);
    assert.equal(w.output, 'b\n\nRUNS\n');
    // The whole log as text: the screen the program left.
    const t = await call(client, 'read_output', { session_id: s.session_id });
    assert.equal(t.structuredContent.output, 'a\nb\n\nRUNS\n');
  } finally {
    await client.close();
  }
});

test('a terminal\'s output is shown as the terminal shows it: no colours, a progress bar at its last frame, a prompt then only what it grew', async () => {
  const { client } = await connect();
  try {
    const cmd = "printf '\\033[1;31merror:\\033[0m it broke\\n'; printf 'dl 10%%\\rdl 100%%\\n'; read -p 'Name: ' n; echo \"hi $n\"";
    const r = await call(client, 'exec_command', { cmd, tty: true });
    const sc = r.structuredContent;
    assert.equal(sc.awaiting_input, true);
    assert.equal(sc.output, 'error: it broke\ndl 100%\nName: ');
    assert.match(r.content[0].text, /^Terminal: text drawn over \(a progress bar, a redrawn line\) is shown at its last frame; log bytes 0-\d+ hold every frame$/m);
    // The answer: the prompt is not shown again, only what follows it;
    // nothing was drawn over, so no Terminal line.
    const wr = await call(client, 'write_stdin', { session_id: sc.session_id, chars: 'bob\r', yield_time_ms: 5000 });
    assert.equal(wr.structuredContent.exit_code, 0);
    assert.equal(wr.structuredContent.output, 'bob\nhi bob\n');
    assert.doesNotMatch(wr.content[0].text, /^Terminal:/m);
    // read_output gives the same text; the log keeps every byte as it was
    // written, for view=log.
    const txt = await call(client, 'read_output', { session_id: sc.session_id, tail_lines: 3 });
    assert.equal(txt.structuredContent.view, 'text');
    assert.equal(txt.structuredContent.output, 'dl 100%\nName: bob\nhi bob\n');
    assert.match(txt.content[0].text, /^View: text, the lines as the terminal showed them \(view=log gives the bytes\)$/m);
    const bad = await call(client, 'read_output', { session_id: sc.session_id, view: 'raw' });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /`view` must be one of \["log","text","screen"\]/);
    const log = await call(client, 'read_output', { session_id: sc.session_id, offset: 0, length: 4096, view: 'log' });
    assert.equal(log.structuredContent.view, 'log');
    assert.match(log.structuredContent.output, /^\x1b\[1;31merror:\x1b\[0m it broke\r\ndl 10%\rdl 100%\r\nName: bob\r\nhi bob\r\n$/);
    // Its grep searches the lines as they were shown, forward and back.
    for (const extra of [{}, { tail_lines: 5 }]) {
      const g = await call(client, 'read_output', { session_id: sc.session_id, grep: '^(error: it broke|dl \\d+%)$', ...extra });
      assert.equal(g.structuredContent.output, '1: error: it broke\n2: dl 100%\n');
    }
    // Condensed over the budget, the prompt's line was not seen as it
    // stands: the answer's result gives it whole.
    const big = await exec(client, { cmd: "seq 1 3000; read -p 'Name: ' n; echo \"hi $n\"", tty: true, max_output_tokens: 100 });
    assert.equal(big.truncated, true);
    const ans = await write(client, { session_id: big.session_id, chars: 'ann\r', yield_time_ms: 5000 });
    assert.equal(ans.output, 'Name: ann\nhi ann\n');
    // wait_for reads the same text: a match across colour codes with `$`
    // at a CRLF line end; a line in progress, as it stands after a redraw.
    for (const [cmd, wait_for, want] of [
      ["sleep 0.2; printf 'ready: \\033[1mport\\033[0m 8080\\n'; exec sleep 30", 'ready: port \\d+$', 'ready: port 8080\n'],
      ["sleep 0.2; printf 'step 1/2\\rstep 2/2 ok'; exec sleep 30", '^step 2/2 ok$', 'step 2/2 ok'],
    ]) {
      const t0 = Date.now();
      const m = await exec(client, { cmd, tty: true, wait_for, yield_time_ms: 20000 });
      assert.ok(Date.now() - t0 < 10000, `${wait_for}: returned after ${Date.now() - t0} ms`);
      assert.equal(m.output, want);
      await call(client, 'kill_session', { session_id: m.session_id });
    }
    // The last line of an output, unended: a line longer than the
    // stripper holds comes whole, and control bytes as their marker.
    const long = await exec(client, { cmd: "printf '%70000s' x", tty: true, max_output_tokens: 20000 });
    assert.equal(long.output, ' '.repeat(69999) + 'x');
    const bin = await exec(client, { cmd: "printf 'ok\\n\\001\\002\\003\\004'", tty: true });
    assert.equal(bin.output, 'ok\n[rein] binary 4 bytes (bytes 4-8)\n');
    // On pipes the bytes are given as they are, as Codex gives them.
    const pipe = await exec(client, { cmd: "printf '\\033[31mred\\033[0m a\\rb\\n'" });
    assert.equal(pipe.output, '\x1b[31mred\x1b[0m a\rb\n');
  } finally {
    await client.close();
  }
});

test('a full-screen program on the alternate screen is shown as its screen, cut by rows over the budget; its drawing is left out once it leaves', async () => {
  const { client } = await connect();
  try {
    // Draws on the alternate screen, rows out of order, one that could
    // pass for a marker; waits for a line; leaves the screen and says so.
    const draw = "printf '\\033[?1049h\\033[H\\033[2J\\033[5;1Hrow five\\033[1;3Htop\\033[3;1H[rein] not a marker'";
    const rr = await call(client, 'exec_command', {
      cmd: `echo before; ${draw}; read x; printf '\\033[?1049lafter %s\\n' "$x"`,
      tty: true, rows: 10, cols: 40,
    });
    const r = rr.structuredContent;
    assert.equal(r.awaiting_input, true);
    assert.equal(r.screen, true);
    assert.equal(r.truncated, false);
    // The text before the switch first, then the screen, after a marker
    // naming the bytes it was drawn with: from the switch to the end.
    const sm = /^before\n\[rein\] a full-screen program's display, log bytes 8-(\d+), rendered:\n  top\n\n\[raw\] \[rein\] not a marker\n\nrow five\n$/.exec(r.output);
    assert.ok(sm, JSON.stringify(r.output));
    const rt = (await call(client, 'read_output', { session_id: r.session_id, view: 'log' })).structuredContent;
    assert.equal(Number(sm[1]), rt.total_bytes);
    assert.equal(r.original_token_count, Math.ceil(rt.total_bytes / 4), 'the count is of the bytes');
    assert.match(rr.content[0].text, new RegExp(`^Screen: a full-screen program's display \\(the alternate screen\\), rendered; its ${rt.total_bytes - 8} bytes are log bytes 8-${rt.total_bytes}, after the output before it \\(log bytes 0-8\\)$`, 'm'));
    // In a budget with no room for the text before it and its marker: the
    // screen alone, as before.  The alternate screen starts blank, the
    // cursor where it was (on the second row).
    for (const [tokens, want] of [[10000, /^before\n\[rein\] a full-screen program's display, log bytes 8-\d+, rendered:\n\nX\n$/], [15, /^\nX\n$/]]) {
      const c = await exec(client, { cmd: "echo before; printf '\\033[?1049hX'; read x", tty: true, max_output_tokens: tokens });
      assert.match(c.output, want);
      await call(client, 'kill_session', { session_id: c.session_id });
    }
    const text = (await call(client, 'write_stdin', { session_id: r.session_id, chars: '' })).content[0].text;
    assert.doesNotMatch(text, /^Screen:/m, 'no new output: no screen');
    // Leaving the screen: the drawing (with the echo of bye) is left out
    // for a marker naming its log bytes, from this poll's first to the
    // end of the switch back; what follows is the bytes again.
    const wr = await call(client, 'write_stdin', { session_id: r.session_id, chars: 'bye\r', yield_time_ms: 5000 });
    const w = wr.structuredContent;
    assert.equal(w.exit_code, 0);
    assert.equal(w.screen, undefined);
    const m = /^\[rein\] a full-screen program's display, log bytes (\d+)-(\d+), left out\nafter bye\n$/.exec(w.output);
    assert.ok(m, JSON.stringify(w.output));
    assert.equal(Number(m[2]) - Number(m[1]), 'bye\r\n'.length + '\x1b[?1049l'.length);
    assert.match(wr.content[0].text, new RegExp(`^Screen: a full-screen program left the alternate screen; its display, log bytes ${m[1]}-${m[2]}, is left out$`, 'm'));
    // Drawn and left in one poll: the output before it stays.
    const once = await exec(client, {
      cmd: "echo before; printf '\\033[?1049hDRAWN\\033[5;5Hmore\\033[?1049l'; echo after", tty: true,
    });
    assert.equal(once.output, "before\n[rein] a full-screen program's display, log bytes 8-39, left out\nafter\n");
    // Twice in one poll: each drawing is left out, the text between kept.
    const twice = await call(client, 'exec_command', {
      cmd: "echo before; printf '\\033[?1049hONE\\033[?1049l'; echo mid; printf '\\033[?1049hTWO\\033[?1049l'; echo after", tty: true,
    });
    assert.equal(twice.structuredContent.output, "before\n[rein] a full-screen program's display, log bytes 8-27, left out\n" +
      "mid\n[rein] a full-screen program's display, log bytes 32-51, left out\nafter\n");
    assert.match(twice.content[0].text, /^Screen: full-screen programs left the alternate screen 2 times; their displays, log bytes 8-27, 32-51, are left out$/m);
    // In a budget too small for the marker: the usual view of the bytes.
    const tiny = await call(client, 'exec_command', {
      cmd: "printf '\\033[?1049hDRAWN\\033[?1049l'; echo after", tty: true, max_output_tokens: 5,
    });
    assert.doesNotMatch(tiny.content[0].text, /^Screen:/m);
    assert.equal(tiny.structuredContent.truncated, true);

    // Ten rows of 38 bytes in a budget of 90 tokens (360 bytes): the rows
    // from the top that fit with the marker for the rest; in 10 tokens,
    // too few to spend on a marker, the rows alone.
    const row = (i) => `row ${i} ${'0'.repeat(31)}\n`;
    const rows = "for i in 0 1 2 3 4 5 6 7 8 9; do printf '\\033[%d;1Hrow %d %031d' $((i+1)) $i 0; done";
    for (const [tokens, want, header] of [
      [90, [0, 1, 2, 3, 4, 5, 6].map(row).join('') +
        '[rein] rows 8-10 of 10 of the screen not shown; read_output view=screen shows them\n', 'rows 8-10'],
      // At the edge: 84 tokens are four times the marker's 84 bytes
      // (CODEX_MARKER_BUDGET_FACTOR); a token less has no room for it.
      [84, [0, 1, 2, 3, 4, 5].map(row).join('') +
        '[rein] rows 7-10 of 10 of the screen not shown; read_output view=screen shows them\n', 'rows 7-10'],
      [83, [0, 1, 2, 3, 4, 5, 6, 7].map(row).join(''), 'rows 9-10'],
      [10, row(0), 'rows 2-10'],
    ]) {
      const c = await call(client, 'exec_command', {
        cmd: `printf '\\033[?1049h'; ${rows}; read x`, tty: true, rows: 10, cols: 40, max_output_tokens: tokens,
      });
      const cs = c.structuredContent;
      assert.equal(cs.screen, true);
      assert.equal(cs.truncated, true);
      assert.equal(cs.output, want);
      assert.ok(cs.output.length <= tokens * 4);
      assert.equal(cs.omitted_bytes, 10 * 38 - cs.output.replace(/\[rein\].*\n/, '').length);
      assert.match(c.content[0].text, new RegExp(`^Screen: a full-screen program's display \\(the alternate screen\\), rendered; its \\d+ bytes are log bytes 0-\\d+; ${header} not shown \\(over max_output_tokens\\)$`, 'm'));
      const full = await call(client, 'read_output', { session_id: cs.session_id, view: 'screen' });
      assert.equal(full.structuredContent.output, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(row).join(''));
      await call(client, 'kill_session', { session_id: cs.session_id });
    }
  } finally {
    await client.close();
  }
});
