package dev.splitaudit.flinkjobs;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;

/**
 * The stopping offsets of a bounded {@code KafkaSource} ({@code --boundedAt}): every partition stops at the same
 * offset, whatever the topic holds when the job starts, so a scenario can savepoint the bounded job while its
 * readers still wait for records (a stop at {@code latest()} would end the job as soon as it has read the topic).
 */
final class StopAtOffset implements OffsetsInitializer {
  private static final long serialVersionUID = 1L;

  private final long offset;

  StopAtOffset(long offset) {
    this.offset = offset;
  }

  @Override
  public Map<TopicPartition, Long> getPartitionOffsets(
      Collection<TopicPartition> partitions, PartitionOffsetsRetriever retriever) {
    Map<TopicPartition, Long> offsets = new HashMap<>();
    for (TopicPartition partition : partitions) {
      offsets.put(partition, offset);
    }
    return offsets;
  }

  @Override
  public OffsetResetStrategy getAutoOffsetResetStrategy() {
    return OffsetResetStrategy.NONE; // a stopping offset never resets a consumer
  }
}
