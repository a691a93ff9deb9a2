// Runs the named cases of cases.mjs against FAREGATE_BASE_URL with FAREGATE_API_KEY and prints
// one JSON line per case: {"case", "ok": true, "result"} or {"case", "ok": false, "error"}.
// Usage: node run_cases.mjs '[["chat", {"model": "gpt-4o-mini"}], ...]'
import OpenAI from 'openai';
import { cases } from './cases.mjs';

const client = new OpenAI({
  baseURL: process.env.FAREGATE_BASE_URL,
  apiKey: process.env.FAREGATE_API_KEY,
  maxRetries: 0,
  timeout: 30_000,
});

for (const [name, params] of JSON.parse(process.argv[2])) {
  const run = cases[name];
  let line;
  try {
    if (!run) throw new Error(`no case named ${name}`);
    line = { case: name, ok: true, result: await run(client, params ?? {}) };
  } catch (err) {
    line = {
      case: name, ok: false,
      error: { status: err.status ?? null, code: err.code ?? null, type: err.type ?? null, message: String(err.message) },
    };
  }
  process.stdout.write(JSON.stringify(line) + '\n');
}
