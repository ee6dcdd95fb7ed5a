// The `run_command` tool: runs one of the definition's declared commands in the workspace.
// The subject only chooses which declared command runs; argv is fixed by the definition.
// Uses only Node built-ins.
import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";

const DEFAULT_TIMEOUT_MS = 120000;
const KILL_GRACE_MS = 2000;
const OUTPUT_CAP_BYTES = 32768;

function configError(message) {
  return new Error(`skill-eval command tool: ${message}`);
}

function loadCommands() {
  const raw = process.env.SKILL_EVAL_COMMANDS;
  if (raw === undefined || raw === "") throw configError("SKILL_EVAL_COMMANDS is not set");
  let commands;
  try {
    commands = JSON.parse(raw);
  } catch (error) {
    throw configError(`SKILL_EVAL_COMMANDS is not valid JSON: ${error.message}`);
  }
  if (!Array.isArray(commands) || commands.length === 0) {
    throw configError("SKILL_EVAL_COMMANDS must be a non-empty JSON array");
  }
  const byId = new Map();
  commands.forEach((command, index) => {
    const where = `SKILL_EVAL_COMMANDS[${index}]`;
    if (command === null || typeof command !== "object" || typeof command.id !== "string") {
      throw configError(`${where}.id must be a string`);
    }
    if (
      !Array.isArray(command.argv) ||
      command.argv.length === 0 ||
      !command.argv.every((part) => typeof part === "string")
    ) {
      throw configError(`${where}.argv must be a non-empty array of strings`);
    }
    const timeout = command.timeout_ms ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isInteger(timeout) || timeout < 1) {
      throw configError(`${where}.timeout_ms must be a positive integer`);
    }
    if (byId.has(command.id)) throw configError(`${where}.id duplicates ${command.id}`);
    byId.set(command.id, { id: command.id, argv: [...command.argv], timeoutMs: timeout });
  });
  return byId;
}

function loadWorkspace() {
  const root = process.env.SKILL_EVAL_WRITABLE_ROOT;
  if (root === undefined || root === "") throw configError("SKILL_EVAL_WRITABLE_ROOT is not set");
  try {
    return realpathSync(root);
  } catch (error) {
    throw configError(`SKILL_EVAL_WRITABLE_ROOT cannot be resolved: ${root} (${error.code ?? error.message})`);
  }
}

const commands = loadCommands();
const workspace = loadWorkspace();

// The evaluator's own configuration is not the command's business.
function commandEnvironment() {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("SKILL_EVAL_")));
}

// Keeps the first OUTPUT_CAP_BYTES bytes of a stream and counts the rest.
class CappedOutput {
  constructor() {
    this.chunks = [];
    this.kept = 0;
    this.total = 0;
  }

  push(chunk) {
    this.total += chunk.length;
    const room = OUTPUT_CAP_BYTES - this.kept;
    if (room <= 0) return;
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(part);
    this.kept += part.length;
  }

  get truncated() {
    return this.total > this.kept;
  }

  // The kept bytes, cut back so that a multibyte UTF-8 character is never split.
  bytes() {
    const buffer = Buffer.concat(this.chunks, this.kept);
    if (!this.truncated) return buffer;
    return buffer.subarray(0, utf8Boundary(buffer));
  }
}

// Length of the longest prefix of `buffer` that does not end inside a UTF-8 character.
function utf8Boundary(buffer) {
  let start = buffer.length;
  // Step back over at most three continuation bytes to the lead byte of the last character.
  while (start > 0 && buffer.length - start < 3 && (buffer[start - 1] & 0xc0) === 0x80) start -= 1;
  if (start === 0) return buffer.length;
  const lead = buffer[start - 1];
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  const have = buffer.length - (start - 1);
  return have < need ? start - 1 : buffer.length;
}

function section(name, output, bytes) {
  const header = output.truncated
    ? `--- ${name} (truncated: showing ${bytes.length} of ${output.total} bytes) ---`
    : `--- ${name} ---`;
  return `${header}\n${bytes.toString("utf8")}`;
}

function killGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group is already gone.
  }
}

function runDeclared(command, signal) {
  return new Promise((resolve, reject) => {
    let child;
    try {
      child = spawn(command.argv[0], command.argv.slice(1), {
        cwd: workspace,
        env: commandEnvironment(),
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
        shell: false,
      });
    } catch (error) {
      reject(new Error(`cannot start command ${command.id}: ${error.message}`));
      return;
    }
    const stdout = new CappedOutput();
    const stderr = new CappedOutput();
    let timedOut = false;
    let exitCode = null;
    let exitSignal = null;
    let killTimer = null;
    let settled = false;

    const stop = () => {
      killGroup(child, "SIGTERM");
      killTimer ??= setTimeout(() => killGroup(child, "SIGKILL"), KILL_GRACE_MS);
    };
    const timeoutTimer = setTimeout(() => {
      timedOut = true;
      stop();
    }, command.timeoutMs);
    const onAbort = () => stop();
    signal?.addEventListener("abort", onAbort, { once: true });

    const finish = (callback) => {
      if (settled) return;
      settled = true;
      clearTimeout(timeoutTimer);
      if (killTimer !== null) clearTimeout(killTimer);
      signal?.removeEventListener("abort", onAbort);
      callback();
    };

    child.stdout.on("data", (chunk) => stdout.push(chunk));
    child.stderr.on("data", (chunk) => stderr.push(chunk));
    child.on("error", (error) => {
      finish(() => reject(new Error(`cannot start command ${command.id} (${command.argv[0]}): ${error.message}`)));
    });
    child.on("exit", (code, sig) => {
      exitCode = code;
      exitSignal = sig;
      // Sweep descendants left in the group so they cannot hold the pipes open.
      killGroup(child, "SIGKILL");
    });
    child.on("close", () => {
      finish(() => resolve({ exitCode, signal: exitSignal, timedOut, stdout, stderr }));
    });
    if (signal?.aborted) stop();
  });
}

function resultText(command, outcome) {
  const status = outcome.timedOut
    ? `timed out after ${command.timeoutMs} ms`
    : outcome.exitCode !== null
      ? `exit code: ${outcome.exitCode}`
      : `exit code: signal ${outcome.signal}`;
  return [
    `$ ${command.argv.join(" ")}`,
    status,
    section("stdout", outcome.stdout, outcome.stdout.bytes()),
    section("stderr", outcome.stderr, outcome.stderr.bytes()),
  ].join("\n");
}

export default function commandTool(pi) {
  const ids = [...commands.keys()];
  const listing = [...commands.values()].map((command) => `${command.id} (${command.argv.join(" ")})`);
  pi.registerTool({
    name: "run_command",
    label: "Run command",
    description: `Run one declared command in the workspace. Declared commands: ${listing.join("; ")}`,
    promptSnippet: "Run one declared command in the workspace",
    parameters: {
      type: "object",
      properties: {
        command: { type: "string", enum: ids, description: "ID of the declared command to run" },
      },
      required: ["command"],
      additionalProperties: false,
    },
    executionMode: "sequential",
    async execute(_toolCallId, params, signal) {
      const command = commands.get(params?.command);
      if (command === undefined) {
        throw new Error(`Unknown command id: ${JSON.stringify(params?.command)}. Declared: ${ids.join(", ")}`);
      }
      const outcome = await runDeclared(command, signal);
      return {
        content: [{ type: "text", text: resultText(command, outcome) }],
        details: {
          id: command.id,
          argv: command.argv,
          exitCode: outcome.exitCode,
          signal: outcome.signal,
          timedOut: outcome.timedOut,
          stdout: { bytes: outcome.stdout.total, truncated: outcome.stdout.truncated },
          stderr: { bytes: outcome.stderr.total, truncated: outcome.stderr.truncated },
        },
      };
    },
  });
}
