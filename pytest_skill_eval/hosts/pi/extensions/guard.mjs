// Evaluation guard for Pi: declared tools only, path containment for read/write/edit,
// and the isolated or host system prompt with the declared context appended.
// Loaded first. Uses only Node built-ins.
import { createHash } from "node:crypto";
import { lstatSync, readFileSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";

const PATH_TOOLS = new Set(["read", "write", "edit"]);
const PROMPT_MODES = new Set(["isolated", "host"]);
// Pi maps these to plain spaces before resolving a tool path (core/tools/path-utils.js).
const UNICODE_SPACES = /[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g;

function configError(message) {
  return new Error(`skill-eval guard: ${message}`);
}

function parseJsonEnv(name) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") throw configError(`${name} is not set`);
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw configError(`${name} is not valid JSON: ${error.message}`);
  }
}

function canonicalRoot(value, name) {
  if (typeof value !== "string" || !path.isAbsolute(value)) {
    throw configError(`${name} must hold absolute directory paths, got ${JSON.stringify(value)}`);
  }
  try {
    return realpathSync(value);
  } catch (error) {
    throw configError(`${name} names a path that cannot be resolved: ${value} (${error.code ?? error.message})`);
  }
}

function loadAllowedRoots() {
  const roots = parseJsonEnv("SKILL_EVAL_ALLOWED_ROOTS");
  if (!Array.isArray(roots)) throw configError("SKILL_EVAL_ALLOWED_ROOTS must be a JSON array");
  return roots.map((root) => canonicalRoot(root, "SKILL_EVAL_ALLOWED_ROOTS"));
}

function loadWritableRoot() {
  const root = process.env.SKILL_EVAL_WRITABLE_ROOT;
  if (root === undefined || root === "") throw configError("SKILL_EVAL_WRITABLE_ROOT is not set");
  return canonicalRoot(root, "SKILL_EVAL_WRITABLE_ROOT");
}

function loadAllowedTools() {
  const tools = parseJsonEnv("SKILL_EVAL_ALLOWED_TOOLS");
  if (!Array.isArray(tools) || !tools.every((tool) => typeof tool === "string")) {
    throw configError("SKILL_EVAL_ALLOWED_TOOLS must be a JSON array of tool names");
  }
  return new Set(tools);
}

function loadPromptMode() {
  const mode = process.env.SKILL_EVAL_PROMPT_MODE || "isolated";
  if (!PROMPT_MODES.has(mode)) {
    throw configError(`SKILL_EVAL_PROMPT_MODE must be isolated or host, got ${JSON.stringify(mode)}`);
  }
  return mode;
}

function sha256(text) {
  return createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");
}

function loadContextManifest() {
  const file = process.env.SKILL_EVAL_CONTEXT_MANIFEST ?? "";
  if (file === "") return [];
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw configError(`context manifest ${file} cannot be read: ${error.message}`);
  }
  if (manifest === null || typeof manifest !== "object" || manifest.schema_version !== 1) {
    throw configError(`context manifest ${file}: schema_version must be 1`);
  }
  if (!Array.isArray(manifest.entries)) {
    throw configError(`context manifest ${file}: entries must be an array`);
  }
  return manifest.entries.map((entry, index) => {
    const where = `context manifest ${file}: entries[${index}]`;
    if (entry === null || typeof entry !== "object" || typeof entry.declaredPath !== "string") {
      throw configError(`${where}.declaredPath must be a string`);
    }
    if (!Array.isArray(entry.files)) throw configError(`${where}.files must be an array`);
    const files = entry.files.map((item, fileIndex) => {
      const fileWhere = `${where}.files[${fileIndex}]`;
      if (
        item === null ||
        typeof item !== "object" ||
        typeof item.path !== "string" ||
        typeof item.sha256 !== "string" ||
        typeof item.content !== "string"
      ) {
        throw configError(`${fileWhere} needs string path, sha256 and content`);
      }
      // `sha256` is of the file's bytes; `content` is their text with a leading BOM removed, so
      // any edit after snapshotting shows here.
      if (sha256(item.content) !== item.sha256 && sha256(`\ufeff${item.content}`) !== item.sha256) {
        throw configError(`${fileWhere} content does not match its sha256 (${item.path})`);
      }
      return { path: item.path, content: item.content };
    });
    return { declaredPath: entry.declaredPath, files };
  });
}

const allowedRoots = loadAllowedRoots();
const writableRoot = loadWritableRoot();
const allowedTools = loadAllowedTools();
const promptMode = loadPromptMode();
const contextEntries = loadContextManifest();

