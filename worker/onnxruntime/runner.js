'use strict';
// node --expose-gc runner.js PACKAGE MODEL TENSORS THREADS: ONNX Runtime as a contender,
// driven by farm-onnxruntime-baseline (worker/onnxruntime/onnxruntime_baseline.h), which
// owns the measurement protocol. PACKAGE is the onnxruntime-node package folder, MODEL an
// ONNX file, TENSORS the model's inputs (the tensor file format below), THREADS the
// intra-op threads. The session is built as a deployment builds it: every graph
// optimization, THREADS intra-op threads, one inter-op thread, sequential execution.
//
// node's binding hands every run's outputs to JavaScript in a fresh buffer, which only a
// garbage collection frees: until V8's first one (after 64 MiB of them), each run writes
// its outputs to pages never touched before, and glibc returns large freed blocks to the
// system, so that later runs touch fresh pages again. On a virtual machine that made a
// convolution with a 3 MiB output (ResNet-18's stem) 10 times slower than the same
// convolution reduced to a small output. So the session is warmed up (kWarmUpRuns runs
// and kWarmUpSeconds at least, collecting every kWarmUpRuns), each "run N" starts after
// a collection, and farm-onnxruntime-baseline starts node with glibc keeping freed memory
// (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_): ONNX Runtime's steady state, as a
// server runs it, with the collections outside the timed region, as the other
// contenders write into buffers they allocated once.
//
// Once the session is built and warm it prints "ready VERSION", then answers one command
// a line on standard input with one line on standard output:
//   run N           -> "ok SECONDS": the wall time of N back-to-back runs
//   outputs PATH    -> "ok": the last run's outputs written to PATH (tensor file format)
// A failure answers "error MESSAGE" (and before "ready", ends the process with exit 1).
//
// Tensor file format (little-endian): uint32 count, then per tensor uint32 name length,
// the name's bytes, int32 element type (1 float32, 2 float64), uint32 rank, rank int64
// extents, then the values in the element type.

const fs = require('fs');
const readline = require('readline');

const kFloat32 = 1;
const kFloat64 = 2;
const kWarmUpRuns = 10;
const kWarmUpSeconds = 1;

// A garbage collection (node --expose-gc), outside every timed region.
function collect() {
  if (global.gc) global.gc();
}

function fail(message) {
  process.stdout.write('error ' + String(message).replace(/\s+/g, ' ') + '\n');
}

function readTensors(path, ort) {
  const bytes = fs.readFileSync(path);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const u32 = () => {
    const v = view.getUint32(at, true);
    at += 4;
    return v;
  };
  const feeds = {};
  for (let count = u32(), t = 0; t < count; ++t) {
    const nameBytes = u32();
    const name = bytes.toString('utf8', at, at + nameBytes);
    at += nameBytes;
    const type = view.getInt32(at, true);
    at += 4;
    const dims = [];
    for (let rank = u32(), d = 0; d < rank; ++d) {
      dims.push(Number(view.getBigInt64(at, true)));
      at += 8;
    }
    const size = dims.reduce((a, b) => a * b, 1);
    const width = type === kFloat64 ? 8 : 4;
    const copy = bytes.buffer.slice(bytes.byteOffset + at, bytes.byteOffset + at + size * width);
    at += size * width;
    const data = type === kFloat64 ? new Float64Array(copy) : new Float32Array(copy);
    feeds[name] = new ort.Tensor(type === kFloat64 ? 'float64' : 'float32', data, dims);
  }
  return feeds;
}

function writeTensors(path, names, results) {
  const parts = [];
  const header = Buffer.alloc(4);
  header.writeUInt32LE(names.length);
  parts.push(header);
  for (const name of names) {
    const tensor = results[name];
    if (tensor.type !== 'float32' && tensor.type !== 'float64') {
      throw new Error('output ' + name + ' has element type ' + tensor.type);
    }
    const nameBytes = Buffer.from(name, 'utf8');
    const head = Buffer.alloc(4 + nameBytes.length + 8 + 8 * tensor.dims.length);
    let at = head.writeUInt32LE(nameBytes.length);
    at += nameBytes.copy(head, at);
    at = head.writeInt32LE(tensor.type === 'float64' ? kFloat64 : kFloat32, at);
    at = head.writeUInt32LE(tensor.dims.length, at);
    for (const d of tensor.dims) at = head.writeBigInt64LE(BigInt(d), at);
    parts.push(head);
    const data = tensor.data;
    parts.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }
  fs.writeFileSync(path, Buffer.concat(parts));
}

async function main() {
  const [packageDir, model, tensors, threadsText] = process.argv.slice(2);
  const threads = Number(threadsText);
  if (!packageDir || !model || !tensors || !(threads >= 1)) {
    fail('usage: node runner.js PACKAGE MODEL TENSORS THREADS');
    process.exit(1);
  }
  let ort, session, feeds, version;
  try {
    ort = require(packageDir);
    version = require(packageDir + '/package.json').version;
    feeds = readTensors(tensors, ort);
    session = await ort.InferenceSession.create(model, {
      graphOptimizationLevel: 'all',
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
    });
    const start = process.hrtime.bigint();
    for (let runs = 1;
         runs <= kWarmUpRuns || Number(process.hrtime.bigint() - start) / 1e9 < kWarmUpSeconds;
         ++runs) {
      await session.run(feeds);
      if (runs % kWarmUpRuns === 0) collect();
    }
  } catch (e) {
    fail(e && e.message ? e.message : e);
    process.exit(1);
  }
  process.stdout.write('ready ' + version + '\n');

  let last = null;
  const lines = readline.createInterface({input: process.stdin, terminal: false});
  for await (const line of lines) {
    const space = line.indexOf(' ');
    const verb = space < 0 ? line : line.slice(0, space);
    const argument = space < 0 ? '' : line.slice(space + 1);
    try {
      if (verb === 'run') {
        const repeats = Number(argument);
        if (!(repeats >= 1)) throw new Error('run needs a positive count, not "' + argument + '"');
        last = null;
        collect();
        const start = process.hrtime.bigint();
        for (let i = 0; i < repeats; ++i) last = await session.run(feeds);
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        process.stdout.write('ok ' + seconds + '\n');
      } else if (verb === 'outputs') {
        if (last === null) throw new Error('no run yet');
        writeTensors(argument, session.outputNames, last);
        process.stdout.write('ok\n');
      } else {
        throw new Error('unknown command "' + line + '"');
      }
    } catch (e) {
      fail(e && e.message ? e.message : e);
    }
  }
}

main();
