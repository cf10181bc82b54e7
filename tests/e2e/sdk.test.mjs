// sdk.test.mjs — rein serve through the official MCP TypeScript SDK client
// (StdioClientTransport): initialize, ping, tools (each meeting the schema
// rules), resource templates, resource errors, capabilities.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { McpError, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { checkTool, connectSdk } from './lib.mjs';

async function connect() {
  return (await connectSdk({ name: 'rein-e2e' })).client;
}

test('the SDK initializes and sees rein with tools, resources and logging', async () => {
  const client = await connect();
  try {
    const info = client.getServerVersion();
    assert.equal(info.name, 'rein');
    assert.match(info.version, /^\d+\.\d+\.\d+/);
    const caps = client.getServerCapabilities();
    assert.ok(caps.tools);
    assert.equal(caps.resources?.subscribe, true);
    assert.ok(caps.logging);
    assert.equal(typeof client.getInstructions(), 'string');
    assert.equal(LATEST_PROTOCOL_VERSION, '2025-11-25');
  } finally {
    await client.close();
  }
});

test('ping, listTools (every tool meets the schema rules), setLoggingLevel', async () => {
  const client = await connect();
  try {
    assert.deepEqual(await client.ping(), {});
    const { tools } = await client.listTools();
    assert.ok(Array.isArray(tools));
    for (const t of tools) checkTool(t);
    assert.deepEqual(await client.setLoggingLevel('warning'), {});
  } finally {
    await client.close();
  }
});

test('listResourceTemplates has the session log; an unknown session is not found', async () => {
  const client = await connect();
  try {
    const { resourceTemplates } = await client.listResourceTemplates();
    const log = resourceTemplates.find((t) => t.uriTemplate === 'rein://session/{id}/log');
    assert.ok(log, 'rein://session/{id}/log is listed');
    assert.equal(log.mimeType, 'text/plain');
    const { resources } = await client.listResources();
    assert.ok(Array.isArray(resources));
    await assert.rejects(client.readResource({ uri: 'rein://session/999999/log' }), (e) => {
      assert.ok(e instanceof McpError);
      assert.equal(e.code, -32002);
      return true;
    });
    assert.deepEqual(await client.subscribeResource({ uri: 'rein://session/999999/log' }), {});
    assert.deepEqual(await client.unsubscribeResource({ uri: 'rein://session/999999/log' }), {});
  } finally {
    await client.close();
  }
});

test('an unknown tool is a protocol error (-32602)', async () => {
  const client = await connect();
  try {
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), (e) => {
      assert.ok(e instanceof McpError);
      assert.equal(e.code, -32602);
      return true;
    });
  } finally {
    await client.close();
  }
});
