// raw.test.mjs — rein serve on raw JSON-RPC lines, for what the SDK hides:
// malformed JSON, batches, ids of both types, requests before initialize,
// unknown methods; stdout carries JSON-RPC lines only; stdin EOF and
// SIGTERM end the server with status 0 within 3 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { RawServer } from './lib.mjs';

// The promise: exit within this long of stdin EOF or SIGTERM.
const EXIT_WITHIN_MS = 3000;

test('junk never kills the server: -32700, -32600, batches run nothing', async () => {
  const s = new RawServer();
  try {
    let r = await s.request({ jsonrpc: '2.0', id: 1, method: 'ping' });
    assert.deepEqual(r, { jsonrpc: '2.0', id: 1, result: {} });

    s.send('{"jsonrpc":"2.0","id":2,"method":');
    r = await s.next();
    assert.equal(r.error.code, -32700);
    assert.ok(!('id' in r), 'a parse error has no id');

    s.send('not json at all');
    r = await s.next();
    assert.equal(r.error.code, -32700);

    // A batch is refused whole: its ping (id 99) is never answered.
    s.send(JSON.stringify([
      { jsonrpc: '2.0', id: 99, method: 'ping' },
      { jsonrpc: '2.0', id: 98, method: 'ping' },
    ]));
    r = await s.next();
    assert.equal(r.error.code, -32600);
    assert.ok(!('id' in r));
    s.send('[]');
    r = await s.next();
    assert.equal(r.error.code, -32600);

    for (const bad of [
      { jsonrpc: '2.0', id: null, method: 'ping' },
      { jsonrpc: '2.0', id: 1.5, method: 'ping' },
      { jsonrpc: '2.0', id: true, method: 'ping' },
    ]) {
      r = await s.request(bad);
      assert.equal(r.error.code, -32600);
      assert.ok(!('id' in r));
    }
    r = await s.request({ jsonrpc: '1.0', id: 'v', method: 'ping' });
    assert.equal(r.error.code, -32600);
    assert.equal(r.id, 'v');
    r = await s.request({ jsonrpc: '2.0', id: 'm', method: 42 });
    assert.equal(r.error.code, -32600);
    assert.equal(r.id, 'm');

    // A repeated key is refused, but answered with the request's id (a
    // parse error has none, and the client would wait forever); with "id"
    // itself repeated and differing there is no one id to answer.
    s.send('{"jsonrpc":"2.0","id":5,"method":"ping","method":"ping"}');
    r = await s.next();
    assert.equal(r.error.code, -32600);
    assert.equal(r.id, 5);
    assert.match(r.error.message, /duplicate object key/);
    s.send('{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"exec_command",'
      + '"arguments":{"cmd":"true","cmd":"touch MARK"}}}');
    r = await s.next();
    assert.equal(r.error.code, -32600);
    assert.equal(r.id, 't');
    s.send('{"jsonrpc":"2.0","id":6,"id":7,"method":"ping"}');
    r = await s.next();
    assert.equal(r.error.code, -32600);
    assert.ok(!('id' in r));

    // The fence: answered next, so nothing came for ids 98/99.
    r = await s.request({ jsonrpc: '2.0', id: 'fence', method: 'ping' });
    assert.equal(r.id, 'fence');
  } finally {
    const { code } = await s.close();
    assert.equal(code, 0);
  }
  assert.ok(!s.lines.some((l) => /"id":(98|99)\b/.test(l)));
});

test('ids of both types are echoed exactly', async () => {
  const s = new RawServer();
  try {
    for (const id of [0, 1, -7, 2 ** 53 - 1, '', '1', 'abc', 'é "q"']) {
      const r = await s.request({ jsonrpc: '2.0', id, method: 'ping' });
      assert.strictEqual(r.id, id);
    }
    // Raw text: the string "1" stays a string, the integer 1 an integer.
    s.send('{"jsonrpc":"2.0","id":"1","method":"ping"}');
    await s.next();
    s.send('{"jsonrpc":"2.0","id":1,"method":"ping"}');
    await s.next();
    assert.ok(s.lines.at(-2).includes('"id":"1"'));
    assert.ok(s.lines.at(-1).includes('"id":1,') || s.lines.at(-1).includes('"id":1}'));
  } finally {
    await s.close();
  }
});

