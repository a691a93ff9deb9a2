// Runs cases of cases.mjs against FAREGATE_BASE_URL with FAREGATE_API_KEY, in order, and prints
// one JSON line per case: {"label", "ok": true, "result", "answers"} or {"label", "ok": false,
// "error", "answers"}, where answers are the raw HTTP answers the SDK received during the case
// ({method, path, status, content_type, body: base64}, as the SDK read it) for the Python side to
// hold to OpenAI's schema (sdk_cases.py).
// Usage: node run_cases.mjs '[["label", "case", {"model": "gpt-4o-mini"}], ...]'
import OpenAI from 'openai';
import { cases } from './cases.mjs';

let answers = [];

/** fetch that keeps a copy of every answer's bytes, read alongside the SDK's own reading. */
async function recordingFetch(url, init) {
  const response = await fetch(url, init);
  // the SDK probes its fetch with a data: URL (does it take FormData?): no answer of the gateway
  if (new URL(url).protocol === 'data:') return response;
  const answer = {
    method: init?.method ?? 'GET', path: new URL(url).pathname, status: response.status,
    content_type: response.headers.get('content-type') ?? '',
  };
  answer.read = response.clone().arrayBuffer().then(
    (bytes) => { answer.body = Buffer.from(bytes).toString('base64'); },
    (err) => { answer.read_error = String(err); });
  answers.push(answer);
  return response;
}

const client = new OpenAI({
  baseURL: process.env.FAREGATE_BASE_URL,
  apiKey: process.env.FAREGATE_API_KEY,
  maxRetries: 0,
  timeout: 30_000,
  fetch: recordingFetch,
});

for (const [label, name, params] of JSON.parse(process.argv[2])) {
  const run = cases[name];
  answers = [];
  let line;
  try {
    if (!run) throw new Error(`no case named ${name}`);
    line = { label, ok: true, result: await run(client, params ?? {}) };
  } catch (err) {
    line = {
      label, ok: false,
      error: { status: err.status ?? null, code: err.code ?? null, type: err.type ?? null, message: String(err.message) },
    };
  }
  await Promise.all(answers.map((answer) => answer.read));
  line.answers = answers.map(({ read, ...answer }) => answer);
  process.stdout.write(JSON.stringify(line) + '\n');
}
