// ONNX Runtime (onnxruntime-node 1.30, CPU) as a peer for the end-to-end model benchmark.
// Install once: (cd benchmarks/peers && npm install --ignore-scripts onnxruntime-node@1.30.0)
// Usage: node ort_models.js MODEL.onnx --input NAME:DTYPE:D1xD2x... [--input ...] [--threads 1 2] [--runs 20]
//                           [--profile PREFIX]
//   --profile: ONNX Runtime's own per-node profile of the warm-up and timed runs, written by ONNX Runtime to
//   PREFIX_t<threads>_<date>.json: benchmarks/models/compare_profiles.py reads it.
//   DTYPE is float32 or int64 (token ids, masks); e.g. --input input:float32:1x3x224x224
//   --input input_ids:int64:1x128 --input attention_mask:int64:1x128
// Inputs are deterministic: floats (i % 97) / 97, integers i % 2 (valid token ids and mask flags).
// Prints one JSON line per thread count: {"peer":"onnxruntime", "threads":N, "median_ms":...}.
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const args = {threads: [1, 2], runs: 20, warmup: 5, inputs: []};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--threads') {
      args.threads = [];
      while (i + 1 < argv.length && /^\d+$/.test(argv[i + 1])) args.threads.push(Number(argv[++i]));
    } else if (argv[i] === '--profile') {
      args.profile = argv[++i];
    } else if (argv[i] === '--runs') {
      args.runs = Number(argv[++i]);
    } else if (argv[i] === '--input') {
      const [name, dtype, dims] = argv[++i].split(':');
      if (!name || !['float32', 'int64'].includes(dtype) || !dims) throw new Error(`bad --input '${argv[i]}'`);
      args.inputs.push({name, dtype, shape: dims.split('x').map(Number)});
    } else if (!args.model) {
      args.model = argv[i];
    } else {
      throw new Error(`unexpected argument '${argv[i]}'`);
    }
  }
  if (!args.model || args.inputs.length === 0) throw new Error('usage: ort_models.js MODEL.onnx --input NAME:DTYPE:DIMS ...');
  return args;
}

function makeTensor({dtype, shape}) {
  const count = shape.reduce((a, b) => a * b, 1);
  if (dtype === 'int64') {
    const data = new BigInt64Array(count);
    for (let i = 0; i < count; i++) data[i] = BigInt(i % 2);
    return new ort.Tensor('int64', data, shape);
  }
  const data = new Float32Array(count);
  for (let i = 0; i < count; i++) data[i] = (i % 97) / 97;
  return new ort.Tensor('float32', data, shape);
}

(async () => {
  const args = parseArgs(process.argv.slice(2));
  const feeds = {};
  for (const input of args.inputs) feeds[input.name] = makeTensor(input);
  for (const threads of args.threads) {
    const options = {intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
                     executionMode: 'sequential'};
    if (args.profile) Object.assign(options, {enableProfiling: true, profileFilePrefix: `${args.profile}_t${threads}`});
    const session = await ort.InferenceSession.create(args.model, options);
    for (let i = 0; i < args.warmup; i++) await session.run(feeds);
    const times = [];
    for (let i = 0; i < args.runs; i++) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    times.sort((a, b) => a - b);
    const median = times.length % 2 ? times[(times.length - 1) / 2] : (times[times.length / 2 - 1] + times[times.length / 2]) / 2;
    if (args.profile) session.endProfiling();
    console.log(JSON.stringify({peer: 'onnxruntime', model: args.model, threads, median_ms: median, min_ms: times[0],
                                max_ms: times[times.length - 1], runs: times.length, version: '1.30.0'}));
    await session.release();
  }
})().catch((e) => { console.error(`ort_models.js: ${e.message}`); process.exit(1); });
