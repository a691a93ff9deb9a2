-- wrk script: the streaming variant of chat.lua ("stream": true in the body).
-- wrk times each request to the end of the chunked body, i.e. the whole stream.
BENCH_STREAM = true
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "chat.lua")
