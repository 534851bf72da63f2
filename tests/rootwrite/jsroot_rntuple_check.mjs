// jsroot_rntuple_check.mjs FIXTURES_TOOL FILE...: reads every RNTuple of each FILE with jsroot
// (an independent reader) and compares, entry by entry, every field that
// `FIXTURES_TOOL --rntuple-values FILE` (ferry's reader) lists: the top-level scalars. RVec and
// cardinality fields are left out, as that tool says: jsroot 7.11.2 reads neither per entry
// (data/rntuple/README.md). Exit 0 when all agree, 1 on a mismatch.
//
// Number rules: float fields compare after rounding both sides to float32 (ferry prints %.9g),
// 64-bit integers as jsroot converts them (Number of the exact value), others exactly, bools
// by truth, NaN and infinities by identity; strings as strings, std::array item by item.
import { execFileSync } from 'node:child_process';
import { openFile } from 'jsroot';
import { TSelector } from 'jsroot/tree';
import { rntupleProcess } from 'jsroot/rntuple';

const [fixtures, ...files] = process.argv.slice(2);
let failures = 0;
let checked = 0;

// 64-bit integers keep every digit as strings, and ferry's bare NaN/Infinity tokens become
// strings too (values only, which is all the tool prints outside strings).
function ferryValues(path) {
  const out = execFileSync(fixtures, ['--rntuple-values', path], { maxBuffer: 1 << 30, encoding: 'utf8' });
  return JSON.parse(out.replace(/([\[,:]\s*)(-?\d{16,}|-?Infinity|NaN)(?=\s*[,\]}])/g, '$1"$2"'));
}

const nonFinite = new Set(['NaN', 'Infinity', '-Infinity']);

function same(type, want, got) {
  if (type === 'std::string') return want === got;
  const array = /^std::array<(.+),(\d+)>$/.exec(type);
  if (array) {
    return Array.isArray(want) && got !== undefined && got !== null && got.length === want.length &&
           want.every((w, k) => same(array[1], w, got[k]));
  }
  if (type === 'bool') return Boolean(got) === want;
  if (type === 'std::int64_t' || type === 'std::uint64_t') return Number(BigInt(want)) === Number(got);
  if (nonFinite.has(want)) return Object.is(Number(want), Number(got));
  if (type === 'float') return Math.fround(want) === Math.fround(Number(got));
  return want === Number(got);
}

async function readWithJsroot(file, name, fields) {
  const tuple = await file.readObject(name);
  const sel = new TSelector();
  for (const f of fields) sel.addBranch(f);
  const values = Object.fromEntries(fields.map(f => [f, []]));
  sel.Process = function() {
    for (const f of fields) values[f].push(this.tgtobj[f]);
  };
  await rntupleProcess(tuple, sel);
  return values;
}

async function checkNtuple(path, file, nt) {
  const fields = Object.keys(nt.fields);
  const got = fields.length ? await readWithJsroot(file, nt.name, fields) : {};
  for (const f of fields) {
    const { type, values: want } = nt.fields[f];
    const where = `${path} > ${nt.name} > ${f}`;
    if (got[f].length !== want.length) {
      console.error(`${where}: ${got[f].length} entries from jsroot, ${want.length} from ferry`);
      ++failures;
      continue;
    }
    const bad = want.findIndex((w, e) => !same(type, w, got[f][e]));
    if (bad >= 0) {
      console.error(`${where} entry ${bad}: ferry ${JSON.stringify(want[bad])}, jsroot ${got[f][bad]}`);
      ++failures;
    }
    checked += 1;
  }
  const skipped = Object.keys(nt.skipped).length;
  console.log(`${path} > ${nt.name}: ${nt.entries} entries, ${fields.length} fields compared, ${skipped} skipped`);
}

for (const path of files) {
  try {
    const file = await openFile(path);
    for (const nt of ferryValues(path).ntuples) await checkNtuple(path, file, nt);
  } catch (e) {
    console.error(`${path}: ${String(e && e.message ? e.message : e).slice(0, 300)}`);
    ++failures;
  }
}
console.log(`${checked} RNTuple fields compared, ${failures} mismatches`);
process.exit(failures === 0 ? 0 : 1);
