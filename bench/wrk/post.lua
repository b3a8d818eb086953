-- One JSON-RPC POST per request, shaped by the environment the bench sets:
--   BENCH_PATH     request path (default /mcp)
--   BENCH_HEADERS  "Name: value" lines
--   BENCH_BODY     the body; the first "__ID__" is replaced by a per-request counter
--                  so concurrent requests on one legacy session never share an id
-- At the end it prints one line "BENCH_JSON {...}" with the totals and latencies.

local path = os.getenv("BENCH_PATH") or "/mcp"
local template = os.getenv("BENCH_BODY") or "{}"
local prefix, suffix = template, nil
local at = string.find(template, "__ID__", 1, true)
if at then
  prefix = string.sub(template, 1, at - 1)
  suffix = string.sub(template, at + 6)
end

wrk.method = "POST"
wrk.path = path
for line in string.gmatch(os.getenv("BENCH_HEADERS") or "", "[^\n]+") do
  local name, value = string.match(line, "^([^:]+):%s*(.-)%s*$")
  if name then
    wrk.headers[name] = value
  end
end

local counter = 0

function request()
  if suffix == nil then
    return wrk.format(nil, nil, nil, template)
  end
  counter = counter + 1
  return wrk.format(nil, nil, nil, prefix .. counter .. suffix)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"err_connect":%d,"err_read":%d,"err_write":%d,"err_status":%d,"err_timeout":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean))
end
