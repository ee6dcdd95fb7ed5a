// Context observer: records the effective system prompt of each prompt and the message context
// of each provider request as JSONL. Loaded last; it never changes anything.
// Uses only Node built-ins.
import { appendFileSync, readFileSync } from "node:fs";

function configError(message) {
  return new Error(`skill-eval observer: ${message}`);
}

const outputPath = process.env.SKILL_EVAL_CONTEXT_OBSERVATION_PATH ?? "";
if (outputPath === "") throw configError("SKILL_EVAL_CONTEXT_OBSERVATION_PATH is not set");
const turnFile = process.env.SKILL_EVAL_TURN_FILE ?? "";

// The evaluator writes its own turn number before each prompt; without it, count prompts.
function evaluatorTurn(counted) {
  if (turnFile === "") return counted;
  let text;
  try {
    text = readFileSync(turnFile, "utf8").trim();
  } catch {
    return counted;
  }
  return /^[1-9][0-9]*$/.test(text) ? Number(text) : counted;
}

function blockText(block) {
  if (block === null || typeof block !== "object") return null;
  if (block.type === "text" && typeof block.text === "string") return block.text;
  if (block.type === "image") return `[image:${block.mimeType ?? block.mime_type ?? "unknown"}]`;
  return null;
}

function messageText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map(blockText)
    .filter((text) => text !== null)
    .join("\n");
}

function project(message) {
  return {
    role: typeof message?.role === "string" ? message.role : null,
    toolName: typeof message?.toolName === "string" ? message.toolName : null,
    text: messageText(message?.content),
  };
}

function write(record) {
  appendFileSync(outputPath, `${JSON.stringify(record)}\n`, "utf8");
}

export default function observer(pi) {
  let counted = 0;
  let turn = 0;
  let providerRequest = 0;
  let requestInTurn = 0;

  pi.on("before_agent_start", async (event, ctx) => {
    counted += 1;
    turn = evaluatorTurn(counted);
    requestInTurn = 0;
    const text =
      typeof event.systemPrompt === "string" ? event.systemPrompt : String(ctx.getSystemPrompt?.() ?? "");
    write({
      timestamp: new Date().toISOString(),
      turn,
      kind: "context",
      surface: "system-prompt",
      prompt: typeof event.prompt === "string" ? event.prompt : null,
      characters: text.length,
      text,
    });
    return undefined;
  });

  pi.on("context", async (event) => {
    providerRequest += 1;
    requestInTurn += 1;
    const messages = (Array.isArray(event.messages) ? event.messages : []).map(project);
    const text = messages
      .map((message) => message.text)
      .filter((part) => part !== "")
      .join("\n");
    write({
      timestamp: new Date().toISOString(),
      turn,
      kind: "context",
      surface: "provider-context",
      providerRequest,
      requestInTurn,
      characters: text.length,
      text,
      messages,
    });
    return undefined;
  });
}
