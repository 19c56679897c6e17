#!/usr/bin/env python3
"""Structural check of KEDA objects (keda.sh/v1alpha1 ScaledObject, TriggerAuthentication).

    keda_check.py METRICS_H FILE...

Each document of each YAML FILE of those kinds is checked against the fields of KEDA's CRD
schema (openAPIV3Schema of scaledobjects.keda.sh and triggerauthentications.keda.sh: types,
required fields, enums; an unknown field is an error, since the API server would drop it
silently), then each trigger against what its scaler requires: azure-queue (queueName a valid
queue name, queueLength a number), metrics-api (url, targetValue, a format KEDA knows, and with
format prometheus a valueLocation selecting a metric sqlq exports, read from METRICS_H).
Every trigger metadata value must be a string (the CRD's map[string]string). Exits 1 naming
the file, the document and the path of the first problems found.
"""
import re
import sys

import yaml

INT, STR, BOOL, MAP_STR = "integer", "string", "boolean", "map[string]string"

# Fields of the CRDs (KEDA 2.x), as nested {field: type | dict | [item]}.
SCALED_OBJECT_SPEC = {
    "scaleTargetRef": {"apiVersion": STR, "kind": STR, "name": STR, "envSourceContainerName": STR},
    "pollingInterval": INT, "cooldownPeriod": INT, "initialCooldownPeriod": INT,
    "idleReplicaCount": INT, "minReplicaCount": INT, "maxReplicaCount": INT,
    "fallback": {"failureThreshold": INT, "replicas": INT, "behavior": STR},
    "advanced": {
        "restoreToOriginalReplicaCount": BOOL,
        "horizontalPodAutoscalerConfig": {
            "name": STR,
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": INT, "selectPolicy": STR,
                            "policies": [{"type": STR, "value": INT, "periodSeconds": INT}]},
                "scaleDown": {"stabilizationWindowSeconds": INT, "selectPolicy": STR,
                              "policies": [{"type": STR, "value": INT, "periodSeconds": INT}]},
            },
        },
        "scalingModifiers": {"formula": STR, "target": STR, "activationTarget": STR, "metricType": STR},
    },
    "triggers": [{"type": STR, "name": STR, "metadata": MAP_STR, "metricType": STR,
                  "useCachedMetrics": BOOL, "authenticationRef": {"name": STR, "kind": STR}}],
}
REQUIRED = {"spec": ["scaleTargetRef", "triggers"], "scaleTargetRef": ["name"], "triggers[]": ["type", "metadata"],
            "fallback": ["failureThreshold", "replicas"], "authenticationRef": ["name"]}
TRIGGER_AUTH_SPEC = {
    "secretTargetRef": [{"parameter": STR, "name": STR, "key": STR}],
    "env": [{"parameter": STR, "name": STR, "containerName": STR}],
    "podIdentity": {"provider": STR, "identityId": STR, "identityTenantId": STR, "identityAuthorityHost": STR},
}
ENUMS = {"metricType": {"AverageValue", "Value", "Utilization"}, "type@policies": {"Pods", "Percent"},
         "provider": {"none", "azure-workload", "aws", "aws-eks", "gcp"}}

problems = []


def err(where, msg):
    problems.append(f"{where}: {msg}")


def check(node, schema, where, name=""):
    if isinstance(schema, dict):
        if not isinstance(node, dict):
            return err(where, "expected an object")
        for k in REQUIRED.get(name, []):
            if k not in node:
                err(where, f"required field {k} missing")
        for k, v in node.items():
            if k not in schema:
                err(f"{where}.{k}", "unknown field (the API server would drop it)")
            else:
                check(v, schema[k], f"{where}.{k}", k)
    elif isinstance(schema, list):
        if not isinstance(node, list) or not node:
            return err(where, "expected a non-empty array")
        for i, item in enumerate(node):
            for k in REQUIRED.get(name + "[]", []):
                if isinstance(item, dict) and k not in item:
                    err(f"{where}[{i}]", f"required field {k} missing")
            check(item, schema[0], f"{where}[{i}]", name)
    elif schema == INT:
        if not isinstance(node, int) or isinstance(node, bool) or node < 0:
            err(where, f"expected a non-negative integer, got {node!r}")
    elif schema == BOOL:
        if not isinstance(node, bool):
            err(where, f"expected true or false, got {node!r}")
    elif schema == STR:
        if not isinstance(node, str):
            err(where, f"expected a string, got {node!r}")
        elif name in ENUMS and node not in ENUMS[name]:
            err(where, f"{node!r} is not one of {sorted(ENUMS[name])}")
    elif schema == MAP_STR:
        if not isinstance(node, dict):
            return err(where, "expected an object of strings")
        for k, v in node.items():
            if not isinstance(v, str):
                err(f"{where}.{k}", f"{v!r} must be a string (quote it): trigger metadata is map[string]string")


