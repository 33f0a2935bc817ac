// ONNX Runtime (onnxruntime-node 1.30, CPU) outputs for given inputs: the peer whose int8 results the
// dynamically quantized transformers are checked against (tools/zoo/export_dynamic_int8.py --ort).
// Usage: node ort_outputs.js MODEL.onnx DIR
//   DIR/inputs.json: [{"name", "dtype" (float32|int64|int32), "shape", "file"}], each file the raw
//   little-endian elements; writes DIR/outputs.json in the same form and one raw file per output.
// onnxruntime-node is looked up in $AGATE_ORT_NODE_MODULES, else benchmarks/peers/node_modules
// (install once: cd benchmarks/peers && npm install --ignore-scripts).
const fs = require('fs');
const path = require('path');

const modules = process.env.AGATE_ORT_NODE_MODULES || path.join(__dirname, '..', 'peers', 'node_modules');
const ort = require(path.join(modules, 'onnxruntime-node'));

const ARRAYS = {float32: Float32Array, int64: BigInt64Array, int32: Int32Array, uint8: Uint8Array, int8: Int8Array};

(async () => {
  const [model, dir] = process.argv.slice(2);
  if (!model || !dir) throw new Error('usage: ort_outputs.js MODEL.onnx DIR');
  const feeds = {};
  for (const input of JSON.parse(fs.readFileSync(path.join(dir, 'inputs.json'), 'utf8'))) {
    const Array = ARRAYS[input.dtype];
    if (!Array) throw new Error(`input '${input.name}': dtype ${input.dtype} is not supported`);
    const bytes = fs.readFileSync(path.join(dir, input.file));
    const data = new Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    feeds[input.name] = new ort.Tensor(input.dtype, data, input.shape);
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential'});
  const results = await session.run(feeds);
  const manifest = [];
  for (const name of session.outputNames) {
    const t = results[name];
    const file = `output_${manifest.length}.bin`;
    fs.writeFileSync(path.join(dir, file), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    manifest.push({name, dtype: t.type, shape: t.dims, file});
  }
  fs.writeFileSync(path.join(dir, 'outputs.json'), JSON.stringify(manifest));
  await session.release();
})().catch((e) => { console.error(`ort_outputs.js: ${e.message}`); process.exit(1); });
