// Builds the extension bundle (dist/extension.js) or, with --tests, the unit tests (out/test/).
//   node esbuild.mjs [--production] [--watch] [--tests]
import * as esbuild from 'esbuild';
import { readdirSync } from 'node:fs';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');
const tests = process.argv.includes('--tests');

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  logLevel: 'warning',
};

const options = tests
  ? {
      ...common,
      // The tests cover the pure modules; they must not need `vscode` (not marked external,
      // so importing it by mistake fails the build).
      entryPoints: readdirSync('src/test')
        .filter((f) => f.endsWith('.test.ts'))
        .map((f) => `src/test/${f}`),
      outdir: 'out/test',
      sourcemap: 'inline',
    }
  : {
      ...common,
      entryPoints: ['src/extension.ts'],
      outfile: 'dist/extension.js',
      external: ['vscode'],
      minify: production,
      sourcemap: !production,
      sourcesContent: false,
      // vscode-languageclient and friends are ES5-style CJS; keep names for readable stack traces.
      keepNames: true,
    };

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
  console.log('esbuild: watching');
} else {
  await esbuild.build(options);
}
