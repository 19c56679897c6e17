#!/usr/bin/env bash
# The KEDA objects sqlq ships (docker/k8s/*.yaml) and the ones scripts/keda-shards.sh generates
# for a shard set pass a structural check against KEDA's CRD fields (tests/support/keda_check.py);
# the bridge's scaler reads a metric the bridge exports, with the AF-SQL target (1,000 pending
# changes per instance) and at least one instance; the generator makes one object per shard
# queue, named and scaling as docs/scaling.md says, and refuses what is not a shard set.
set -euo pipefail
src=${SQLQ_SOURCE_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# The Docker build stage runs the unit tests without python3: skipped there, never in CI
# (scripts/install-deps.sh installs python3-yaml with the test packages).
python3 -c 'import yaml' 2>/dev/null || { echo "skip: python3 yaml module missing (scripts/install-deps.sh)"; exit 77; }
check() { python3 "$src/tests/support/keda_check.py" "$src/common/metrics.h" "$@"; }

check "$src"/docker/k8s/*.yaml || fail "docker/k8s KEDA objects"
python3 - "$src/docker/k8s/bridge-keda.yaml" "$src/docker/k8s/bridge.yaml" <<'PY' || fail "bridge-keda.yaml"
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
bridge = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d["kind"] == "Deployment"][0]
so = [d for d in docs if d["kind"] == "ScaledObject"][0]
svc = [d for d in docs if d["kind"] == "Service"][0]
t = so["spec"]["triggers"][0]["metadata"]
assert so["spec"]["scaleTargetRef"]["name"] == bridge["metadata"]["name"], "targets the bridge Deployment"
assert so["spec"]["minReplicaCount"] == 1, "minimum one instance"
assert t["targetValue"] == "1000", "the AF-SQL rule: 1,000 pending changes per instance"
assert t["valueLocation"].startswith("sqlq_pending_changes{"), "reads the pending count"
labels = bridge["spec"]["template"]["metadata"]["labels"]
assert all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()), "the Service selects bridge pods"
port = [p for p in bridge["spec"]["template"]["spec"]["containers"][0]["ports"] if p["name"] == "http"][0]
assert svc["spec"]["ports"][0]["targetPort"] in ("http", port["containerPort"]), "the Service reaches /metrics"
assert f":{svc['spec']['ports'][0]['port']}/metrics" in t["url"] and svc["metadata"]["name"] in t["url"], "url is the Service"
assert svc["spec"].get("publishNotReadyAddresses") is True, "read while the bridge is not ready"
print("ok: bridge ScaledObject")
PY

gen=$src/scripts/keda-shards.sh
"$gen" --queue orders --shards 4 --queue-length 32 --max-replicas 5 >"$tmp/four.yaml" || fail "generator"
check "$tmp/four.yaml" || fail "generated objects"
python3 - "$tmp/four.yaml" <<'PY' || fail "generated objects' content"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
assert len(docs) == 4, f"{len(docs)} objects for 4 shards"
for i, d in enumerate(docs):
    assert d["metadata"]["name"] == f"sqlq-consumer-{i}"
    assert d["spec"]["scaleTargetRef"]["name"] == f"sqlq-consumer-{i}"
    m = d["spec"]["triggers"][0]["metadata"]
    assert m["queueName"] == f"orders-{i}" and m["queueLength"] == "32", m
    assert d["spec"]["maxReplicaCount"] == 5
print("ok: one ScaledObject per shard")
PY
"$gen" --queues east-a,west-b --account acct >"$tmp/list.yaml" || fail "generator, list"
check "$tmp/list.yaml" || fail "generated objects, list"
grep -q 'queueName: west-b' "$tmp/list.yaml" && grep -q 'accountName: acct' "$tmp/list.yaml" || fail "list content"
for bad in "--queue orders --shards 1" "--queue Orders --shards 2" "--queues a,b --shards 2" "--queue orders --shards x"; do
    # shellcheck disable=SC2086 # the arguments are split on purpose
    if "$gen" $bad >/dev/null 2>"$tmp/err"; then fail "generator accepted $bad"; fi
    [ -s "$tmp/err" ] || fail "generator refused $bad without saying why"
done
echo "ok: the generator refuses what is not a shard set"
