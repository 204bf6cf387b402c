// Driven by test_server_openai.c: talks to a running `qtts serve` through the
// official `openai` npm package. Usage: node test_server_openai.cjs PORT VOICE API_KEY
// Prints one "ok ..." or "FAIL ..." line per check and exits non-zero on any failure.
'use strict';
const OpenAI = require('openai');

const [port, voice, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey, maxRetries: 0, timeout: 120000 });
let failures = 0;
function check(cond, what) {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failures++;
}

(async () => {
  const models = await client.models.list();
  check(models.data.length === 1 && typeof models.data[0].id === 'string', `models.list: ${models.data.map(m => m.id)}`);

  const wav = Buffer.from(await (await client.audio.speech.create({
    model: 'qwen3-tts', voice, input: 'Hello from the OpenAI SDK.', response_format: 'wav',
    temperature: 0, max_new_tokens: 12,
  })).arrayBuffer());
  check(wav.length > 44 && wav.toString('latin1', 0, 4) === 'RIFF' && wav.toString('latin1', 8, 12) === 'WAVE',
        `speech.create wav: ${wav.length} bytes`);

  const pcm = Buffer.from(await (await client.audio.speech.create({
    model: 'qwen3-tts', voice, input: 'Hello from the OpenAI SDK.', response_format: 'pcm',
    temperature: 0, max_new_tokens: 12, stream_format: 'audio',
  })).arrayBuffer());
  check(pcm.length === wav.length - 44 && pcm.equals(wav.subarray(44)),
        `speech.create pcm (streamed) equals the wav samples: ${pcm.length} bytes`);

  try {
    await client.audio.speech.create({ model: 'qwen3-tts', voice: 'no-such-voice', input: 'x' });
    check(false, 'unknown voice raises');
  } catch (e) {
    check(e instanceof OpenAI.APIError && e.status === 400 && e.code === 'voice_not_found',
          `unknown voice raises APIError 400 voice_not_found (got ${e.status} ${e.code})`);
  }
  try {
    const bad = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await bad.models.list();
    check(false, 'wrong key raises');
  } catch (e) {
    check(e instanceof OpenAI.AuthenticationError, `wrong API key raises AuthenticationError (got ${e.status})`);
  }
  process.exit(failures ? 1 : 0);
})().catch(e => { console.log(`FAIL unexpected: ${e && e.stack || e}`); process.exit(1); });
