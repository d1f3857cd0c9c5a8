#!/usr/bin/env node
// A loop guard in another language, over the guard protocol (docs/protocol.md): Roo Code's repetition rule
// (ToolRepetitionDetector, as docs/presets.md describes the `roo` preset), with no npm dependency.
//
//   loopguard conform "node examples/guards/roo_guard.js" traces --against roo
//
// `--mistake-limit N` sets Roo's consecutiveMistakeLimit (default 3: the 4th identical call in a row is
// refused); any other value is a deliberately wrong port, which `conform` catches at the first step it differs.
"use strict";
const readline = require("readline");

const args = process.argv.slice(2);
const at = args.indexOf("--mistake-limit");
const limit = at >= 0 ? Number(args[at + 1]) : 3;

// Roo (as released, v3.33.1) compares the tool's name and its parameters with their keys sorted at every level
function sortedDeep(value) {
  if (Array.isArray(value)) return value.map(sortedDeep);
  if (value === null || typeof value !== "object") return value;
  const sorted = {};
  for (const key of Object.keys(value).sort()) sorted[key] = sortedDeep(value[key]);
  return sorted;
}

function serialize(call) {
  return JSON.stringify({ name: call.tool, parameters: sortedDeep(call.args || {}) });
}

// browser scrolling is never a repetition: it is invisible to the count
function isScroll(call) {
  const action = call.args && call.args.action;
  return call.tool === "browser_action" && (action === "scroll_down" || action === "scroll_up");
}

let previous = null; // the last call's serialization, per run
let count = 0; // identical calls after the first, in a row

function beforeCall(call) {
  if (isScroll(call)) return [];
  const json = serialize(call);
  if (json === previous) {
    count += 1;
  } else {
    count = 0;
    previous = json;
  }
  if (limit > 0 && count >= limit) {
    count = 0; // the detector forgets after refusing
    previous = null;
    const message = `Roo appears to be stuck in a loop, attempting the same action (${call.tool}) repeatedly. ` +
      "This might indicate a problem with its current strategy.";
    return [{ action: "block", reason: "roo.tool_repetition", message }];
  }
  return [];
}

const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on("line", (line) => {
  if (!line.trim()) return;
  let reply;
  try {
    const request = JSON.parse(line);
    switch (request.op) {
      case "hello":
        reply = { protocol: 1, guard: { name: "roo-guard.js", version: "1.0.0" } };
        break;
      case "run_start":
        previous = null;
        count = 0;
        reply = { verdicts: [] };
        break;
      case "before_call":
        reply = { verdicts: beforeCall(request.call) };
        break;
      default: // every other event: Roo's detector does not look at it
        reply = { verdicts: [] };
    }
    if (Number.isInteger(request.seq)) reply.seq = request.seq; // echoed: the caller catches a late reply at once
  } catch (e) {
    reply = { error: `roo-guard.js: ${e.message}` };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
rl.on("close", () => process.exit(0));