function escapeText(value) {
  return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function escapeAttribute(value) {
  return escapeText(value).replace(/"/g, "&quot;").replace(/'/g, "&apos;");
}

function isInside(root, candidate) {
  if (candidate === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return candidate.startsWith(prefix);
}

// Mirror Pi's own path expansion (core/tools/path-utils.js) so the guard checks the exact string
// the tool will open: relative paths are resolved lexically, absolute ones are passed on as given.
function expandLikePi(rawPath, cwd) {
  let expanded = rawPath.startsWith("@") ? rawPath.slice(1) : rawPath;
  expanded = expanded.replace(UNICODE_SPACES, " ");
  if (expanded === "~") expanded = homedir();
  else if (expanded.startsWith("~/")) expanded = homedir() + expanded.slice(1);
  return path.isAbsolute(expanded) ? expanded : path.resolve(cwd, expanded);
}

// Resolve an absolute path the way the kernel walks it: every existing component through its
// symlinks, `..` after the link it follows. A dangling link throws. With allowMissing, a missing
// tail (as for a new file) is appended to the canonical existing part.
function resolvePhysically(target, allowMissing) {
  const parts = target.split(path.sep).filter((part) => part !== "" && part !== ".");
  let current = realpathSync(path.parse(target).root || path.sep);
  for (let index = 0; index < parts.length; index += 1) {
    const part = parts[index];
    if (part === "..") {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, part);
    try {
      lstatSync(next);
    } catch (error) {
      if (error.code !== "ENOENT" || !allowMissing) throw error;
      const rest = parts.slice(index);
      if (rest.includes("..")) throw error;
      return path.join(current, ...rest);
    }
    current = realpathSync(next);
  }
  return current;
}

function checkPath(toolName, input, cwd) {
  const rawPath = input?.path;
  if (typeof rawPath !== "string") {
    return `Tool ${toolName} needs a string path inside the evaluation environment`;
  }
  const roots = toolName === "read" ? allowedRoots : [writableRoot];
  const allowMissing = toolName === "write";
  let target;
  try {
    target = expandLikePi(rawPath, cwd);
  } catch {
    return `path cannot be resolved inside the evaluation environment: ${rawPath}`;
  }
  const candidates = [target];
  // write creates missing parents with mkdir -p, which may read `..` lexically: check that too.
  const lexical = path.resolve(target);
  if (toolName === "write" && lexical !== target) candidates.push(lexical);
  for (const candidate of candidates) {
    let resolved;
    try {
      resolved = resolvePhysically(candidate, allowMissing);
    } catch {
      return `path cannot be resolved inside the evaluation environment: ${rawPath}`;
    }
    if (!roots.some((root) => isInside(root, resolved))) {
      return `path escapes the evaluation environment: ${rawPath}`;
    }
  }
  return null;
}

function declaredContextBlock() {
  const lines = ["<declared_context>"];
  for (const entry of contextEntries) {
    lines.push(`<context declared-path="${escapeAttribute(entry.declaredPath)}">`);
    for (const file of entry.files) {
      lines.push(`<file path="${escapeAttribute(file.path)}">\n${escapeText(file.content)}</file>`);
    }
    lines.push("</context>");
  }
  lines.push("</declared_context>");
  return lines.join("\n");
}

function isolatedSystemPrompt(options, cwd) {
  const selected = Array.isArray(options?.selectedTools) ? options.selectedTools : [...allowedTools];
  const snippets = options?.toolSnippets ?? {};
  const toolLines = selected.map((name) => `- ${name}: ${snippets[name] || "Declared evaluation tool"}`);
  const sections = [
    "You are an expert coding assistant operating inside pi for a skill evaluation. " +
      "Use only the tools and resources listed below.",
    `Available tools:\n${toolLines.length > 0 ? toolLines.join("\n") : "(none)"}`,
    [
      "Guidelines:",
      "- Use the read tool to load a skill's SKILL.md when the task matches its description.",
      "- Resolve relative paths in a skill against that skill's directory (the parent of its SKILL.md).",
      "- Be concise in your responses.",
    ].join("\n"),
  ];
  const skills = (Array.isArray(options?.skills) ? options.skills : []).filter(
    (skill) => skill && !skill.disableModelInvocation,
  );
  if (skills.length > 0) {
    const lines = ["<available_skills>"];
    for (const skill of skills) {
      lines.push("  <skill>");
      lines.push(`    <name>${escapeAttribute(skill.name ?? "")}</name>`);
      lines.push(`    <description>${escapeAttribute(skill.description ?? "")}</description>`);
      lines.push(`    <location>${escapeAttribute(skill.filePath ?? "")}</location>`);
      lines.push("  </skill>");
    }
    lines.push("</available_skills>");
    sections.push(lines.join("\n"));
  }
  if (contextEntries.length > 0) sections.push(declaredContextBlock());
  sections.push(`Current working directory: ${cwd}`);
  return sections.join("\n\n");
}

export default function guard(pi) {
  pi.on("tool_call", async (event, ctx) => {
    if (!allowedTools.has(event.toolName)) {
      return { block: true, reason: `Tool is not declared for this evaluation: ${event.toolName}` };
    }
    if (!PATH_TOOLS.has(event.toolName)) return undefined;
    const reason = checkPath(event.toolName, event.input, ctx.cwd);
    return reason === null ? undefined : { block: true, reason };
  });

  pi.on("before_agent_start", async (event, ctx) => {
    if (promptMode === "isolated") {
      const options = event.systemPromptOptions ?? {};
      return { systemPrompt: isolatedSystemPrompt(options, options.cwd ?? ctx.cwd) };
    }
    if (contextEntries.length === 0) return undefined;
    return { systemPrompt: `${event.systemPrompt}\n\n${declaredContextBlock()}` };
  });
}
