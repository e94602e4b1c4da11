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

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.beam.sdk.io.UnboundedSource;
import org.apache.beam.sdk.transforms.SerializableFunction;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.TopicPartition;

/** Kafka sources for the enumerator tests, built as KafkaIO builds them (its source class is package-private). */
public final class KafkaTestSources {
  private KafkaTestSources() {}

  /** The source of a job reading the whole topic, as the enumerator holds it. */
  public static UnboundedSource<?, ?> topic(
      String topic,
      String bootstrap,
      SerializableFunction<Map<String, Object>, Consumer<byte[], byte[]>> consumers) {
    return new KafkaUnboundedSource<>(read(bootstrap, consumers).withTopic(topic), -1);
  }

  /** A split of that source reading the given partitions of the topic. */
  public static UnboundedSource<?, ?> split(
      String topic,
      String bootstrap,
      SerializableFunction<Map<String, Object>, Consumer<byte[], byte[]>> consumers,
      int id,
      int... partitions) {
    List<TopicPartition> topicPartitions = new ArrayList<>();
    for (int partition : partitions) {
      topicPartitions.add(new TopicPartition(topic, partition));
    }
    return new KafkaUnboundedSource<>(
        read(bootstrap, consumers).withTopicPartitions(topicPartitions), id);
  }

  private static KafkaIO.Read<byte[], byte[]> read(
      String bootstrap,
      SerializableFunction<Map<String, Object>, Consumer<byte[], byte[]>> consumers) {
    KafkaIO.Read<byte[], byte[]> read = KafkaIO.readBytes().withBootstrapServers(bootstrap);
    return consumers == null ? read : read.withConsumerFactoryFn(consumers);
  }
}