test('valid JSON the server cannot take is still answered on its id', async () => {
  const s = new RawServer();
  try {
    await s.initialize();
    // Half of a surrogate pair (an emoji cut in two): JSON.stringify writes
    // it as the escape \ud83d, valid JSON that names no character.  The
    // call is refused, not run with U+FFFD in its place, but on its id.
    const broken = '\u{1F600}'.slice(0, 1);
    const line = JSON.stringify({
      jsonrpc: '2.0', id: 'half', method: 'tools/call',
      params: { name: 'exec_command', arguments: { cmd: `echo ${broken}` } },
    });
    assert.match(line, /\\ud83d/);
    s.send(line);
    let r = await s.next();
    assert.equal(r.id, 'half');
    assert.equal(r.error.code, -32602);
    assert.match(r.error.message, /surrogate/);

    // A line past the 16 MiB limit is refused, on the id in its start.
    s.sendJson({ jsonrpc: '2.0', id: 91, method: 'tools/call',
      params: { name: 'exec_command', arguments: { cmd: 'wc -c', stdin: 'a'.repeat(17 << 20) } } });
    r = await s.next();
    assert.equal(r.id, 91);
    assert.equal(r.error.code, -32600);
    assert.match(r.error.message, /line limit/);
    r = await s.request({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    assert.deepEqual(r, { jsonrpc: '2.0', id: 'after', result: {} });
  } finally {
    await s.close();
  }
});

test('before initialize: ping works, other requests are refused, unknown methods are -32601', async () => {
  const s = new RawServer();
  try {
    let r = await s.request({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    assert.deepEqual(r.result, {});
    r = await s.request({ jsonrpc: '2.0', id: 't', method: 'tools/list' });
    assert.equal(r.error.code, -32600);
    assert.equal(r.id, 't');
    r = await s.request({ jsonrpc: '2.0', id: 'd', method: 'server/discover' });
    assert.equal(r.error.code, -32601);
    r = await s.initialize('2025-06-18');
    assert.equal(r.result.protocolVersion, '2025-06-18');
    r = await s.request({ jsonrpc: '2.0', id: 't2', method: 'tools/list' });
    assert.ok(Array.isArray(r.result.tools));
    r = await s.request({ jsonrpc: '2.0', id: 'd2', method: 'server/discover' });
    assert.equal(r.error.code, -32601);
    r = await s.request({ jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { name: 'nope', arguments: {} } });
    assert.equal(r.error.code, -32602);
  } finally {
    await s.close();
  }
});

test('version negotiation: each supported version echoed, an unknown one answered with 2025-11-25', async () => {
  for (const [asked, want] of [
    ['2025-11-25', '2025-11-25'],
    ['2025-06-18', '2025-06-18'],
    ['2025-03-26', '2025-03-26'],
    ['2024-11-05', '2024-11-05'],
    ['2023-01-01', '2025-11-25'],
  ]) {
    const s = new RawServer();
    const r = await s.initialize(asked);
    assert.equal(r.result.protocolVersion, want);
    assert.equal(r.result.serverInfo.name, 'rein');
    await s.close();
  }
});

test('stdout carries JSON-RPC lines only, and stdin EOF exits 0 within 3 s', async () => {
  const s = new RawServer();
  await s.initialize();
  s.send('garbage');
  s.sendJson({ jsonrpc: '2.0', id: 'last', method: 'ping' });
  await s.next();
  const r = await s.next();
  assert.equal(r.id, 'last');
  const t0 = Date.now();
  const { code, signal, at } = await s.close();
  assert.equal(code, 0);
  assert.equal(signal, null);
  assert.ok(at - t0 < EXIT_WITHIN_MS, `exited ${at - t0} ms after EOF`);
  assert.equal(s.tail ?? '', '', 'no partial line at the end of stdout');
  assert.ok(s.lines.length >= 3);
  for (const line of s.lines) {
    const m = JSON.parse(line);
    assert.equal(m.jsonrpc, '2.0');
  }
});

// O_CLOEXEC in /proc/PID/fdinfo's octal flags.
const O_CLOEXEC = 0o2000000;

// fd -> link of this process's own fds: whatever rein inherited from above
// us (the test runner's environment) is not rein's to judge.
function ownFds() {
  const m = new Map();
  for (const name of readdirSync('/proc/self/fd')) {
    try {
      m.set(name, readlinkSync(`/proc/self/fd/${name}`));
    } catch {}
  }
  return m;
}

test('the protocol fds are private: fd 1 is stderr, fd 0 is /dev/null, every fd rein opened is close-on-exec', async () => {
  const above = ownFds();
  const s = new RawServer();
  try {
    await s.initialize();
    const pid = s.child.pid;
    const link = (fd) => readlinkSync(`/proc/${pid}/fd/${fd}`);
    assert.equal(link(0), '/dev/null');
    assert.equal(link(1), link(2), 'fd 1 points where stderr does');
    for (const name of readdirSync(`/proc/${pid}/fd`)) {
      const fd = Number(name);
      if (fd <= 2 || above.get(name) === link(fd)) continue;
      let info;
      try {
        info = readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
      } catch {
        continue; // the fd of the directory listing itself, gone already
      }
      const flags = parseInt(/^flags:\s+([0-7]+)/m.exec(info)[1], 8);
      assert.ok(flags & O_CLOEXEC, `fd ${fd} (${link(fd)}) is inherited by children`);
    }
    // And the protocol still flows through the private fds.
    const r = await s.request({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    assert.equal(r.id, 'after');
  } finally {
    await s.close();
  }
});

test('SIGTERM exits 0 within 3 s, even with input waiting mid-line', async () => {
  const s = new RawServer();
  await s.initialize();
  s.child.stdin.write('{"jsonrpc":"2.0","id":1,');
  const t0 = Date.now();
  s.child.kill('SIGTERM');
  const { code, signal, at } = await s.exited;
  assert.equal(code, 0);
  assert.equal(signal, null);
  assert.ok(at - t0 < EXIT_WITHIN_MS, `exited ${at - t0} ms after SIGTERM`);
});

test('an unavailable profile is a usage error (exit 2), nothing on stdout', async () => {
  const s = new RawServer(['--profile', 'mish']);
  const { code } = await s.exited;
  assert.equal(code, 2);
  assert.match(s.stderr, /mish/);
  assert.equal(s.lines.length, 0);
});
