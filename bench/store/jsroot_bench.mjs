// jsroot_bench.mjs FILE PICKS_TXT N: jsroot (an independent ROOT reader in JavaScript) on the
// benchmark's file: (1) the first N events of the pick list, one treeProcess per event over
// every branch, in list order; (3) the two-column scan MET_pt > 25 && nMuon >= 1 (count and
// mean MET_pt) over every entry. Prints one JSON object.
import { readFileSync } from 'node:fs';
import { openFile } from 'jsroot';
import { TSelector, treeProcess } from 'jsroot/tree';

const [path, picksPath, nArg] = process.argv.slice(2);
const n = Number(nArg || 20);
const picks = readFileSync(picksPath, 'utf8').split('\n').filter(s => s.length).map(Number).slice(0, n);

function run(tree, names, args, onEntry) {
  const sel = new TSelector();
  for (const b of names) sel.addBranch(b);
  sel.Process = function() { onEntry(this.tgtobj); };
  return new Promise(resolve => {
    sel.Terminate = ok => resolve(ok);
    treeProcess(tree, sel, args);
  });
}

const file = await openFile(path);
const tree = await file.readObject('Events');
const names = [];
for (let i = 0; i < tree.fBranches.arr.length; ++i) names.push(tree.fBranches.arr[i].fName);

const out = { reader: 'jsroot', file: path, branches: names.length, entries: tree.fEntries };
let values = 0;
let t0 = performance.now();
for (const e of picks) {
  const ok = await run(tree, names, { firstentry: e, numentries: 1 }, obj => {
    for (const b of names) values += (obj[b] && obj[b].length !== undefined) ? obj[b].length : 1;
  });
  if (!ok) throw new Error(`jsroot failed on entry ${e}`);
}
let secs = (performance.now() - t0) / 1000;
out.picks = { events: picks.length, seconds: secs, ms_per_event: 1000 * secs / Math.max(1, picks.length), values };

let selected = 0;
let sum = 0;
t0 = performance.now();
const ok = await run(tree, ['MET_pt', 'nMuon'], {}, obj => {
  if (obj.MET_pt > 25 && obj.nMuon >= 1) { ++selected; sum += obj.MET_pt; }
});
secs = (performance.now() - t0) / 1000;
out.two_column_scan = { ok, seconds: secs, selected, mean: selected ? sum / selected : 0 };
console.log(JSON.stringify(out));
