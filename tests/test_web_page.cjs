// Driven by tests/test_web_page.c: the page at / (src/server/web/index.html) in
// real headless Chromium through puppeteer-core, against two running servers.
// Usage: node test_web_page.cjs --custom URL --key KEY --base URL --design URL --wav FILE --out DIR --chromium PATH
//   --custom: the tiny CustomVoice model, started with --api-key KEY
//   --base:   the tiny Base model (no key), for voice registration
//   --design: the tiny VoiceDesign model (no key)
//   --wav:    a reference recording to upload; --out: where screenshots go
// Prints one "ok ..." or "FAIL ..." line per check ("# ..." lines are notes)
// and exits non-zero on any failure.
'use strict';
const fs = require('fs');
const path = require('path');
const puppeteer = require('puppeteer-core');

const args = {};
for (let i = 2; i + 1 < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
for (const k of ['custom', 'key', 'base', 'design', 'wav', 'out', 'chromium'])
  if (!args[k]) { console.log(`FAIL usage: --${k} is missing`); process.exit(2); }

const FRAMES = '12'; // max_new_tokens of every request: bounds the run time
let failures = 0;
function check(cond, what) {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failures++;
  return cond;
}
const note = (msg) => console.log(`# ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The whole run must stay well inside ctest's limit even if the browser hangs.
const watchdog = setTimeout(() => { console.log('FAIL watchdog: the browser checks took over 150 s'); process.exit(3); },
                            150000);

// ---- page helpers ----

async function openPage(browser, url) {
  const page = await browser.newPage();
  const problems = []; // console errors and uncaught exceptions, in order
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(`uncaught exception: ${e.message}`));
  page.on('dialog', (d) => d.accept()); // the page confirms before deleting a voice
  page.setDefaultTimeout(30000);
  await page.setViewport({ width: 1000, height: 900 });
  await page.goto(url, { waitUntil: 'load' });
  return { page, problems };
}

// Chromium logs every non-2xx fetch as "Failed to load resource: ... status
// of 4xx"; the checks below provoke some on purpose. Everything else counts.
function unexpected(problems) {
  return problems.filter((p) => !/^Failed to load resource: the server responded with a status of 4\d\d\b/.test(p));
}

async function fill(page, sel, value) {
  await page.$eval(sel, (el) => { el.value = ''; });
  if (value) await page.type(sel, value);
}

const stats = (page) => page.evaluate(() => Object.assign({}, window.qttsStats));

// The visible error message, or null when none is shown.
const shownError = (page) => page.$eval('#error', (el) => (el.hidden ? null : el.textContent));

async function waitConnects(page, n) {
  await page.waitForFunction((k) => window.qttsStats && window.qttsStats.connects >= k, {}, n);
}

// Clicks Speak and waits until that request has finished (audio fully
// received, or an error shown).
async function speak(page, timeout = 30000) {
  const before = (await stats(page)).finished;
  await page.click('#speak');
  await page.waitForFunction((n) => window.qttsStats.finished > n, { timeout }, before);
  return {
    st: await stats(page), err: await shownError(page),
    req: await page.evaluate(() => window.qttsLastRequest),
    status: await page.$eval('#status', (el) => el.textContent),
  };
}

// The same request straight to the API, for comparison with what the page got.
async function direct(base, body, key) {
  const headers = { 'Content-Type': 'application/json' };
  if (key) headers.Authorization = `Bearer ${key}`;
  const r = await fetch(`${base}/v1/audio/speech`, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: r.status, bytes: Buffer.from(await r.arrayBuffer()) };
}

// The server's count of requests cancelled because the client went away.
async function disconnects(base) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = /^qtts_client_disconnects_total (\d+)$/m.exec(text);
  return m ? Number(m[1]) : -1;
}

async function serverVoices(base, key) {
  const r = await fetch(`${base}/v1/audio/voices`, { headers: key ? { Authorization: `Bearer ${key}` } : {} });
  return (await r.json()).voices.filter((v) => v.type !== 'alias').map((v) => v.id || v.name); // aliases are not in the picker
}

// A deterministic, short request: greedy sampling, fixed seed, FRAMES frames.
async function setDeterministic(page, format, text) {
  await fill(page, '#text', text);
  await page.select('#format', format);
  await page.$eval('details', (d) => { d.open = true; });
  await fill(page, '#temperature', '0');
  await fill(page, '#seed', '7');
  await fill(page, '#max-frames', FRAMES);
}

// After a pcm request: what the page decoded equals what the server sends,
// and every scheduled buffer played to its end on the audio clock.
async function checkPcmPlayed(page, r, base, key, what) {
  check(r.err === null, `${what}: no error shown (${r.err || r.status})`);
  check(r.req && r.req.response_format === 'pcm' && r.req.stream_format === 'audio',
        `${what}: the page asked for streamed pcm (${JSON.stringify(r.req)})`);
  check(r.st.samplesReceived > 0 && r.st.chunks >= 1 && r.st.sourcesStarted >= 1,
        `${what}: ${r.st.samplesReceived} samples in ${r.st.chunks} chunks, ${r.st.sourcesStarted} buffers scheduled`);
  const d = await direct(base, r.req, key);
  check(d.status === 200 && d.bytes.length / 2 === r.st.samplesReceived,
        `${what}: the server's audio for the same request is ${d.bytes.length / 2} samples ` +
        `(${(d.bytes.length / 48000).toFixed(2)} s), the page received ${r.st.samplesReceived}`);
  // 5 s beyond the audio's own length: the buffers must end, so the clock ran.
  const ms = 5000 + (1000 * r.st.samplesReceived) / 24000;
  const ended = await page.waitForFunction(
    () => !window.qttsStats.playing && window.qttsStats.sourcesEnded >= window.qttsStats.sourcesStarted,
    { timeout: ms }).then(() => true, () => false);
  const s = await stats(page);
  check(ended, `${what}: all ${s.sourcesStarted} buffers played to the end (${s.sourcesEnded} ended, playing=${s.playing})`);
}

