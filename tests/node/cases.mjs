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

  async unknown_model(client) {
    await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] });
    return { unexpected: 'answered' };
  },
};

export { toFile };
