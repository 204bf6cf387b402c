// Driven by test_server_ws.c: node's built-in WebSocket client (node 20: --experimental-websocket) against
// `qtts serve`. Usage: node --experimental-websocket test_server_ws.cjs PORT SPEAKER
// Sends a config, text deltas as an LLM would (word by word, 20 ms apart), input.done, session.close; checks
// the event order, that binary audio arrives before the text is complete, and prints one ok/FAIL line per check.
'use strict';
const [port, speaker] = process.argv.slice(2);
let failures = 0;
const check = (cond, what) => { console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`); if (!cond) failures++; };

// node >= 22 (or 20 with --experimental-websocket) has WebSocket built in; older ones use the ws package
const WS = typeof WebSocket === 'function' ? WebSocket : require('ws');
const ws = new WS(`ws://127.0.0.1:${port}/v1/audio/speech/stream`);
ws.binaryType = 'arraybuffer';
const events = [];
let bytes = 0, firstAudioAt = -1, textDoneAt = -1, t0 = 0;
const words = 'One two three four five six seven eight nine ten eleven twelve, and that is all.'.split(' ');
ws.onopen = async () => {
  ws.send(JSON.stringify({ type: 'session.config', voice: speaker, response_format: 'pcm', seed: 3 }));
  t0 = Date.now();
  for (let i = 0; i < words.length; i++) {
    ws.send(JSON.stringify({ type: 'input.text', text: (i ? ' ' : '') + words[i] }));
    await new Promise(r => setTimeout(r, 20));
  }
  textDoneAt = Date.now() - t0;
  ws.send(JSON.stringify({ type: 'input.done' }));
  ws.send(JSON.stringify({ type: 'session.close' }));
};
ws.onmessage = ev => {
  if (typeof ev.data === 'string') {
    events.push(JSON.parse(ev.data).type);
  } else {
    if (firstAudioAt < 0) firstAudioAt = Date.now() - t0;
    bytes += ev.data.byteLength;
    if (events[events.length - 1] !== 'audio') events.push('audio');
  }
};
ws.onerror = e => { check(false, `websocket error: ${e.message || e}`); };
ws.onclose = ev => {
  check(events[0] === 'audio.start' && events.includes('audio') &&
        events.indexOf('audio.done') > events.indexOf('audio') && events[events.length - 1] === 'session.done',
        `event order: ${events.join(', ')}`);
  check(bytes > 0 && bytes % 2 === 0, `pcm received: ${bytes} bytes`);
  check(ev.code === 1000, `closed normally (code ${ev.code})`);
  check(firstAudioAt >= 0 && firstAudioAt < textDoneAt,
        `first audio ${firstAudioAt} ms after the first word, before the text was complete (${textDoneAt} ms)`);
  process.exit(failures ? 1 : 0);
};
setTimeout(() => { check(false, 'timed out'); process.exit(1); }, 60000);
