import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { notificationKind, summarizeRun } from '../results';
import { isLastReport, runGradcheckArguments, runGradcheckFileArguments } from '../protocol';

const fail = {
  schema: 'gradlint.run-result',
  status: 'fail',
  verdict: 'wrong_gradient',
  summary: '✗ Jacobian mismatch: input x, output 0',
  target: { kind: 'function_class', qualname: 'ScaleWrong' },
};
const pass = { status: 'pass', verdict: 'ok', summary: '✓ gradcheck 0.2 s', target: { qualname: 'Square' } };

test('one result', () => {
  assert.deepEqual(summarizeRun(fail), { outcome: 'fail', message: 'ScaleWrong: ✗ Jacobian mismatch: input x, output 0' });
  assert.deepEqual(summarizeRun(pass), { outcome: 'pass', message: 'Square: ✓ gradcheck 0.2 s' });
  assert.equal(summarizeRun({ status: 'timeout', summary: '⏱ timed out after 30 s' })?.outcome, 'fail');
  assert.equal(summarizeRun({ status: 'no_inputs', summary: 'cannot call f(x)' })?.outcome, 'other');
});

test('several results (a file)', () => {
  assert.deepEqual(summarizeRun([pass, fail]), {
    outcome: 'fail',
    message: 'gradcheck: 1 of 2 targets failed (1 passed). ScaleWrong: ✗ Jacobian mismatch: input x, output 0',
  });
  assert.deepEqual(summarizeRun({ results: [pass, pass] }), { outcome: 'pass', message: 'gradcheck: 2 of 2 targets passed' });
});

test('the server\'s {target, inputs_source, result} wrapper', () => {
  const wrapped = { target: 'ScaleWrong', inputs_source: 'synthesized', result: { ...fail, target: { kind: 'function_class' } } };
  assert.deepEqual(summarizeRun(wrapped), { outcome: 'fail', message: 'ScaleWrong: ✗ Jacobian mismatch: input x, output 0' });
  assert.deepEqual(summarizeRun([{ target: 'ScaleRight', result: pass }, wrapped]), {
    outcome: 'fail',
    message: 'gradcheck: 1 of 2 targets failed (1 passed). ScaleWrong: ✗ Jacobian mismatch: input x, output 0',
  });
});

test('nothing to summarize', () => {
  assert.equal(summarizeRun(null), undefined);
  assert.equal(summarizeRun([]), undefined);
  assert.equal(summarizeRun('ok'), undefined);
});

test('command arguments follow the server contract', () => {
  assert.deepEqual(runGradcheckArguments('file:///a.py', { line: 3, character: 7 }), [
    { uri: 'file:///a.py', position: { line: 3, character: 7 } },
  ]);
  assert.deepEqual(runGradcheckFileArguments('file:///a.py'), [{ uri: 'file:///a.py' }]);
  assert.equal(isLastReport({ title: 't', markdown: 'm' }), true);
  assert.equal(isLastReport(null), false);
  assert.equal(isLastReport({ title: 't' }), false);
});

test('a worker that cannot start: the notification carries the advice', () => {
  const s = summarizeRun({
    target: 'Square',
    result: {
      status: 'error',
      verdict: 'worker_unavailable',
      summary: '✗ torch is not installed in /v/bin/python',
      message: 'Run gradcheck with a Python that has torch: set the `interpreter` setting.\nOr install torch into /v/bin/python: `/v/bin/python -m pip install torch==2.13.0`.\nstderr tail',
    },
  });
  assert.equal(s?.outcome, 'fail');
  assert.equal(
    s?.message,
    'Square: ✗ torch is not installed in /v/bin/python. Run gradcheck with a Python that has torch: set the `interpreter` setting. ' +
      'Or install torch into /v/bin/python: `/v/bin/python -m pip install torch==2.13.0`.',
  );
});

test('the notification of a failure is an error, of a warning a warning, of nothing proved information', () => {
  assert.equal(notificationKind(summarizeRun(fail)!.outcome), 'error');
  assert.equal(notificationKind(summarizeRun({ status: 'crash', summary: 'crashed' })!.outcome), 'error');
  const warned = { status: 'warning', verdict: 'not_twice_differentiable', summary: '⚠ not twice differentiable' };
  assert.equal(summarizeRun(warned)?.outcome, 'warning');
  assert.equal(notificationKind(summarizeRun(warned)!.outcome), 'warning');
  assert.deepEqual(summarizeRun([pass, warned]), { outcome: 'warning', message: 'gradcheck: 1 of 2 targets passed (1 with a warning)' });
  assert.equal(notificationKind(summarizeRun({ status: 'inconclusive', summary: '⚠ inconclusive' })!.outcome), 'information');
  assert.equal(notificationKind(summarizeRun(pass)!.outcome), null);
});
