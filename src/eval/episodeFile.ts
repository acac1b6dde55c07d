// `ragen eval --trajectories FILE`: every played episode as one JSONL line (src/eval/episodes.ts), streamed while
// the suites are played. Lines go to a temp sibling FILE.tmp-PID-STAMP (src/node/safeWrite.ts), which becomes FILE
// only when the evaluation finishes, so a run that fails or is interrupted never replaces a FILE the user already
// has; what a killed run left beside FILE is removed by the next one.
import * as fs from 'node:fs';
import type { Trajectory } from '../agent/index';
import { episodeRecordLine, toEpisodeRecord } from './episodes';
import type { EvalSuite } from './suites';
import { pruneStaleTemps, tempSibling } from '../node/safeWrite';

export class EpisodeFileWriter {
  private readonly partial: string;
  private fd: number | null;
  /** Episodes written so far. */
  count = 0;

  constructor(readonly file: string) {
    pruneStaleTemps(file);
    this.partial = tempSibling(file);
    this.fd = fs.openSync(this.partial, 'wx');
  }

  /** Appends the episodes of one played batch of `policy` on `suite` (k rollouts per seed). */
  write(policy: string, suite: EvalSuite, k: number, trajectories: readonly Trajectory[]): void {
    if (this.fd === null) throw new Error(`${this.file}: the episode file is already closed`);
    const text = trajectories.map((t) => episodeRecordLine(toEpisodeRecord(policy, suite, k, t))).join('');
    fs.writeSync(this.fd, text);
    this.count += trajectories.length;
  }

  /** The evaluation finished: the temp file becomes FILE. */
  commit(): void {
    if (this.fd !== null) fs.fsyncSync(this.fd);
    this.close();
    fs.renameSync(this.partial, this.file);
  }

  /** The evaluation failed: the temp file goes, FILE is left as it was. */
  abort(): void {
    this.close();
    fs.rmSync(this.partial, { force: true });
  }

  private close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}
