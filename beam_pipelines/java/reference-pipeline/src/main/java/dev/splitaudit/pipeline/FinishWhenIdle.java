/*
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 */
package dev.splitaudit.pipeline;

import java.util.Optional;
import org.apache.beam.sdk.io.kafka.KafkaRecord;
import org.apache.beam.sdk.io.kafka.TimestampPolicy;
import org.apache.beam.sdk.io.kafka.TimestampPolicyFactory;
import org.apache.beam.sdk.transforms.windowing.BoundedWindow;
import org.apache.kafka.common.TopicPartition;
import org.joda.time.Instant;

/**
 * A Kafka read that ends once its input is drained (bounded input, as a batch job reading a topic): KafkaIO's
 * processing-time timestamps and watermark, until a partition has had no record for the given time; its
 * watermark is then the end of time. Beam's {@code FlinkUnboundedSourceReader} ends a source subtask once every
 * reader's watermark is there and the enumerator has no more splits, and Flink finishes the job.
 *
 * <p>The factory travels inside the source, which Flink's split state holds: a reader restored from a savepoint
 * keeps the policy of the job that took it, so the job before the restore must have it too.
 */
final class FinishWhenIdle<K, V> implements TimestampPolicyFactory<K, V> {
  private static final long serialVersionUID = 1L;

  private final long idleMillis;

  FinishWhenIdle(long idleMillis) {
    this.idleMillis = idleMillis;
  }

  @Override
  public TimestampPolicy<K, V> createTimestampPolicy(
      TopicPartition partition, Optional<Instant> previousWatermark) {
    TimestampPolicy<K, V> processingTime =
        TimestampPolicyFactory.<K, V>withProcessingTime()
            .createTimestampPolicy(partition, previousWatermark);
    return new Policy<>(processingTime, idleMillis);
  }

  /** One partition's policy: processing time, and the end of time once the partition has been idle long enough. */
  private static final class Policy<K, V> extends TimestampPolicy<K, V> {
    private final TimestampPolicy<K, V> processingTime;
    private final long idleNanos;
    private long lastRecordNanos = System.nanoTime(); // the reader's start counts as a record: it waits as long

    Policy(TimestampPolicy<K, V> processingTime, long idleMillis) {
      this.processingTime = processingTime;
      this.idleNanos = idleMillis * 1_000_000L;
    }

    @Override
    public Instant getTimestampForRecord(PartitionContext context, KafkaRecord<K, V> record) {
      lastRecordNanos = System.nanoTime();
      return processingTime.getTimestampForRecord(context, record);
    }

    @Override
    public Instant getWatermark(PartitionContext context) {
      if (System.nanoTime() - lastRecordNanos >= idleNanos) {
        return BoundedWindow.TIMESTAMP_MAX_VALUE;
      }
      return processingTime.getWatermark(context);
    }
  }
}
