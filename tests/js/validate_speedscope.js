// Validates a speedscope file against the schema the speedscope package publishes, and prints
// what the shell test compares with the folded input: {"profiles":N,"names":[...],"weights":W,
// "unit":U,"framesWithFile":F,"stacks":["a;b;c N", ...]}. Exit 1 with the errors when invalid.
'use strict';
const fs = require('fs');
const path = require('path');
const Ajv = require('ajv');

const file = process.argv[2];
const pkg = path.dirname(require.resolve('speedscope/package.json'));
const schema = JSON.parse(fs.readFileSync(path.join(pkg, 'dist/release/file-format-schema.json'), 'utf8'));
const ajv = new Ajv({ strict: false, allErrors: true });
const validate = ajv.compile(schema);
const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
if (!validate(doc)) {
  console.error(JSON.stringify(validate.errors, null, 1));
  process.exit(1);
}
const frames = doc.shared.frames;
const label = (f) => (f.file && f.line ? `${f.name} (${f.file}:${f.line})` : f.name);
let weights = 0;
const stacks = [];
for (const p of doc.profiles) {
  if (p.samples.length !== p.weights.length) throw new Error('samples/weights length differ');
  let sum = 0;
  p.samples.forEach((s, i) => {
    sum += p.weights[i];
    stacks.push(s.map((k) => label(frames[k])).join(';') + ' ' + p.weights[i]);
  });
  if (sum !== p.endValue - p.startValue) throw new Error(`profile ${p.name}: weights ${sum} != endValue`);
  weights += sum;
}
console.log(JSON.stringify({
  profiles: doc.profiles.length,
  names: doc.profiles.map((p) => p.name),
  types: [...new Set(doc.profiles.map((p) => p.type))],
  unit: doc.profiles[0].unit,
  weights,
  framesWithFile: frames.filter((f) => f.file).length,
  stacks,
}));
