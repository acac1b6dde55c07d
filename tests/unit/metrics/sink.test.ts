import { describe, expect, it } from 'vitest';
import {
  encodeJsonLine,
  metricNumber,
  metricRow,
  metricText,
  parseJsonl,
  parseMetricsJsonl,
  parseRolloutsJsonl,
  truncateJsonlText,
} from '../../../src/metrics/jsonl';
import { CallbackSink, MemorySink, TeeSink, type MetricRow } from '../../../src/metrics/sink';

describe('JSONL line format', () => {
  it('writes step first and non-finite numbers as null; reads null back as NaN', () => {
    const line = encodeJsonLine(
      metricRow(4, { 'actor/grad_norm': NaN, 'a/b': 0.5, 'perf/throughput': Infinity, c: -Infinity }),
    );
    expect(line).toBe('{"step":4,"actor/grad_norm":null,"a/b":0.5,"perf/throughput":null,"c":null}');
    const [row] = parseMetricsJsonl(line + '\n');
    expect(row.step).toBe(4);
    expect(row['a/b']).toBe(0.5);
    expect(row['actor/grad_norm']).toBeNaN();
    expect(row['perf/throughput']).toBeNaN();
  });

  it('round-trips doubles exactly', () => {
    const values = { x: 0.1 + 0.2, y: 1e-300, z: -123456.789012345 };
    const [row] = parseMetricsJsonl(encodeJsonLine(metricRow(0, values)));
    expect(row).toEqual({ step: 0, ...values });
  });

  it('keeps the text metric echo_trap/signal as text, and only that key', () => {
    const line = encodeJsonLine(metricRow(7, { 'echo_trap/warning': 1, 'echo_trap/signal': 'reward_std+entropy' }));
    expect(line).toBe('{"step":7,"echo_trap/warning":1,"echo_trap/signal":"reward_std+entropy"}');
    expect(parseMetricsJsonl(line)).toEqual([
      { step: 7, 'echo_trap/warning': 1, 'echo_trap/signal': 'reward_std+entropy' },
    ]);
    expect(metricNumber(parseMetricsJsonl(line)[0], 'echo_trap/signal')).toBeNaN();
    expect(metricText(parseMetricsJsonl(line)[0], 'echo_trap/signal')).toBe('reward_std+entropy');
    expect(metricText(parseMetricsJsonl(line)[0], 'echo_trap/warning')).toBeNull();
    // A text anywhere else, or a number / null where a text belongs, is rejected on write and on read.
    expect(() => metricRow(1, { 'echo_trap/signal': 3 })).toThrow(/"echo_trap\/signal".*not a text/);
    expect(() => parseMetricsJsonl('{"step":1,"echo_trap/signal":3}')).toThrow(
      /step 1: metric "echo_trap\/signal" is 3, not a text/,
    );
    expect(() => parseMetricsJsonl('{"step":1,"echo_trap/signal":null}')).toThrow(/not a text/);
    expect(() => parseMetricsJsonl('{"step":1,"actor/grad_norm":"big"}')).toThrow(
      /"actor\/grad_norm" is "big", not a number or null/,
    );
    const sink = new MemorySink();
    sink.write(1, { 'echo_trap/signal': 'reward_std' });
    expect(sink.rows[0]['echo_trap/signal']).toBe('reward_std');
  });

  it('validates rows', () => {
    expect(() => metricRow(1, { x: 'no' })).toThrow(/"x".*string, not a number/);
    expect(() => metricRow(1, { step: 2 })).toThrow(/disagrees/);
    expect(metricRow(1, { step: 1, x: 2 })).toEqual({ step: 1, x: 2 });
    expect(() => metricRow(-1, {})).toThrow(/non-negative integer/);
    expect(() => metricRow(1.5, {})).toThrow(/non-negative integer/);
  });

  it('drops a torn last line but rejects corruption elsewhere', () => {
    const good = '{"step":0,"x":1}\n{"step":1,"x":2}\n';
    expect(parseJsonl(good + '{"step":2,"x').tornTail).toBe(true);
    expect(parseMetricsJsonl(good + '{"step":2,"x').map((r) => r.step)).toEqual([0, 1]);
    // a complete last object that lost its newline is kept
    expect(parseMetricsJsonl(good + '{"step":2,"x":3}').map((r) => r.step)).toEqual([0, 1, 2]);
    expect(() => parseMetricsJsonl('{"step":0}\n{"ste\n{"step":2}\n', 'm.jsonl')).toThrow(
      /m\.jsonl: line 2 is not valid JSON/,
    );
    expect(() => parseMetricsJsonl('[1,2]\n')).toThrow(/line 1 is not a JSON object/);
    expect(() => parseMetricsJsonl('{"x":1}\n')).toThrow(/no valid "step"/);
    expect(() => parseMetricsJsonl('{"step":0,"x":"a"}\n')).toThrow(/step 0: metric "x"/);
    expect(parseMetricsJsonl('\n\n{"step":0}\n\n')).toEqual([{ step: 0 }]);
  });

  it('truncates to steps <= N, keeping the original lines byte for byte', () => {
    const text = '{"step":0,"x":1.50}\n{"step":1,"x":2}\n{"step":2,"x":3}\n{"step":3,"x":4}\n{"step":4,"x"';
    const t = truncateJsonlText(text, 1);
    expect(t.text).toBe('{"step":0,"x":1.50}\n{"step":1,"x":2}\n');
    expect(t.kept).toBe(2);
    expect(t.dropped).toBe(2);
    // rollouts: several records per step
    const r = truncateJsonlText('{"step":0,"t":"a"}\n{"step":1,"t":"b"}\n{"step":1,"t":"c"}\n{"step":2,"t":"d"}\n', 1);
    expect(parseRolloutsJsonl(r.text).map((x) => x.t)).toEqual(['a', 'b', 'c']);
  });
});

