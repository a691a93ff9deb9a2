-- wrk script: POST a small Chat Completions request (OpenAI format).
-- BENCH_KEY: the API key sent as a bearer token (empty = no Authorization header,
-- e.g. against the fake upstream, which accepts any key).
-- chat_stream.lua (or BENCH_STREAM=1) asks for a streamed answer.
-- done() prints one "BENCH_JSON {...}" line so bench/run.py need not parse wrk's text.

local key = os.getenv("BENCH_KEY") or ""
local stream = BENCH_STREAM == true or os.getenv("BENCH_STREAM") == "1"

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
if key ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. key
end
wrk.body = '{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},'
  .. '{"role":"user","content":"Say hello in five words."}],"max_tokens":32'
  .. (stream and ',"stream":true' or '') .. '}'

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"mean_us":%.1f,'
      .. '"max_us":%d,"err_connect":%d,"err_read":%d,"err_write":%d,"err_status":%d,"err_timeout":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.mean, latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
