-- wrk script for the Put Message ceiling (bench/ceiling.py): POST the prepared
-- <QueueMessage> body (file named by WRK_BODY_FILE) to a queue's /messages URL that carries a
-- SAS, so nothing is signed per request. Prints one JSON line when done; non201 counts
-- responses with a status >= 400 (wrk's errors.status).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/xml"
local f = assert(io.open(os.getenv("WRK_BODY_FILE"), "r"))
wrk.body = f:read("*a")
f:close()

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"non201":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
