#!/usr/bin/env node
// A TypeScript-style agent loop guarded live by `loopguard serve` over the guard protocol (docs/protocol.md).
//
//   node examples/guards/agent_loop.js                      # runs `loopguard serve --policy default`
//   node examples/guards/agent_loop.js -- loopguard serve --policy roo --record runs/agent.jsonl
//
// The "model" is scripted: it asks to run the failing test suite again and again, as a stuck agent does. The
// loop does what an agent does with each verdict: `warn` goes to the model with the tool's output, `block`
// skips the tool and sends the message back as the tool's result, `stop` ends the run. No npm dependency.
"use strict";
const { spawn } = require("child_process");
const readline = require("readline");

const at = process.argv.indexOf("--");
const serve = at >= 0 ? process.argv.slice(at + 1) : ["loopguard", "serve", "--policy", "default"];

// ---- the guard: one request out, one reply back ---------------------------------------------------------------
const guard = spawn(serve[0], serve.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const waiting = [];
readline.createInterface({ input: guard.stdout }).on("line", (line) => waiting.shift()(JSON.parse(line)));
function ask(request) {
  return new Promise((resolve) => {
    waiting.push(resolve);
    guard.stdin.write(JSON.stringify(request) + "\n");
  });
}
async function verdicts(request) {
  const reply = await ask(request);
  if (reply.error) throw new Error(`guard: ${reply.error}`);
  return reply.verdicts;
}
const ORDER = ["allow", "warn", "compact", "retry", "compact_retry", "block", "stop", "fail"];
const worst = (vs) => vs.reduce((a, v) => (ORDER.indexOf(v.action) > ORDER.indexOf(a) ? v.action : a), "allow");

// ---- the agent's world: a scripted model and one tool ------------------------------------------------------------
function model(turn) {
  return { text: `attempt ${turn + 1}: run the tests again`, calls: [{ id: `call_${turn}`, tool: "shell",
    args: { command: "npm test -- --grep checkout" } }] };
}
function runTool(call) {
  return { ok: false, exit_code: 1, text: "1 failing: checkout applies the discount (expected 90, got 100)" };
}

async function main() {
  const hello = await ask({ op: "hello", protocol: 1 });
  console.log(`guard: ${hello.guard.name} ${hello.guard.version}, policy ${hello.guard.policy}`);
  await verdicts({ op: "run_start", run: { name: "node-agent-loop", task: { objective: "make checkout pass" } } });
  await verdicts({ op: "message", index: null, message: { role: "user", text: "make checkout pass", origin: "user" } });
  let ended = "";
  for (let turn = 0; turn < 20 && !ended; turn++) {
    await verdicts({ op: "turn_end", index: null });
    await verdicts({ op: "before_llm", index: null, llm: { input_tokens: 1200 + 150 * turn } });
    const reply = model(turn);
    await verdicts({ op: "llm_result", index: null, llm: { input_tokens: 1200 + 150 * turn, output_tokens: 30 } });
    const opened = await verdicts({ op: "turn_start", index: null, calls: reply.calls });
    if (worst(opened) === "stop") { ended = `stopped before the turn: ${opened[0].message}`; break; }
    for (const call of reply.calls) {
      const before = await verdicts({ op: "before_call", index: null, call });
      const action = worst(before);
      const runs = action === "allow" || action === "warn";
      const result = runs ? runTool(call) : null;
      const after = await verdicts({ op: "after_call", index: null, call, result, blocked: !runs });
      const all = before.concat(after);
      const shown = all.filter((v) => v.action !== "allow").map((v) => `${v.action} ${v.reason}`).join("; ");
      console.log(`turn ${turn + 1}: ${call.tool} ${JSON.stringify(call.args)} -> ${runs ? "ran" : "not run"}` +
        (shown ? ` [${shown}]` : ""));
      if (worst(all) === "stop") { ended = `stopped: ${all.find((v) => v.action === "stop").message}`; break; }
    }
  }
  await verdicts({ op: "run_end", index: null, outcome: ended ? "stopped" : "exhausted" });
  console.log(ended || "the model gave up after 20 turns");
  guard.stdin.end();
}

main().catch((e) => { console.error(e.message); guard.kill(); process.exit(1); });
