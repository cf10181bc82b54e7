// lib.mjs — helpers for the rein serve end-to-end tests: where the binary
// is, an SDK client on it, the tool-schema rules every tool must meet, and
// a raw line client
// that spawns `rein serve` and speaks JSON-RPC lines by hand (for what the
// SDK hides: malformed JSON, batches, ids, requests before initialize).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export const REIN_BIN =
  process.env.REIN_BIN ?? fileURLToPath(new URL('../../build/rein', import.meta.url));

// Whether REIN_BIN is an AddressSanitizer build (`make SAN=1`): its
// runtime's entry point is named in the binary.
export const REIN_ASAN = readFileSync(REIN_BIN).includes('__asan_init');

// The longest a test waits for one line before failing.
const LINE_TIMEOUT_MS = 5000;

// `rein serve` through the SDK's stdio transport, as client `name`, in cwd
// (when given), with the whole environment and env over it: the SDK passes
// a child only HOME, PATH and a few more unless told, and without it
// REIN_STATE_DIR (run-e2e.sh's temporary one) is lost and the server
// opens the user's own state dir.
export async function connectSdk({ name, cwd, env = {} }) {
  const transport = new StdioClientTransport({
    command: REIN_BIN, args: ['serve'], cwd, stderr: 'pipe', env: { ...process.env, ...env },
  });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

// The rules of the issue for every tool: inputSchema of type object with
// every property typed and each required name a property, no top-level
// $ref/oneOf/anyOf/allOf; an object outputSchema; annotations; a
// description of one or two lines.
export function checkTool(t) {
  assert.equal(typeof t.name, 'string');
  assert.equal(typeof t.description, 'string', `${t.name}: description`);
  const lines = t.description.trim().split('\n');
  assert.ok(t.description.trim().length > 0 && lines.length <= 2, `${t.name}: one or two lines`);
  for (const key of ['inputSchema', 'outputSchema']) {
    const s = t[key];
    assert.equal(typeof s, 'object', `${t.name}: ${key}`);
    assert.equal(s.type, 'object', `${t.name}: ${key}.type`);
    for (const banned of ['$ref', 'oneOf', 'anyOf', 'allOf'])
      assert.ok(!(banned in s), `${t.name}: ${key} has top-level ${banned}`);
    const props = s.properties ?? {};
    for (const [name, p] of Object.entries(props))
      assert.ok(p.type !== undefined, `${t.name}: ${key}.${name} has no type`);
    for (const r of s.required ?? [])
      assert.ok(r in props, `${t.name}: required ${r} is not a property`);
  }
  assert.equal(typeof t.annotations, 'object', `${t.name}: annotations`);
}

// `rein serve` on pipes, read line by line.  Every stdout line is kept in
// `lines` so a test can check that stdout carried JSON-RPC only.
export class RawServer {
  constructor(args = []) {
    this.child = spawn(REIN_BIN, ['serve', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.lines = [];
    this.queue = [];
    this.waiters = [];
    this.stderr = '';
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() }));
    });
    let partial = '';
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk) => {
      partial += chunk;
      let nl;
      while ((nl = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        this.lines.push(line);
        const w = this.waiters.shift();
        if (w) w(line);
        else this.queue.push(line);
      }
    });
    this.child.stdout.on('end', () => {
      this.tail = partial;
    });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (c) => (this.stderr += c));
  }

  send(text) {
    this.child.stdin.write(text.endsWith('\n') ? text : text + '\n');
  }

  sendJson(obj) {
    this.send(JSON.stringify(obj));
  }

  // The next stdout line, parsed.
  async next() {
    const line = this.queue.length
      ? this.queue.shift()
      : await new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error('no line from rein serve')), LINE_TIMEOUT_MS);
          this.waiters.push((l) => {
            clearTimeout(timer);
            resolve(l);
          });
        });
    return JSON.parse(line);
  }

  async request(obj) {
    this.sendJson(obj);
    return this.next();
  }

  async initialize(version = '2025-11-25') {
    const r = await this.request({
      jsonrpc: '2.0', id: 'init', method: 'initialize',
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    this.sendJson({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return r;
  }

  // Ends stdin and waits for the exit.
  async close() {
    this.child.stdin.end();
    return this.exited;
  }
}