// A screenshot is "not blank" when, decoded by the browser itself (an <img>
// drawn into a canvas), it has many distinct colours (text, borders and
// anti-aliasing make hundreds; a blank, single-colour or failed render has
// one or two) and its most common colour (the background) covers less than
// 97% of the pixels. Colours are counted at 5 bits per channel.
async function checkScreenshot(browser, b64, file, wantWidth, what) {
  fs.writeFileSync(file, Buffer.from(b64, 'base64'));
  const page = await browser.newPage();
  const r = await page.evaluate(async (data) => {
    const img = new Image();
    img.src = `data:image/png;base64,${data}`;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const px = g.getImageData(0, 0, c.width, c.height).data;
    const counts = new Map();
    for (let i = 0; i < px.length; i += 4) {
      const k = ((px[i] >> 3) << 10) | ((px[i + 1] >> 3) << 5) | (px[i + 2] >> 3);
      counts.set(k, (counts.get(k) || 0) + 1);
    }
    let top = 0;
    for (const v of counts.values()) top = Math.max(top, v);
    return { w: c.width, h: c.height, colours: counts.size, background: top / (px.length / 4) };
  }, b64);
  await page.close();
  check(r.w === wantWidth && r.h > 300 && r.colours >= 16 && r.background < 0.97,
        `${what} screenshot ${path.basename(file)}: ${r.w}x${r.h}, ${r.colours} colours, ` +
        `background ${(100 * r.background).toFixed(1)}% of the pixels`);
}

// ---- Base model: registration (upload and microphone), speaking, deletion ----

