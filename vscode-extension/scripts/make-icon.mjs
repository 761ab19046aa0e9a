// Draws images/icon.png (128x128): a nabla (∇) above a lint squiggle. No downloads, just pngjs.
//   node scripts/make-icon.mjs [out.png]
import { PNG } from 'pngjs';
import { writeFileSync } from 'node:fs';

const SIZE = 128;
const SS = 4; // supersampling per axis
const out = process.argv[2] ?? new URL('../images/icon.png', import.meta.url).pathname;

const hex = (h) => [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)];
const mix = (a, b, t) => a.map((v, i) => v + (b[i] - v) * t);

const BG = hex('#1f2430');
const TOP = hex('#ee4c2c'); // PyTorch orange-red
const BOTTOM = hex('#ffb347');
const SQUIGGLE = hex('#ff5f6d');

function insideRoundedRect(x, y, r) {
  const cx = Math.min(Math.max(x, r), SIZE - r);
  const cy = Math.min(Math.max(y, r), SIZE - r);
  return (x - cx) ** 2 + (y - cy) ** 2 <= r * r;
}

function segDist(px, py, ax, ay, bx, by) {
  const dx = bx - ax, dy = by - ay;
  const t = Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)));
  return Math.hypot(px - (ax + t * dx), py - (ay + t * dy));
}

const tri = [[22, 22], [106, 22], [64, 94]];
function sign(p, a, b) {
  return (p[0] - b[0]) * (a[1] - b[1]) - (a[0] - b[0]) * (p[1] - b[1]);
}
function inTriangle(p) {
  const d1 = sign(p, tri[0], tri[1]), d2 = sign(p, tri[1], tri[2]), d3 = sign(p, tri[2], tri[0]);
  const neg = d1 < 0 || d2 < 0 || d3 < 0, pos = d1 > 0 || d2 > 0 || d3 > 0;
  return !(neg && pos);
}
function nablaStroke(x, y) {
  if (!inTriangle([x, y])) return false;
  const d = Math.min(
    segDist(x, y, ...tri[0], ...tri[1]),
    segDist(x, y, ...tri[1], ...tri[2]),
    segDist(x, y, ...tri[2], ...tri[0]),
  );
  return d <= 11;
}

const wave = [];
for (let i = 0; i <= 400; i++) {
  const x = 24 + (80 * i) / 400;
  wave.push([x, 110 + 4 * Math.sin(((x - 24) / 10) * Math.PI)]);
}
function onSquiggle(x, y) {
  if (x < 20 || x > 108 || y < 100 || y > 120) return false;
  for (const [wx, wy] of wave) {
    if ((x - wx) ** 2 + (y - wy) ** 2 <= 3.2 ** 2) return true;
  }
  return false;
}

const png = new PNG({ width: SIZE, height: SIZE });
for (let py = 0; py < SIZE; py++) {
  for (let px = 0; px < SIZE; px++) {
    let r = 0, g = 0, b = 0, a = 0;
    for (let sy = 0; sy < SS; sy++) {
      for (let sx = 0; sx < SS; sx++) {
        const x = px + (sx + 0.5) / SS, y = py + (sy + 0.5) / SS;
        if (!insideRoundedRect(x, y, 26)) continue;
        let c = BG;
        if (nablaStroke(x, y)) c = mix(TOP, BOTTOM, (y - 22) / 72);
        else if (onSquiggle(x, y)) c = SQUIGGLE;
        r += c[0]; g += c[1]; b += c[2]; a += 255;
      }
    }
    const n = SS * SS, i = (py * SIZE + px) * 4;
    const cov = a / 255;
    png.data[i] = cov ? Math.round(r / cov) : 0;
    png.data[i + 1] = cov ? Math.round(g / cov) : 0;
    png.data[i + 2] = cov ? Math.round(b / cov) : 0;
    png.data[i + 3] = Math.round(a / n);
  }
}
writeFileSync(out, PNG.sync.write(png));
console.log(`wrote ${out}`);