def number(where, meta, key, required=True):
    v = meta.get(key)
    if v is None:
        if required:
            err(where, f"metadata.{key} missing")
        return
    try:
        float(v)
    except (TypeError, ValueError):
        err(f"{where}.metadata.{key}", f"{v!r} is not a number")


def check_trigger(t, where, metrics):
    meta = t.get("metadata") or {}
    kind = t.get("type")
    if kind == "azure-queue":
        q = meta.get("queueName", "")
        if not re.fullmatch(r"[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}", q):
            err(f"{where}.metadata.queueName", f"{q!r} is not a valid queue name")
        number(where, meta, "queueLength", required=False)
        number(where, meta, "activationQueueLength", required=False)
        if "authenticationRef" not in t and "connectionFromEnv" not in meta:
            err(where, "azure-queue needs authenticationRef or metadata.connectionFromEnv")
    elif kind == "metrics-api":
        if not re.match(r"https?://[^/\s]+/", meta.get("url", "")):
            err(f"{where}.metadata.url", f"{meta.get('url')!r} is not an http(s) URL")
        number(where, meta, "targetValue")
        number(where, meta, "activationTargetValue", required=False)
        fmt = meta.get("format", "json")
        if fmt not in ("json", "xml", "yaml", "prometheus"):
            err(f"{where}.metadata.format", f"{fmt!r} is not json, xml, yaml or prometheus")
        loc = meta.get("valueLocation", "")
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(\s*[a-zA-Z_]\w*\s*=\s*"[^"]*"\s*,?)*\})?', loc)
        if fmt == "prometheus" and not m:
            err(f"{where}.metadata.valueLocation", f"{loc!r} is not a metric selector")
        elif fmt == "prometheus" and m.group(1) not in metrics:
            err(f"{where}.metadata.valueLocation", f"sqlq exports no metric {m.group(1)!r}")
    else:
        err(f"{where}.type", f"{kind!r}: not a scaler sqlq's objects use")


def main():
    metrics = set(re.findall(r'"(sqlq_[a-z_]+)"', open(sys.argv[1]).read()))
    seen = 0
    for path in sys.argv[2:]:
        for i, doc in enumerate(yaml.safe_load_all(open(path))):
            if not doc or doc.get("apiVersion") != "keda.sh/v1alpha1":
                continue
            seen += 1
            where = f"{path} document {i} ({doc.get('kind')} {doc.get('metadata', {}).get('name')})"
            if not doc.get("metadata", {}).get("name"):
                err(where, "metadata.name missing")
            if doc["kind"] == "ScaledObject":
                check(doc.get("spec"), SCALED_OBJECT_SPEC, where + " spec", "spec")
                for j, t in enumerate((doc.get("spec") or {}).get("triggers") or []):
                    check_trigger(t, f"{where} spec.triggers[{j}]", metrics)
                spec = doc.get("spec") or {}
                if spec.get("minReplicaCount", 0) > spec.get("maxReplicaCount", 100):
                    err(where, "minReplicaCount is above maxReplicaCount")
            elif doc["kind"] == "TriggerAuthentication":
                check(doc.get("spec"), TRIGGER_AUTH_SPEC, where + " spec", "auth")
            else:
                err(where, f"kind {doc['kind']!r} is not ScaledObject or TriggerAuthentication")
    if seen == 0:
        err(" ".join(sys.argv[2:]), "no KEDA object found")
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    print(f"keda_check: {seen} KEDA object(s), {len(problems)} problem(s)")
    return 1 if problems else 0


sys.exit(main())
