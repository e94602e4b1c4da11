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
package org.apache.beam.sdk.io.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.beam.sdk.io.Source;
import org.apache.beam.sdk.io.UnboundedSource;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * splitaudit: the parts of partition discovery on restore that need KafkaIO's package-private
 * internals: which partitions a split reads, which partitions the topics of a source have now, and a
 * split for chosen partitions. Partitions are named {@code topic:partition} (neither part can hold a
 * colon), so the runner's classes never load a Kafka class for a source that is not Kafka's.
 */
public final class SplitauditKafkaPartitions {
  private SplitauditKafkaPartitions() {}

  /** Whether discovery applies to the source: a KafkaIO read. */
  public static boolean isKafka(Source<?> source) {
    return source instanceof KafkaUnboundedSource;
  }

  /** The partitions a Kafka split reads, fixed when the source was split. */
  public static List<String> partitionsOf(Source<?> source) {
    List<String> names = new ArrayList<>();
    for (TopicPartition partition : spec(source).getTopicPartitions()) {
      names.add(name(partition));
    }
    return names;
  }

  /**
   * Every partition of the topics the source reads, asked from Kafka with the source's own consumer
   * configuration and consumer factory; sorted by topic, then partition number. A source that names
   * its partitions explicitly reads exactly those. Throws when Kafka does not answer within the timeout.
   */
  public static List<String> currentPartitions(Source<?> source, Duration timeout) {
    KafkaIO.Read<?, ?> spec = spec(source);
    if (!spec.getTopicPartitions().isEmpty()) {
      return partitionsOf(source);
    }
    TreeSet<TopicPartition> partitions =
        new TreeSet<>(
            (a, b) ->
                a.topic().equals(b.topic())
                    ? Integer.compare(a.partition(), b.partition())
                    : a.topic().compareTo(b.topic()));
    try (Consumer<byte[], byte[]> consumer =
        spec.getConsumerFactoryFn().apply(spec.getConsumerConfig())) {
      if (spec.getTopicPattern() != null) {
        for (Map.Entry<String, List<PartitionInfo>> topic : consumer.listTopics(timeout).entrySet()) {
          if (spec.getTopicPattern().matcher(topic.getKey()).matches()) {
            addAll(partitions, topic.getValue());
          }
        }
      } else {
        for (String topic : spec.getTopics()) {
          List<PartitionInfo> infos = consumer.partitionsFor(topic, timeout);
          if (infos == null || infos.isEmpty()) {
            throw new IllegalStateException("Kafka has no partitions for topic " + topic);
          }
          addAll(partitions, infos);
        }
      }
    }
    List<String> names = new ArrayList<>();
    for (TopicPartition partition : partitions) {
      names.add(name(partition));
    }
    return names;
  }

  /**
   * A split of the source reading exactly the named partitions. With {@code fromEarliest} it starts at
   * each partition's earliest offset (the consumer's auto.offset.reset is set to earliest for this
   * split only); otherwise it starts where the source's configuration says (its start read time, else
   * its consumer's auto.offset.reset).
   */
  public static UnboundedSource<?, ?> splitFor(
      Source<?> source, Collection<String> partitionNames, int id, boolean fromEarliest) {
    KafkaIO.Read<?, ?> spec = spec(source);
    List<TopicPartition> partitions = new ArrayList<>();
    for (String partitionName : partitionNames) {
      int colon = partitionName.lastIndexOf(':');
      partitions.add(
          new TopicPartition(
              partitionName.substring(0, colon),
              Integer.parseInt(partitionName.substring(colon + 1))));
    }
    return newSource(spec, partitions, id, fromEarliest);
  }

  private static <K, V> KafkaUnboundedSource<K, V> newSource(
      KafkaIO.Read<K, V> spec, List<TopicPartition> partitions, int id, boolean fromEarliest) {
    KafkaIO.Read.Builder<K, V> builder =
        spec.toBuilder()
            .setTopics(new ArrayList<>())
            .setTopicPattern(null)
            .setTopicPartitions(partitions);
    if (fromEarliest) {
      Map<String, Object> config = new HashMap<>(spec.getConsumerConfig());
      config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
      builder.setConsumerConfig(config);
      builder.setStartReadTime(null);
    }
    return new KafkaUnboundedSource<>(builder.build(), id);
  }

  private static void addAll(TreeSet<TopicPartition> partitions, List<PartitionInfo> infos) {
    for (PartitionInfo info : infos) {
      partitions.add(new TopicPartition(info.topic(), info.partition()));
    }
  }

  private static String name(TopicPartition partition) {
    return partition.topic() + ":" + partition.partition();
  }

  private static KafkaIO.Read<?, ?> spec(Source<?> source) {
    return ((KafkaUnboundedSource<?, ?>) source).getSpec();
  }
}
