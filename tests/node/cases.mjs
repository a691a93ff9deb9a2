// Cases run with the official OpenAI Node SDK against a Faregate gateway. Each case gets a
// client and the case's parameters and returns plain JSON the Python side checks; a thrown
// APIError is reported with its status, code and message.
import { toFile } from 'openai';

async function collect(stream) {
  const events = [];
  for await (const event of stream) events.push(event);
  return events;
}

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
    // the SDK asks for base64 and decodes it to floats itself
    const result = await client.embeddings.create({ model, input: ['first', 'second'] });
    return { lengths: result.data.map((d) => d.embedding.length), first: result.data[0].embedding, usage: result.usage };
  },

  async moderations(client, { model }) {
    const result = await client.moderations.create({ model, input: 'I will kill the process' });
    return { flagged: result.results[0].flagged, violence: result.results[0].categories.violence };
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

  async images(client, { model }) {
    const result = await client.images.generate({ model, prompt: 'a red square', size: '1024x1024' });
    return { count: result.data.length, url: result.data[0].url ?? null, b64: Boolean(result.data[0].b64_json) };
  },

  async image_edit(client, { model }) {
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
    const result = await client.images.edit({ model, prompt: 'make it blue', image: await toFile(png, 'in.png', { type: 'image/png' }) });
    return { count: result.data.length, b64: Boolean(result.data[0].b64_json), usage: result.usage ?? null };
  },

  async transcription(client, { model }) {
    const wav = Buffer.alloc(44 + 32000);  // a WAV header's room and one second of silence at 16 kHz
    wav.write('RIFF', 0); wav.writeUInt32LE(36 + 32000, 4); wav.write('WAVE', 8); wav.write('fmt ', 12);
    wav.writeUInt32LE(16, 16); wav.writeUInt16LE(1, 20); wav.writeUInt16LE(1, 22); wav.writeUInt32LE(16000, 24);
    wav.writeUInt32LE(32000, 28); wav.writeUInt16LE(2, 32); wav.writeUInt16LE(16, 34); wav.write('data', 36);
    wav.writeUInt32LE(32000, 40);
    const result = await client.audio.transcriptions.create({ model, file: await toFile(wav, 'hello.wav', { type: 'audio/wav' }) });
    return { text: result.text };
  },

  async speech(client, { model }) {
    const response = await client.audio.speech.create({ model, voice: 'alloy', input: 'say this aloud', response_format: 'wav' });
    const bytes = Buffer.from(await response.arrayBuffer());
    return { type: response.headers.get('content-type'), riff: bytes.subarray(0, 4).toString(), size: bytes.length };
  },

  async unknown_model(client) {
    await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] });
    return { unexpected: 'answered' };
  },
};

export { toFile };