describe('MemorySink', () => {
  it('stores rows and rollouts and enforces increasing steps', () => {
    const sink = new MemorySink();
    sink.write(0, { x: 1 });
    sink.write(2, { x: NaN });
    expect(() => sink.write(2, { x: 3 })).toThrow(/not after the last written step 2/);
    expect(() => sink.write(1, { x: 3 })).toThrow(/truncateAfter/);
    sink.writeRollouts(2, [{ turns: [{ think: 'go', answer: 'Up' }] }, { turns: [] }]);
    expect(sink.rows.map((r) => r.step)).toEqual([0, 2]);
    expect(sink.rows[1].x).toBeNaN();
    expect(sink.rollouts).toHaveLength(2);
    expect(sink.rollouts[0]).toEqual({ step: 2, turns: [{ think: 'go', answer: 'Up' }] });
    expect(() => sink.writeRollouts(3, [[1] as unknown as object])).toThrow(/not an object/);
    expect(() => sink.writeRollouts(3, [{ step: 1 }])).toThrow(/says step 1/);
  });

  it('truncates for resume and continues from there', () => {
    const sink = new MemorySink();
    for (let s = 0; s < 5; s++) {
      sink.write(s, { x: s });
      sink.writeRollouts(s, [{ id: s }]);
    }
    sink.truncateAfter(2);
    expect(sink.rows.map((r) => r.step)).toEqual([0, 1, 2]);
    expect(sink.rollouts.map((r) => r.step)).toEqual([0, 1, 2]);
    expect(() => sink.write(2, {})).toThrow(/not after/);
    sink.write(3, { x: 30 });
    expect(sink.rows.map((r) => r.x)).toEqual([0, 1, 2, 30]);
    sink.close();
    expect(() => sink.write(4, {})).toThrow(/closed/);
  });
});

describe('CallbackSink and TeeSink', () => {
  it('forwards rows to callbacks and to every sink', async () => {
    const seen: MetricRow[] = [];
    const rolloutSteps: number[] = [];
    const memory = new MemorySink();
    const tee = new TeeSink(
      memory,
      new CallbackSink(
        (row) => void seen.push(row),
        (step, rs) => void rolloutSteps.push(step, rs.length),
      ),
    );
    await tee.write(0, { a: 1 });
    await tee.writeRollouts(0, [{ t: 1 }, { t: 2 }]);
    await tee.write(1, { a: 2 });
    expect(seen).toEqual([
      { step: 0, a: 1 },
      { step: 1, a: 2 },
    ]);
    expect(rolloutSteps).toEqual([0, 2]);
    expect(memory.rows).toHaveLength(2);
    await expect(tee.write(1, { a: 3 })).rejects.toThrow(/not after/);
    await tee.truncateAfter(0);
    await tee.write(1, { a: 4 });
    expect(memory.rows.map((r) => r.a)).toEqual([1, 4]);
    await tee.close();
    expect(memory.closed).toBe(true);
  });
});
