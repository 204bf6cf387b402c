// Driven by test_server_openai.c: talks to running `qtts serve` instances through the
// official `openai` npm package.
// Usage: node test_server_openai.cjs CV_PORT SPEAKER API_KEY BASE_PORT REFERENCE_WAV TMPDIR
//   CV_PORT: a CustomVoice server (built-in speakers, instructions); BASE_PORT: a Base server (voice cloning).
// Every format is decoded back with ffprobe. Prints one "ok ..." or "FAIL ..." line per check and exits
// non-zero on any failure.
'use strict';
const OpenAI = require('openai');
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const [cvPort, speaker, apiKey, basePort, refWav, tmp] = process.argv.slice(2);
const mk = port => new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey, maxRetries: 0, timeout: 120000 });
const cv = mk(cvPort), base = mk(basePort);
let failures = 0;
function check(cond, what) {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failures++;
}

// ffprobe's view of a file {format, codec, rate, channels} and its decoded duration in seconds.
function probe(file) {
  const out = execFileSync('ffprobe', ['-v', 'error', '-show_entries',
    'format=format_name,duration:stream=codec_name,sample_rate,channels', '-of', 'json', file]);
  const j = JSON.parse(out.toString());
  const s = (j.streams || [])[0] || {};
  // decoded length: a streamed FLAC's header says "length unknown", so count what ffmpeg decodes
  const pcm = execFileSync('ffmpeg', ['-v', 'error', '-i', file, '-f', 's16le', '-ac', '1', '-ar', '24000', '-'],
                           { maxBuffer: 1 << 28 });
  return { format: j.format.format_name, duration: pcm.length / 2 / 24000, codec: s.codec_name,
           rate: parseInt(s.sample_rate, 10), channels: s.channels };
}

// The speech body as bytes, for a request object.
async function speak(client, req) {
  return Buffer.from(await (await client.audio.speech.create(req)).arrayBuffer());
}

const TEXT = 'Hello from the OpenAI SDK.';
const FRAMES = 12; // max_new_tokens: bounds the run time
// format -> what ffprobe must report
const EXPECT = {
  mp3: { format: 'mp3', codec: 'mp3' },
  opus: { format: 'ogg', codec: 'opus' },
  aac: { format: 'aac', codec: 'aac' },
  flac: { format: 'flac', codec: 'flac' },
  wav: { format: 'wav', codec: 'pcm_s16le' },
};

async function formats() {
  const wav = await speak(cv, { model: 'tts-1', voice: speaker, input: TEXT, response_format: 'wav', temperature: 0,
                                max_new_tokens: FRAMES });
  const seconds = (wav.length - 44) / 2 / 24000;
  check(wav.toString('latin1', 0, 4) === 'RIFF' && seconds > 0, `wav: ${wav.length} bytes, ${seconds.toFixed(3)} s`);
  for (const fmt of Object.keys(EXPECT)) {
    for (const stream of [false, true]) {
      const req = { model: 'tts-1', voice: speaker, input: TEXT, response_format: fmt, temperature: 0,
                    max_new_tokens: FRAMES };
      if (stream) req.stream_format = 'audio';
      const bytes = await speak(cv, req);
      const file = path.join(tmp, `sdk_${fmt}${stream ? '_stream' : ''}.${fmt === 'opus' ? 'ogg' : fmt}`);
      fs.writeFileSync(file, bytes);
      let p = null;
      try { p = probe(file); } catch (e) { p = { error: String(e.message || e).split('\n')[0] }; }
      const want = EXPECT[fmt];
      // lossy codecs pad to whole frames: allow 0.1 s either way
      const durOk = Math.abs(p.duration - seconds) < 0.1;
      check(p.format && p.format.split(',').includes(want.format) && p.codec === want.codec &&
            p.channels === 1 && (fmt === 'opus' ? p.rate === 48000 || p.rate === 24000 : p.rate === 24000) && durOk,
            `${fmt}${stream ? ' (streamed)' : ''}: ${bytes.length} bytes, ffprobe ${JSON.stringify(p)}`);
    }
  }
  const pcm = await speak(cv, { model: 'tts-1', voice: speaker, input: TEXT, response_format: 'pcm', temperature: 0,
                                max_new_tokens: FRAMES, stream_format: 'audio' });
  check(pcm.length === wav.length - 44 && pcm.equals(wav.subarray(44)),
        `pcm (streamed) equals the wav samples: ${pcm.length} bytes`);
  // no response_format: OpenAI's default, mp3
  const dflt = await speak(cv, { model: 'tts-1', voice: speaker, input: TEXT, temperature: 0, max_new_tokens: FRAMES });
  const f = path.join(tmp, 'sdk_default');
  fs.writeFileSync(f, dflt);
  check(probe(f).codec === 'mp3', `no response_format gives mp3 (${dflt.length} bytes)`);
}

async function sse() {
  const res = await cv.audio.speech.create({ model: 'tts-1', voice: speaker, input: TEXT, response_format: 'pcm',
                                             stream_format: 'sse', temperature: 0, max_new_tokens: FRAMES });
  const text = Buffer.from(await res.arrayBuffer()).toString();
  const events = text.split('\n\n').filter(Boolean).map(block => {
    const data = block.split('\n').find(l => l.startsWith('data: '));
    return data ? JSON.parse(data.slice(6)) : null;
  });
  const deltas = events.filter(e => e && e.type === 'speech.audio.delta');
  const done = events.find(e => e && e.type === 'speech.audio.done');
  const bytes = deltas.reduce((n, e) => n + Buffer.from(e.audio, 'base64').length, 0);
  const u = done && done.usage;
  check(deltas.length > 0 && bytes > 0 && u && u.input_tokens > 0 && u.output_tokens > 0 &&
        u.total_tokens === u.input_tokens + u.output_tokens,
        `SSE: ${deltas.length} speech.audio.delta events (${bytes} bytes), done.usage ${JSON.stringify(u)}`);
}