async function baseChecks(browser) {
  const base = args.base;
  const { page, problems } = await openPage(browser, `${base}/`);
  await waitConnects(page, 1);
  let st = await stats(page);
  check(st.connected && st.variant === 'base', `base: the page connected (variant ${st.variant})`);
  check(problems.length === 0, `base: no console errors while loading (${JSON.stringify(problems)})`);
  const layout = await page.evaluate(() => ({
    voices: !document.getElementById('voices-section').hidden,
    instructions: !document.getElementById('instructions-field').hidden,
    label: document.getElementById('voice-label').textContent,
  }));
  check(layout.voices && !layout.instructions && layout.label === 'Voice',
        `base: the form shows voice registration, hides instructions (${JSON.stringify(layout)})`);

  // Every control has an accessible name.
  const unnamed = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea, button')]
    .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') &&
                    !(el.tagName === 'BUTTON' && el.textContent.trim()))
    .map((el) => el.id || el.outerHTML.slice(0, 60)));
  check(unnamed.length === 0, `every control has a label (unlabelled: ${JSON.stringify(unnamed)})`);

  // The pcm decoder with samples split across chunk borders (network chunks
  // cannot be made to split oddly on purpose, so its helper is checked directly).
  const dec = await page.evaluate(() => {
    const want = [0, 1, -1, 32767, -32768, 12345, -12345, 256, -256];
    const bytes = new Uint8Array(want.length * 2);
    const dv = new DataView(bytes.buffer);
    want.forEach((v, i) => dv.setInt16(2 * i, v, true));
    const d = window.qttsTest.makePcmDecoder();
    const got = [];
    let o = 0;
    for (const n of [1, 2, 3, 1, 1, 5, 4, 1]) { // odd sizes: most samples straddle two chunks
      for (const x of d.push(bytes.subarray(o, o + n))) got.push(Math.round(x * 32768));
      o += n;
    }
    return { want, got, pending: d.pending, used: o, total: bytes.length };
  });
  check(dec.used === dec.total && dec.pending === 0 && JSON.stringify(dec.got) === JSON.stringify(dec.want),
        `pcm decoder across odd chunk splits: ${JSON.stringify(dec.got)}`);
  const wav = await page.evaluate(() => {
    const b = new DataView(window.qttsTest.encodeWav(new Float32Array([0, 0.5, -0.5, 1, -1, 2]), 24000));
    const tag = (o) => String.fromCharCode(b.getUint8(o), b.getUint8(o + 1), b.getUint8(o + 2), b.getUint8(o + 3));
    return { size: b.byteLength, riff: tag(0), wave: tag(8), fmt: tag(12), data: tag(36), rate: b.getUint32(24, true),
             bits: b.getUint16(34, true), ch: b.getUint16(22, true), riffLen: b.getUint32(4, true),
             dataLen: b.getUint32(40, true), s: [0, 1, 2, 3, 4, 5].map((i) => b.getInt16(44 + 2 * i, true)) };
  });
  check(wav.size === 56 && wav.riff === 'RIFF' && wav.wave === 'WAVE' && wav.fmt === 'fmt ' && wav.data === 'data' &&
        wav.rate === 24000 && wav.bits === 16 && wav.ch === 1 && wav.riffLen === 48 && wav.dataLen === 12 &&
        JSON.stringify(wav.s) === JSON.stringify([0, 16384, -16384, 32767, -32768, 32767]),
        `WAV writer: ${JSON.stringify(wav)}`);

  // Register by uploading a WAV file, with a transcript.
  await fill(page, '#voice-name', 'webvoice');
  await (await page.$('#ref-file')).uploadFile(args.wav);
  await page.waitForFunction(() => /^Using file/.test(document.getElementById('ref-status').textContent));
  await fill(page, '#ref-text', 'Hello there, this is my voice.');
  await page.click('#register');
  await page.waitForFunction(() => document.querySelector('#voice-list li[data-voice="webvoice"]') ||
                                   !document.getElementById('error').hidden, { timeout: 60000 });
  const reg = await page.evaluate(() => ({
    listed: !!document.querySelector('#voice-list li[data-voice="webvoice"]'),
    selected: document.getElementById('voice').value,
    status: document.getElementById('register-status').textContent,
    cleared: document.getElementById('voice-name').value === '' && document.getElementById('ref-text').value === '' &&
             document.getElementById('ref-file').value === '' &&
             document.getElementById('ref-status').textContent === 'No reference audio yet.',
  }));
  check(reg.listed && reg.selected === 'webvoice' && reg.cleared && (await shownError(page)) === null,
        `base: uploaded WAV registers 'webvoice', listed and selected, the form cleared (${JSON.stringify(reg)}, ` +
        `error ${await shownError(page)})`);
  check((await serverVoices(base)).includes('webvoice'), 'base: the server lists webvoice');

  // Speak with it (pcm, streamed).
  await setDeterministic(page, 'pcm', 'Now in my own voice.');
  await checkPcmPlayed(page, await speak(page), base, null, 'base pcm with webvoice');

  // Stop: a long streamed request (a cloned voice runs to the frame limit),
  // stopped once audio arrives; the server must see the client go away.
  const gone0 = await disconnects(base);
  await fill(page, '#max-frames', '2000');
  await fill(page, '#text', 'A much longer sentence, so that there is time to press stop while it streams. '.repeat(4));
  const before = (await stats(page)).finished;
  await page.click('#speak');
  await page.waitForFunction((n) => window.qttsStats.samplesReceived > 0 || window.qttsStats.finished > n, {}, before);
  await page.click('#stop');
  await page.waitForFunction((n) => window.qttsStats.finished > n, {}, before);
  await sleep(300);
  st = await stats(page);
  const status = await page.$eval('#status', (el) => el.textContent);
  check(status === 'Stopped.' && !st.playing && !st.inFlight && (await shownError(page)) === null,
        `base: Stop ends the stream and the sound ("${status}" after ${st.samplesReceived} samples, ` +
        `playing=${st.playing})`);
  let gone = gone0;
  for (let i = 0; i < 40 && gone === gone0; i++, await sleep(100)) gone = await disconnects(base);
  check(gone === gone0 + 1, `base: the server cancelled the stopped request (client disconnects ${gone0} -> ${gone})`);
  await fill(page, '#max-frames', FRAMES);

  // Record from the fake microphone (a beeping test device), register that
  // without a transcript.
  await fill(page, '#voice-name', 'micvoice');
  await fill(page, '#ref-text', '');
  await page.click('#record');
  await page.waitForFunction(() => /^Recording/.test(document.getElementById('ref-status').textContent) ||
                                   !document.getElementById('error').hidden);
  await sleep(1500);
  await page.click('#record-stop');
  await page.waitForFunction(() => /^Using the recording/.test(document.getElementById('ref-status').textContent) ||
                                   !document.getElementById('error').hidden, { timeout: 15000 });
  const rec = await page.$eval('#ref-status', (el) => el.textContent);
  check(/^Using the recording \([0-9.]+ s\)/.test(rec) && (await shownError(page)) === null,
        `microphone recording decoded to WAV: "${rec}" (error ${await shownError(page)})`);
  await page.click('#register');
  await page.waitForFunction(() => document.querySelector('#voice-list li[data-voice="micvoice"]') ||
                                   !document.getElementById('error').hidden, { timeout: 60000 });
  const mic = await page.$eval('#voice-list', (el) => el.textContent);
  check(/micvoice/.test(mic) && /no transcript/.test(mic) && (await shownError(page)) === null,
        `base: the recording registers 'micvoice' (x-vector only) (error ${await shownError(page)})`);

  // Delete webvoice with its button (the confirm dialog is accepted).
  await page.click('#voice-list li[data-voice="webvoice"] button.delete');
  await page.waitForFunction(() => !document.querySelector('#voice-list li[data-voice="webvoice"]'));
  const left = await serverVoices(base);
  check(!left.includes('webvoice') && left.includes('micvoice'),
        `base: delete button removes webvoice on the server (left: ${JSON.stringify(left)})`);

  // Another client deletes micvoice; speaking with it shows the server's error.
  const del = await fetch(`${base}/v1/audio/voices/micvoice`, { method: 'DELETE' });
  check(del.status === 200, `base: micvoice deleted behind the page's back (${del.status})`);
  await page.select('#voice', 'micvoice');
  const r = await speak(page);
  check(r.err !== null && r.err.includes("unknown voice 'micvoice'") && r.st.lastError === r.err,
        `base: an unknown voice shows the server's message: "${r.err}"`);
  const refreshed = await page.waitForFunction(() => !document.querySelector('#voice-list li[data-voice="micvoice"]'),
                                               { timeout: 5000 }).then(() => true, () => false);
  check(refreshed, 'base: after that error the voice list is reloaded (micvoice gone)');
  await checkScreenshot(browser, await page.screenshot({ fullPage: true, encoding: 'base64' }),
                        path.join(args.out, 'web_page_base.png'), 1000, 'base');
  const bad = unexpected(problems);
  check(bad.length === 0, `base: no console errors beyond the provoked 4xx (${JSON.stringify(bad)})`);
  await page.close();
}

