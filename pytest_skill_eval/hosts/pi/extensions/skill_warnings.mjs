// Skill warnings: what Pi's own skill loader says of the skills it was given with `--skill`
// (a name that is not its folder's, a description over 1,024 characters, a skill it drops),
// which Pi shows only in interactive mode. The evaluator names Pi's loader module
// (`dist/core/skills.js`, the one `--skill` goes through) and the file to write; this runs it
// on the same paths once, as Pi starts, and writes its diagnostics there as JSON.
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

function configError(message) {
  return new Error(`skill-eval skill warnings: ${message}`);
}

const outputPath = process.env.SKILL_EVAL_SKILL_WARNINGS_PATH ?? "";
const loaderPath = process.env.SKILL_EVAL_PI_SKILL_LOADER ?? "";
if (outputPath === "" || loaderPath === "") {
  throw configError("SKILL_EVAL_SKILL_WARNINGS_PATH and SKILL_EVAL_PI_SKILL_LOADER must be set");
}

function givenSkills(argv) {
  const paths = [];
  for (let i = 0; i < argv.length - 1; i += 1) {
    if (argv[i] === "--skill") paths.push(argv[i + 1]);
  }
  return paths;
}

const { loadSkills } = await import(pathToFileURL(loaderPath).href);
const { diagnostics } = loadSkills({
  cwd: process.cwd(),
  skillPaths: givenSkills(process.argv),
  includeDefaults: false,
});
const warnings = diagnostics.map((diagnostic) => ({
  type: String(diagnostic.type ?? "warning"),
  path: typeof diagnostic.path === "string" ? diagnostic.path : null,
  message: String(diagnostic.message ?? ""),
}));
writeFileSync(outputPath, `${JSON.stringify({ warnings })}\n`, "utf8");

export default function skillWarnings() {}