async function instructionsAndErrors() {
  const a = await speak(cv, { model: 'tts-1', voice: speaker, input: TEXT, response_format: 'pcm', temperature: 0,
                              max_new_tokens: FRAMES, instructions: 'Speak slowly and calmly.' });
  check(a.length > 0, `instructions accepted (${a.length} bytes)`);
  const expectError = async (what, fn, status, code) => {
    try {
      await fn();
      check(false, `${what} raises`);
    } catch (e) {
      check(e instanceof OpenAI.APIError && e.status === status && (!code || e.code === code),
            `${what} raises APIError ${status} ${code || ''} (got ${e.status} ${e.code}: ${e.message})`);
    }
  };
  await expectError('unknown voice', () => cv.audio.speech.create({ model: 'tts-1', voice: 'no-such-voice',
                                                                    input: 'x' }), 400, 'voice_not_found');
  await expectError('input over 4096 characters', () => cv.audio.speech.create({ model: 'tts-1', voice: speaker,
                                                                                 input: 'a'.repeat(4097) }),
                    400, 'input_too_long');
  await expectError('instructions over 4096 characters',
                    () => cv.audio.speech.create({ model: 'tts-1', voice: speaker, input: 'x',
                                                   instructions: 'b'.repeat(4097) }), 400, 'instructions_too_long');
  await expectError('unknown response_format',
                    () => cv.audio.speech.create({ model: 'tts-1', voice: speaker, input: 'x',
                                                   response_format: 'aiff' }), 400, 'unsupported_format');
  try {
    const bad = new OpenAI({ baseURL: `http://127.0.0.1:${cvPort}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await bad.models.list();
    check(false, 'wrong key raises');
  } catch (e) {
    check(e instanceof OpenAI.AuthenticationError, `wrong API key raises AuthenticationError (got ${e.status})`);
  }
}

// SDKs before 7.x (node < 22) have no audio.voices: the same multipart request through fetch + FormData.
async function createVoice(fields) {
  if (base.audio.voices) return base.audio.voices.create(fields);
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.set('audio_sample', new Blob([fs.readFileSync(refWav)], { type: 'audio/wav' }), 'reference.wav');
  const r = await fetch(`http://127.0.0.1:${basePort}/v1/audio/voices`,
                        { method: 'POST', body: form, headers: { Authorization: `Bearer ${apiKey}` } });
  if (!r.ok) throw new Error(`voice creation: ${r.status} ${await r.text()}`);
  return r.json();
}
async function deleteVoice(id) {
  if (base.audio.voices) return base.audio.voices.delete(id);
  const r = await fetch(`http://127.0.0.1:${basePort}/v1/audio/voices/${id}`,
                        { method: 'DELETE', headers: { Authorization: `Bearer ${apiKey}` } });
  if (r.status === 404) throw Object.assign(new Error('not found'), { status: 404 });
  return r.json();
}

async function customVoices() {
  // OpenAI's custom-voice creation: multipart with name, audio_sample, consent (+ qtts's ref_text)
  console.log(`#    openai ${OpenAI.VERSION || '?'}, node ${process.versions.node}: ` +
              (base.audio.voices ? 'audio.voices' : 'fetch + FormData (this SDK has no audio.voices)'));
  const voice = await createVoice({
    name: 'sdk-voice', consent: 'cons_1234', ref_text: 'Hello, this is the reference.',
    audio_sample: base.audio.voices
      ? await OpenAI.toFile(fs.readFileSync(refWav), 'reference.wav', { type: 'audio/wav' }) : null,
  });
  check(voice.object === 'audio.voice' && voice.id === 'sdk-voice' && voice.name === 'sdk-voice' &&
        Number.isInteger(voice.created_at), `voices.create: ${JSON.stringify(voice)}`);
  const byId = await speak(base, { model: 'tts-1', voice: { id: voice.id }, input: TEXT, response_format: 'pcm',
                                   temperature: 0, max_new_tokens: FRAMES });
  const byName = await speak(base, { model: 'tts-1', voice: voice.id, input: TEXT, response_format: 'pcm',
                                     temperature: 0, max_new_tokens: FRAMES });
  check(byId.length > 0 && byId.equals(byName), `voice {id} and voice "name" give the same audio (${byId.length} bytes)`);
  const del = await deleteVoice(voice.id);
  check(del.object === 'audio.voice.deleted' && del.id === voice.id && del.deleted === true,
        `voices.delete: ${JSON.stringify(del)}`);
  try {
    await deleteVoice(voice.id);
    check(false, 'deleting twice raises');
  } catch (e) {
    check(base.audio.voices ? e instanceof OpenAI.NotFoundError : e.status === 404,
          `deleting a deleted voice raises NotFoundError (got ${e.status})`);
  }
}

(async () => {
  const models = await cv.models.list();
  check(models.data.length === 1 && typeof models.data[0].id === 'string', `models.list: ${models.data.map(m => m.id)}`);
  await formats();
  await sse();
  await instructionsAndErrors();
  await customVoices();
  process.exit(failures ? 1 : 0);
})().catch(e => { console.log(`FAIL unexpected: ${e && e.stack || e}`); process.exit(1); });