// ---- CustomVoice model behind an API key: key handling, pcm, wav, stop, errors ----

async function customChecks(browser) {
  const base = args.custom, key = args.key;
  const { page, problems } = await openPage(browser, `${base}/`);
  await waitConnects(page, 1);
  let err = await shownError(page);
  check(err !== null && err.includes('401') && err.includes('enter it under Connection below') &&
        !err.includes('Authorization: Bearer') && !(await stats(page)).connected,
        `custom: without a key the 401 message points at the key field: "${err}"`);

  await fill(page, '#api-key', 'wrong-key');
  await page.click('#apply-key');
  await waitConnects(page, 2);
  err = await shownError(page);
  check(err !== null && err.includes('401') && !(await stats(page)).connected, `custom: a wrong key shows "${err}"`);

  await fill(page, '#api-key', key);
  await page.click('#apply-key');
  await waitConnects(page, 3);
  let st = await stats(page);
  const speakers = (await serverVoices(base, key));
  const options = await page.$$eval('#voice option', (os) => os.map((o) => o.value));
  check(st.connected && st.variant === 'custom_voice' && (await shownError(page)) === null,
        `custom: the right key connects (variant ${st.variant}, error ${await shownError(page)})`);
  check(options.length > 0 && JSON.stringify(options) === JSON.stringify(speakers),
        `custom: the speaker picker lists the built-in speakers ${JSON.stringify(options)}`);
  const langs = await page.$$eval('#language option', (os) => os.map((o) => o.value));
  check(langs[0] === 'auto' && langs.includes('english') && langs.includes('chinese'),
        `custom: language select ${JSON.stringify(langs)}`);

  // The key survives a reload (localStorage).
  await page.reload({ waitUntil: 'load' });
  await waitConnects(page, 1);
  const kept = await page.$eval('#api-key', (el) => el.value);
  check(kept === key && (await stats(page)).connected, `custom: the key is kept across a reload (${kept})`);
  const layout = await page.evaluate(() => ({
    voices: !document.getElementById('voices-section').hidden,
    instructions: !document.getElementById('instructions-field').hidden,
    label: document.getElementById('voice-label').textContent,
  }));
  check(!layout.voices && layout.instructions && layout.label === 'Speaker',
        `custom: speaker picker and instructions, no registration (${JSON.stringify(layout)})`);

  // pcm, streamed, with a picked speaker, language and style instruction.
  const speaker = options[Math.min(1, options.length - 1)];
  await setDeterministic(page, 'pcm', 'Hello from the browser test.');
  await page.select('#voice', speaker);
  await page.select('#language', 'english');
  await fill(page, '#instructions', 'Cheerful.');
  let r = await speak(page);
  check(r.req && r.req.voice === speaker && r.req.language === 'english' && r.req.instructions === 'Cheerful.',
        `custom: the request carries speaker ${speaker}, language, instructions`);
  await checkPcmPlayed(page, r, base, key, `custom pcm (${speaker})`);
  // After the live stream: the same audio in the player for replay, and a WAV download whose samples are the
  // server's bytes.
  const replay = await page.waitForFunction(() => document.getElementById('player').readyState >= 1, { timeout: 10000 })
    .then(() => page.evaluate(async () => {
      const p = document.getElementById('player'), a = document.getElementById('download');
      const bytes = a.hidden ? [] : Array.from(new Uint8Array(await window.qttsLastBlob.arrayBuffer()));
      return { duration: p.duration, src: p.src, hidden: p.hidden, name: a.download, text: a.textContent, bytes,
               same: a.href === p.src };
    }), () => null);
  const dpcm = await direct(base, r.req, key);
  const wav = replay ? Buffer.from(replay.bytes) : Buffer.alloc(0);
  check(replay && !replay.hidden && /^blob:/.test(replay.src) && replay.same &&
        Math.abs(replay.duration - r.st.samplesReceived / 24000) < 0.01,
        `custom pcm: replay in <audio> after the stream: ${replay && replay.duration} s ` +
        `(want ${(r.st.samplesReceived / 24000).toFixed(3)} s)`);
  check(replay && /\.wav$/.test(replay.name) && /^Download WAV/.test(replay.text) && wav.length === 44 + dpcm.bytes.length &&
        wav.toString('latin1', 0, 4) === 'RIFF' && wav.readUInt32LE(24) === 24000 &&
        wav.subarray(44).equals(dpcm.bytes),
        `custom pcm: download ${replay && replay.name} (${replay && replay.text}): ${wav.length} bytes, ` +
        `its samples the server's ${dpcm.bytes.length} bytes`);

  // The character counter: code points against the server's --max-input-chars (100 here), live while typing.
  await fill(page, '#text', 'h\u00e9llo \u{1F44B}');
  let count = await page.$eval('#text-count', (el) => ({ text: el.textContent, over: el.classList.contains('over') }));
  check(count.text === '7 / 100 characters' && !count.over, `custom: character counter "${count.text}"`);
  await page.$eval('#text', (el) => { el.value = 'x'.repeat(103); el.dispatchEvent(new Event('input')); });
  count = await page.$eval('#text-count', (el) => ({ text: el.textContent, over: el.classList.contains('over') }));
  check(count.over && count.text.startsWith('103 / 100') && count.text.includes('3 over'),
        `custom: over the limit the counter says so: "${count.text}"`);
  await fill(page, '#text', 'Hello from the browser test.');

  // wav: one buffered response played through <audio> from a Blob.
  await page.select('#format', 'wav');
  r = await speak(page);
  const d = await direct(base, r.req, key);
  check(r.err === null && r.st.blobBytes > 44 && r.st.blobBytes === d.bytes.length,
        `custom wav: blob of ${r.st.blobBytes} bytes, the server's answer ${d.bytes.length} (error ${r.err})`);
  const meta = await page.waitForFunction(() => document.getElementById('player').readyState >= 1, { timeout: 10000 })
    .then(() => page.evaluate(() => {
      const p = document.getElementById('player'), a = document.getElementById('download');
      return { duration: p.duration, src: p.src, hidden: p.hidden, href: a.href, name: a.download };
    }), () => null);
  const want = (r.st.blobBytes - 44) / 48000;
  check(meta && !meta.hidden && /^blob:/.test(meta.src) && Math.abs(meta.duration - want) < 0.01,
        `custom wav: <audio> decoded it: ${meta && meta.duration.toFixed(3)} s (want ${want.toFixed(3)} s)`);
  check(meta && /^blob:/.test(meta.href) && /\.wav$/.test(meta.name), `custom wav: download link ${meta && meta.name}`);
  const played = await page.waitForFunction(() => {
    const p = document.getElementById('player');
    return p.ended || p.currentTime > 0;
  }, { timeout: 10000 }).then(() => true, () => false);
  check(played, 'custom wav: <audio> plays');

  // A server-side validation error is shown: empty text.
  await fill(page, '#max-frames', FRAMES);
  await fill(page, '#text', '');
  r = await speak(page);
  check(r.err !== null && r.err.includes("'input' is required") && r.err.includes('400'),
        `custom: empty text shows the server's message: "${r.err}"`);

  // Desktop, then phone width: no horizontal scrolling, screenshots not blank.
  await fill(page, '#text', 'Hello from the browser test.');
  await page.evaluate(() => window.scrollTo(0, 0));
  await checkScreenshot(browser, await page.screenshot({ fullPage: true, encoding: 'base64' }),
                        path.join(args.out, 'web_page_desktop.png'), 1000, 'desktop');
  // isMobile makes puppeteer reload the page: wait until it has connected again.
  await page.setViewport({ width: 375, height: 812, isMobile: true, deviceScaleFactor: 1 });
  await page.waitForFunction(() => window.qttsStats && window.qttsStats.connected);
  const w = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, view: window.innerWidth }));
  check(w.scroll <= w.view, `phone width: no horizontal overflow (content ${w.scroll} px, viewport ${w.view} px)`);
  await checkScreenshot(browser, await page.screenshot({ fullPage: true, encoding: 'base64' }),
                        path.join(args.out, 'web_page_phone.png'), 375, 'phone');
  const bad = unexpected(problems);
  check(bad.length === 0, `custom: no console errors beyond the provoked 4xx (${JSON.stringify(bad)})`);
  await page.close();
}

