// jsroot_check.mjs FERRY FILE...: reads every tree and every supported branch of each FILE
// with jsroot (an independent ROOT reader) and compares every entry with what
// `FERRY root dump --json` prints for it. Exit 0 when all agree, 1 on a mismatch.
//
// Number rules: Float_t compares after rounding both sides to float32 (ferry prints %.9g),
// Double_t and integers exactly (keep 64-bit values within 2^53), Bool_t as 0/1, strings as
// strings, NaN and infinities by identity.
import { execFileSync } from 'node:child_process';
import { openFile } from 'jsroot';
import { TSelector, treeProcess } from 'jsroot/tree';

const [ferry, ...files] = process.argv.slice(2);
let failures = 0;
let checked = 0;

// ferry prints non-finite numbers as the bare tokens NaN, Infinity, -Infinity (not JSON):
// quote them first (values only, which is all `root dump` prints outside strings).
function ferryJson(args) {
  const out = execFileSync(ferry, args, { maxBuffer: 1 << 30, encoding: 'utf8' });
  return JSON.parse(out.replace(/([\[,:]\s*)(-?Infinity|NaN)(?=\s*[,\]}])/g, '$1"$2"'));
}

function nonFinite(want) {
  return want === 'NaN' ? NaN : want === 'Infinity' ? Infinity : want === '-Infinity' ? -Infinity : undefined;
}

// jsroot 7.11 decodes negative 64-bit integers with 32-bit bitwise operators, which is exact
// only when the low word has its top bit set; this reproduces its arithmetic for a value, so
// the check still proves that jsroot read the same bytes.
function jsrootInt64(v) {
  const u = BigInt.asUintN(64, BigInt(v));
  const high = Number(u >> 32n);
  const low = Number(u & 0xffffffffn);
  if (high < 0x80000000) return high * 0x100000000 + low;
  return -1 - ((~high) * 0x100000000 + ~low);
}

function same(type, want, got) {
  if (type === 'string') return want === got;
  const special = nonFinite(want);
  if (special !== undefined) return Object.is(special, Number(got));
  if (type === 'Long64_t' && Number(want) < 0) return jsrootInt64(want) === Number(got);
  if (type === 'Bool_t') return (want ? 1 : 0) === Number(got);
  if (type === 'Float_t') return Math.fround(want) === Math.fround(Number(got));
  return Number(want) === Number(got);
}

function compareEntry(type, want, got) {
  if (Array.isArray(want)) {
    if (got === undefined || got === null || typeof got.length !== 'number') return false;
    if (got.length !== want.length) return false;
    for (let i = 0; i < want.length; ++i) if (!same(type, want[i], got[i])) return false;
    return true;
  }
  return same(type, want, got);
}

async function readWithJsroot(file, treePath, names) {
  const tree = await file.readObject(treePath);
  const sel = new TSelector();
  for (const n of names) sel.addBranch(n);
  const values = Object.fromEntries(names.map(n => [n, []]));
  sel.Process = function() {
    for (const n of names) {
      const v = this.tgtobj[n];
      values[n].push(ArrayBuffer.isView(v) || Array.isArray(v) ? Array.from(v) : v);
    }
  };
  const ok = await new Promise(resolve => {
    sel.Terminate = res => resolve(res);
    treeProcess(tree, sel);
  });
  return { ok, entries: tree.fEntries, values };
}

async function checkFile(path) {
  const ls = ferryJson(['root', 'ls', path, '--json']);
  const file = await openFile(path);
  for (const t of ls.trees) {
    const branches = t.branches.filter(b => b.supported && b.type !== 'leaflist');
    const names = branches.map(b => b.name);
    const want = ferryJson(['root', 'dump', path, '--tree', t.path, '--json']).branches;
    const got = await readWithJsroot(file, t.path, names);
    const where = `${path} > ${t.path}`;
    if (t.entries > 0 && !got.ok) {
      console.error(`${where}: jsroot treeProcess failed`);
      ++failures;
      continue;
    }
    if (Number(got.entries) !== t.entries) {
      console.error(`${where}: jsroot sees ${got.entries} entries, ferry ${t.entries}`);
      ++failures;
    }
    for (const b of branches) {
      const w = want[b.name];
      const g = got.values[b.name];
      if (!w || g.length !== w.length) {
        console.error(`${where} > ${b.name}: ${g.length} entries from jsroot, ${w ? w.length : 'none'} from ferry`);
        ++failures;
        continue;
      }
      for (let e = 0; e < w.length; ++e) {
        if (!compareEntry(b.type, w[e], g[e])) {
          console.error(`${where} > ${b.name} entry ${e}: ferry ${JSON.stringify(w[e])}, jsroot ${JSON.stringify(g[e])}`);
          ++failures;
          break;
        }
      }
      checked += 1;
    }
  }
  console.log(`${path}: ${ls.trees.length} tree(s), big_file=${ls.big_file}, compared`);
}

for (const path of files) {
  try {
    await checkFile(path);
  } catch (e) {
    console.error(`${path}: ${String(e && e.message ? e.message : e).slice(0, 300)}`);
    ++failures;
  }
}
console.log(`${checked} branches compared, ${failures} mismatches`);
process.exit(failures === 0 ? 0 : 1);
