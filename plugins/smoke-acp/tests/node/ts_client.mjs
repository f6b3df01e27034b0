// Drives `smoke acp` with the official TypeScript SDK (@agentclientprotocol/sdk):
// initialize, a new session, one prompt; every permission request is answered
// with its allow_always option (else the first). Prints one JSON line with what
// the client received. Usage: node ts_client.mjs PYTHON CWD [smoke acp args...]
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const [, , python, cwd, ...args] = process.argv;
const child = spawn(python, ["-m", "smoke_core.cli", "acp", ...args], { cwd, stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const updates = [];
const permissions = [];
const app = client({ name: "smoke-ts-test-client" })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    permissions.push(params);
    const option = params.options.find((o) => o.kind === "allow_always") ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  });

const result = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "smoke-ts-test-client", version: "1.0.0" },
  });
  const session = await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] });
  const prompt = await ctx.request(methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "run the command twice" }],
  });
  let unknown = null;
  try {
    await ctx.request("session/not_a_method", {});
  } catch (error) {
    unknown = { code: error.code, message: error.message };
  }
  return { init, session, prompt, unknown };
});
child.stdin.end();
const exitCode = await exited;
process.stdout.write(JSON.stringify({ ...result, updates, permissions, exitCode }) + "\n");