// ---- VoiceDesign: no voice picker, the description is required ----

async function designChecks(browser) {
  const base = args.design;
  const { page, problems } = await openPage(browser, `${base}/`);
  await waitConnects(page, 1);
  const layout = await page.evaluate(() => ({
    variant: window.qttsStats.variant,
    voice: !document.getElementById('voice-field').hidden,
    voices: !document.getElementById('voices-section').hidden,
    label: document.getElementById('instructions-label').textContent,
  }));
  check(layout.variant === 'voice_design' && !layout.voice && !layout.voices && /required/.test(layout.label),
        `design: no voice picker, a required description (${JSON.stringify(layout)})`);
  await setDeterministic(page, 'pcm', 'Designed in words.');
  await fill(page, '#instructions', '');
  let r = await speak(page);
  check(r.err !== null && r.err.includes("needs 'instructions'"), `design: no description shows "${r.err}"`);
  await fill(page, '#instructions', 'A calm, deep voice.');
  r = await speak(page);
  check(r.req && !('voice' in r.req) && r.req.instructions === 'A calm, deep voice.',
        `design: the request sends the description and no voice (${JSON.stringify(r.req)})`);
  await checkPcmPlayed(page, r, base, null, 'design pcm');
  const bad = unexpected(problems);
  check(bad.length === 0, `design: no console errors beyond the provoked 4xx (${JSON.stringify(bad)})`);
  await page.close();
}

(async () => {
  const t0 = Date.now();
  const browser = await puppeteer.launch({
    executablePath: args.chromium,
    headless: true,
    args: ['--headless=new', '--no-sandbox', '--autoplay-policy=no-user-gesture-required',
           '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream'],
  });
  note(`${await browser.version()} started in ${Date.now() - t0} ms`);
  try {
    await baseChecks(browser);
    note(`base checks done at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    await customChecks(browser);
    note(`custom checks done at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    await designChecks(browser);
    note(`design checks done at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  } finally {
    await browser.close();
  }
  clearTimeout(watchdog);
  process.exit(failures ? 1 : 0);
})().catch((e) => { console.log(`FAIL unexpected: ${(e && e.stack) || e}`); process.exit(1); });
