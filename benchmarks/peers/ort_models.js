// ONNX Runtime (onnxruntime-node 1.30, CPU) as a peer for the end-to-end model benchmark.
// Install once: (cd benchmarks/peers && npm install --ignore-scripts onnxruntime-node@1.30.0)
// Usage: node ort_models.js MODEL.onnx INPUT_NAME N C H W [--threads 1 2] [--runs 20]
// Prints one JSON line per thread count: {"peer":"onnxruntime", "threads":N, "median_ms":...}.
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const args = {threads: [1, 2], runs: 20, warmup: 5};
  const positional = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--threads') {
      args.threads = [];
      while (i + 1 < argv.length && /^\d+$/.test(argv[i + 1])) args.threads.push(Number(argv[++i]));
    } else if (argv[i] === '--runs') {
      args.runs = Number(argv[++i]);
    } else {
      positional.push(argv[i]);
    }
  }
  [args.model, args.input] = positional;
  args.shape = positional.slice(2).map(Number);
  return args;
}

(async () => {
  const args = parseArgs(process.argv.slice(2));
  const count = args.shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(count);
  for (let i = 0; i < count; i++) data[i] = (i % 97) / 97;
  for (const threads of args.threads) {
    const session = await ort.InferenceSession.create(args.model, {
      intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential'});
    const feeds = {[args.input]: new ort.Tensor('float32', data, args.shape)};
    for (let i = 0; i < args.warmup; i++) await session.run(feeds);
    const times = [];
    for (let i = 0; i < args.runs; i++) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    times.sort((a, b) => a - b);
    const median = times.length % 2 ? times[(times.length - 1) / 2] : (times[times.length / 2 - 1] + times[times.length / 2]) / 2;
    console.log(JSON.stringify({peer: 'onnxruntime', model: args.model, threads, median_ms: median, min_ms: times[0],
                                runs: times.length, version: '1.30.0'}));
    await session.release();
  }
})().catch((e) => { console.error(`ort_models.js: ${e.message}`); process.exit(1); });
