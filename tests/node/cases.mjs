// Cases run with the official OpenAI Node SDK against a Faregate gateway: one or more for each
// endpoint of the OpenAI family. Each case gets a client and the case's parameters and returns
// plain JSON the Python side checks; a thrown APIError is reported with its status, type, code
// and message. Every answer the SDK receives is also kept raw (run_cases.mjs) and held to
// OpenAI's schema on the Python side: the Node SDK has no strict response validation of its own.
// Endpoints the SDK has no method for are reached through its generic client.post / client.get.
import { toFile } from 'openai';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

async function collect(stream) {
  const events = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** `seconds` of silence as a 16 kHz mono WAV. */
function silentWav(seconds) {
  const size = 32000 * seconds;
  const wav = Buffer.alloc(44 + size);
  wav.write('RIFF', 0); wav.writeUInt32LE(36 + size, 4); wav.write('WAVE', 8); wav.write('fmt ', 12);
  wav.writeUInt32LE(16, 16); wav.writeUInt16LE(1, 20); wav.writeUInt16LE(1, 22); wav.writeUInt32LE(16000, 24);
  wav.writeUInt32LE(32000, 28); wav.writeUInt16LE(2, 32); wav.writeUInt16LE(16, 34); wav.write('data', 36);
  wav.writeUInt32LE(size, 40);
  return wav;
}

const png = () => toFile(PNG, 'in.png', { type: 'image/png' });
const wav = (name) => toFile(silentWav(1), name, { type: 'audio/wav' });
/** The gateway's root (the client's base URL without /v1): new-api's aliases of /v1 paths. */
const root = (client) => client.baseURL.replace(/\/v1\/?$/, '');

export const cases = {
  async chat(client, { model }) {
    const completion = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'hello from node' }],
    });
    return { content: completion.choices[0].message.content, usage: completion.usage, object: completion.object };
  },

  async chat_stream(client, { model }) {
    const chunks = await collect(await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'stream to node' }], stream: true,
      stream_options: { include_usage: true },
    }));
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    return { content: text, usage: chunks.at(-1).usage, chunks: chunks.length };
  },

  async chat_tools(client, { model }) {
    const completion = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'please call tool' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
    });
    const call = completion.choices[0].message.tool_calls[0];
    return { name: call.function.name, arguments: JSON.parse(call.function.arguments), finish: completion.choices[0].finish_reason };
  },

  async embeddings(client, { model }) {
    // no encoding_format: the SDK asks for base64 and decodes it to floats itself
    const result = await client.embeddings.create({ model, input: ['first', 'second'] });
    return { lengths: result.data.map((d) => d.embedding.length), first: result.data[0].embedding, usage: result.usage };
  },

  async embeddings_float(client, { model }) {
    const result = await client.embeddings.create({ model, input: [[1, 2, 3]], encoding_format: 'float', dimensions: 8 });
    return { lengths: result.data.map((d) => d.embedding.length), first: result.data[0].embedding };
  },

  async engines_embeddings(client, { model }) {
    // new-api's engines path: the model in the path, not the body
    const result = await client.post(`/engines/${model}/embeddings`, { body: { input: 'from the path' } });
    return { lengths: result.data.map((d) => d.embedding.length), model: result.model };
  },

  async moderations(client, { model }) {
    const result = await client.moderations.create({ model, input: 'I will kill the process' });
    return { flagged: result.results[0].flagged, violence: result.results[0].categories.violence };
  },

  async moderations_default_model(client) {
    // the SDK requires no model: the gateway fills in new-api's default
    const result = await client.moderations.create({ input: 'a calm sentence' });
    return { model: result.model, flagged: result.results[0].flagged };
  },

  async models(client) {
    const ids = [];
    for await (const model of client.models.list()) ids.push(model.id);
    return { ids };
  },

  async completions(client, { model }) {
    const completion = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 40 });
    return { text: completion.choices[0].text, object: completion.object, usage: completion.usage };
  },

  async completions_stream(client, { model }) {
    const chunks = await collect(await client.completions.create({
      model, prompt: 'Streamed prompt', max_tokens: 40, stream: true, stream_options: { include_usage: true },
    }));
    return { text: chunks.map((c) => c.choices[0]?.text ?? '').join(''), usage: chunks.at(-1).usage };
  },

  async responses(client, { model }) {
    const response = await client.responses.create({ model, input: 'hello responses', instructions: 'be brief' });
    return { text: response.output_text, status: response.status, usage: response.usage, object: response.object };
  },

  async responses_stream(client, { model }) {
    const stream = client.responses.stream({ model, input: 'streamed responses' });
    const types = [];
    for await (const event of stream) types.push(event.type);
    const final = await stream.finalResponse();
    return { text: final.output_text, first: types[0], last: types.at(-1), numbered: types.length };
  },

  async responses_cache_retention(client, { model }) {
    // the spec's spelling (issue 28): a native channel gets it as sent
    const response = await client.responses.create({
      model, input: 'cache this', prompt_cache_key: 'conv-1', prompt_cache_retention: 'in_memory',
    });
    return { text: response.output_text, status: response.status };
  },

  async responses_compact(client, { model }) {
    const compacted = await client.responses.compact({
      model, input: [{ role: 'user', content: 'plan the launch' }, { role: 'assistant', content: 'step one, step two' }],
    });
    return { object: compacted.object, types: compacted.output.map((item) => item.type), usage: compacted.usage };
  },

  async images(client, { model }) {
    const result = await client.images.generate({ model, prompt: 'a red square', size: '1024x1024' });
    return { count: result.data.length, url: result.data[0].url ?? null, b64: Boolean(result.data[0].b64_json) };
  },

  async images_stream(client, { model }) {
    const events = await collect(await client.images.generate({ model, prompt: 'a comet', stream: true, partial_images: 1 }));
    return { types: events.map((e) => e.type), usage: events.at(-1).usage };
  },

  async image_edit(client, { model }) {
    const result = await client.images.edit({ model, prompt: 'make it blue', image: await png() });
    return { count: result.data.length, b64: Boolean(result.data[0].b64_json), usage: result.usage ?? null };
  },

  async image_edit_markup(client, { model }) {
    const result = await client.images.edit({ model, prompt: 'a hat here', image: await png(), markup: await png() });
    return { count: result.data.length, b64: Boolean(result.data[0].b64_json) };
  },

  async image_edit_stream(client, { model }) {
    const events = await collect(await client.images.edit({
      model, prompt: 'night', image: await png(), stream: true, partial_images: 1,
    }));
    return { types: events.map((e) => e.type) };
  },

  async edits(client, { model }) {
    // the reserved /v1/edits path is image editing (no SDK method): a JSON edit of an image by URL
    const result = await client.post('/edits', {
      body: { model, prompt: 'brighter', images: [{ image_url: 'https://example.com/cat.png' }] },
    });
    return { count: result.data.length, b64: Boolean(result.data[0].b64_json) };
  },

  async transcription(client, { model }) {
    const result = await client.audio.transcriptions.create({ model, file: await wav('hello.wav') });
    return { text: result.text };
  },

  async transcription_verbose(client, { model }) {
    const result = await client.audio.transcriptions.create({
      model, file: await wav('verbose.wav'), response_format: 'verbose_json', timestamp_granularities: ['word'],
    });
    return { text: result.text, duration: result.duration, words: result.words.length };
  },

  async transcription_keywords(client, { model }) {
    const result = await client.audio.transcriptions.create({
      model, file: await wav('words.wav'), keywords: ['Faregate', 'new-api'], languages: ['en'],
    });
    return { text: result.text };
  },

  async transcription_stream(client, { model }) {
    const events = await collect(await client.audio.transcriptions.create({ model, file: await wav('s.wav'), stream: true }));
    return { types: events.map((e) => e.type), text: events.at(-1).text };
  },

  async translation(client, { model }) {
    const result = await client.audio.translations.create({ model, file: await wav('bonjour.wav') });
    return { text: result.text };
  },

  async translation_text(client, { model }) {
    const text = await client.audio.translations.create({ model, file: await wav('plain.wav'), response_format: 'srt' });
    return { text };
  },

  async speech(client, { model }) {
    // the audio streamed: read chunk by chunk as it arrives
    const response = await client.audio.speech.create({ model, voice: 'alloy', input: 'say this aloud', response_format: 'wav' });
    const chunks = [];
    for await (const chunk of response.body) chunks.push(Buffer.from(chunk));
    const bytes = Buffer.concat(chunks);
    return { type: response.headers.get('content-type'), riff: bytes.subarray(0, 4).toString(), size: bytes.length };
  },

  async speech_sse(client, { model }) {
    const response = await client.audio.speech.create({
      model, voice: 'coral', input: 'say this aloud', response_format: 'wav', stream_format: 'sse',
    });
    const types = (await response.text()).split('\n').filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)).type);
    return { type: response.headers.get('content-type'), types };
  },

  async rerank(client, { model, query, documents }) {
    // new-api's Jina/Cohere-shaped rerank has no SDK method
    const result = await client.post('/rerank', { body: { model, query, documents, top_n: 2 } });
    return { indexes: result.results.map((r) => r.index), usage: result.usage, document: result.results[0].document };
  },

  async alpha_search(client, { model }) {
    const result = await client.post('/alpha/search', { body: { model, id: 'search-1', input: 'weather in Paris' } });
    return { output: result.output, model: result.model };
  },

  async billing(client, { which, atRoot, query }) {
    const path = `/dashboard/billing/${which}`;
    return client.get(atRoot ? root(client) + path : path, { query });
  },

  async files_list(client) {
    await client.files.list();
    return { unexpected: 'answered' };
  },

  async image_variation(client) {
    await client.images.createVariation({ image: await png() });
    return { unexpected: 'answered' };
  },

  async model_delete(client, { model }) {
    await client.models.delete(model);
    return { unexpected: 'answered' };
  },

  async raw(client, { method, path }) {
    // a path the SDK has no method for (the legacy fine-tunes, a file by id)
    await client[method](path);
    return { unexpected: 'answered' };
  },

  async unknown_model(client) {
    await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] });
    return { unexpected: 'answered' };
  },
};

export { toFile };
