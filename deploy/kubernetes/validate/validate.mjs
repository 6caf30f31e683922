// SPDX-License-Identifier: Apache-2.0
// node validate.mjs FILE.yaml...: each document of each file is checked
// against the schema of its apiVersion/kind (kubernetes-models: types,
// required fields, enums; it does not reject unknown fields; agent-sandbox's
// Sandbox and SandboxTemplate: agent-sandbox.mjs). One line per document;
// exit 1 when any is invalid or of an unknown kind.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { Pod } from "kubernetes-models/v1";
import { check } from "./agent-sandbox.mjs";

let bad = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length) {
      console.log(`${file}: not YAML: ${doc.errors[0].message}`);
      bad++;
      continue;
    }
    const obj = doc.toJS();
    if (obj === null) continue;
    const { apiVersion, kind } = obj;
    const sandbox = check(obj, Pod);
    if (sandbox) {
      const name = `${file}: ${kind} ${obj.metadata && obj.metadata.name}`;
      console.log(sandbox.length ? `${name}: invalid: ${sandbox.join("; ")}` : `${name}: valid`);
      if (sandbox.length) bad++;
      continue;
    }
    const group = apiVersion && apiVersion.includes("/") ? apiVersion : `v1`;
    let model;
    try {
      model = (await import(`kubernetes-models/${group}`))[kind];
    } catch {
      model = undefined;
    }
    const name = `${file}: ${kind} ${obj.metadata && obj.metadata.name}`;
    if (!model) {
      console.log(`${name}: no schema for ${apiVersion} ${kind}`);
      bad++;
      continue;
    }
    try {
      new model(obj).validate();
      console.log(`${name}: valid`);
    } catch (e) {
      console.log(`${name}: invalid: ${e.message}`);
      bad++;
    }
  }
}
process.exit(bad ? 1 : 0);
