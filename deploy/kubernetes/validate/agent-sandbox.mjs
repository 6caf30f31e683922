// SPDX-License-Identifier: Apache-2.0
// The resources of Kubernetes agent-sandbox (v1beta1) that pmon's manifests
// use, as its API reference describes them: Sandbox and SandboxTemplate.
// Their own fields are checked here (names, types, enums, what is
// required; an unknown field is an error, as the API server's structural
// schema prunes it); the pod template's spec is a core/v1 PodSpec and is
// checked as one by kubernetes-models' Pod. check(obj, Pod) gives the
// errors, [] when there are none, or null for a kind this file does not know.

const podTemplate = { type: "object", required: ["spec"], fields: {
  metadata: { type: "object", fields: {
    labels: { type: "map" },
    annotations: { type: "map" },
  } },
  spec: { type: "podspec" },
} };
const volumeClaimTemplates = { type: "array" };

const kinds = {
  "agents.x-k8s.io/v1beta1 Sandbox": { type: "object", required: ["podTemplate"], fields: {
    podTemplate,
    operatingMode: { type: "string", enum: ["Running", "Suspended"] },
    service: { type: "boolean" },
    shutdownPolicy: { type: "string", enum: ["Delete", "Retain"] },
    shutdownTime: { type: "date-time" },
    volumeClaimTemplates,
  } },
  "extensions.agents.x-k8s.io/v1beta1 SandboxTemplate": { type: "object", required: ["podTemplate"], fields: {
    podTemplate,
    envVarsInjectionPolicy: { type: "string", enum: ["Allowed", "Overrides", "Disallowed"] },
    networkPolicy: { type: "object", open: true },
    networkPolicyManagement: { type: "string", enum: ["Managed", "Unmanaged"] },
    service: { type: "boolean" },
    volumeClaimTemplates,
    volumeClaimTemplatesPolicy: { type: "string", enum: ["Disallowed", "Allowed", "Overrides"] },
  } },
};

function typeOf(v) {
  if (Array.isArray(v)) return "array";
  if (v === null) return "null";
  return typeof v;
}

function walk(schema, v, path, errors, Pod) {
  const t = typeOf(v);
  switch (schema.type) {
    case "object":
      if (t !== "object") return errors.push(`${path} must be an object, not ${t}`);
      for (const r of schema.required || [])
        if (!(r in v)) errors.push(`${path}.${r} is required`);
      if (schema.open) return;
      for (const [k, x] of Object.entries(v)) {
        const s = schema.fields[k];
        if (!s) errors.push(`${path}.${k} is not a field of this kind`);
        else walk(s, x, `${path}.${k}`, errors, Pod);
      }
      return;
    case "map":
      if (t !== "object") return errors.push(`${path} must be a map of strings, not ${t}`);
      for (const [k, x] of Object.entries(v))
        if (typeof x !== "string") errors.push(`${path}.${k} must be a string`);
      return;
    case "array":
      if (t !== "array") errors.push(`${path} must be an array, not ${t}`);
      return;
    case "boolean":
    case "string":
      if (t !== schema.type) return errors.push(`${path} must be a ${schema.type}, not ${t}`);
      if (schema.enum && !schema.enum.includes(v))
        errors.push(`${path} must be one of ${schema.enum.join(", ")}, not ${v}`);
      return;
    case "date-time":
      if (t !== "string" || Number.isNaN(Date.parse(v)) || !/^\d{4}-\d\d-\d\dT/.test(v))
        errors.push(`${path} must be a date and time (RFC 3339)`);
      return;
    case "podspec":
      try {
        new Pod({ apiVersion: "v1", kind: "Pod", metadata: { name: "template" }, spec: v }).validate();
      } catch (e) {
        errors.push(`${path}: ${e.message}`);
      }
      return;
  }
}

export function check(obj, Pod) {
  const schema = kinds[`${obj.apiVersion} ${obj.kind}`];
  if (!schema) return null;
  const errors = [];
  for (const k of Object.keys(obj))
    if (!["apiVersion", "kind", "metadata", "spec", "status"].includes(k)) errors.push(`${k} is not a field of ${obj.kind}`);
  if (typeOf(obj.metadata) !== "object" || typeof obj.metadata.name !== "string")
    errors.push("metadata.name is required");
  if (!("spec" in obj)) errors.push("spec is required");
  else walk(schema, obj.spec, "spec", errors, Pod);
  return errors;
}
