/** The jobs a bench child process can run. */
import { type BrokerJob, brokerJob, type BrokerRun } from './scenarios/broker';
import { type LimitJob, limitJob, type LimitRun } from './scenarios/limit';
import { type MemoryJob, memoryJob, type MemoryRun } from './scenarios/memory';
import { type ThroughputJob, throughputJob, type ThroughputRun } from './scenarios/throughput';

export type Job = ThroughputJob | MemoryJob | LimitJob | BrokerJob;
export type JobResult = ThroughputRun | MemoryRun | LimitRun | BrokerRun;

export function runJob(job: Job): Promise<JobResult> {
  switch (job.kind) {
    case 'throughput':
      return throughputJob(job);
    case 'memory':
      return memoryJob(job);
    case 'limit':
      return limitJob(job);
    case 'broker':
      return brokerJob(job);
  }
}
