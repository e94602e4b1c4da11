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
package org.apache.beam.runners.flink.translation.wrappers.streaming.io.source;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.beam.sdk.io.Source;
import org.apache.beam.sdk.io.kafka.SplitauditKafkaPartitions;

/**
 * splitaudit partition discovery on restore: after a restore, the partitions of the topics a Kafka
 * source reads that no restored split covers (neither held by a reader nor pending in the enumerator)
 * become new splits, spread evenly over the readers. Without it a restored job never reads a partition
 * added while it was down: Beam fixes every split's partitions when it first splits the source.
 *
 * <p>Options, Java system properties of the JobManager (Flink: {@code env.java.opts.jobmanager}):
 *
 * <ul>
 *   <li>{@value #START_PROPERTY}: {@code earliest} (default) reads a new partition from its earliest
 *       offset, so nothing written while the job was down is lost; {@code configured} starts where the
 *       source's own configuration says (its start read time, else its consumer's auto.offset.reset).
 *   <li>{@value #ALLOW_UNREACHABLE_PROPERTY}: {@code false} (default) fails the job when Kafka does not
 *       answer at restore; {@code true} runs the restored splits only and logs that partitions added
 *       while the job was down stay unread.
 *   <li>{@value #TIMEOUT_PROPERTY}: how long to wait for Kafka's answer, in milliseconds (default 60000).
 * </ul>
 */
final class RestorePartitionDiscovery {
  /** The text patch tooling looks for in the enumerator class to tell a jar carries discovery. */
  static final String MARKER = "splitaudit partition discovery on restore";

  static final String START_PROPERTY = "splitaudit.discovery.start";
  static final String ALLOW_UNREACHABLE_PROPERTY = "splitaudit.discovery.allowKafkaUnreachable";
  static final String TIMEOUT_PROPERTY = "splitaudit.discovery.timeoutMs";

  private RestorePartitionDiscovery() {}

  /** Whether discovery applies to the source (KafkaIO's); other sources are restored as they were. */
  static boolean appliesTo(Source<?> source) {
    try {
      return SplitauditKafkaPartitions.isKafka(source);
    } catch (NoClassDefFoundError noKafkaInTheJob) {
      return false;
    }
  }

  /** Whether the job runs on without discovery when Kafka cannot be reached at restore. */
  static boolean allowsKafkaUnreachable() {
    return Boolean.parseBoolean(System.getProperty(ALLOW_UNREACHABLE_PROPERTY, "false"));
  }

  /**
   * The new splits, by reader index, for the partitions of the source's topics no covering split
   * reads; split indexes continue after the largest one in use. Blocks on Kafka: call it off the
   * coordinator thread.
   */
  static <T> Map<Integer, List<FlinkSourceSplit<T>>> newSplits(
      Source<T> beamSource, Collection<FlinkSourceSplit<?>> covering, int parallelism) {
    Set<String> covered = new HashSet<>();
    int nextIndex = 0;
    for (FlinkSourceSplit<?> split : covering) {
      covered.addAll(SplitauditKafkaPartitions.partitionsOf(split.getBeamSplitSource()));
      nextIndex = Math.max(nextIndex, split.splitIndex() + 1);
    }
    Duration timeout = Duration.ofMillis(Long.getLong(TIMEOUT_PROPERTY, 60_000L));
    List<String> uncovered = new ArrayList<>();
    for (String partition : SplitauditKafkaPartitions.currentPartitions(beamSource, timeout)) {
      if (!covered.contains(partition)) {
        uncovered.add(partition);
      }
    }
    boolean fromEarliest = !"configured".equals(System.getProperty(START_PROPERTY, "earliest"));
    Map<Integer, List<FlinkSourceSplit<T>>> splits = new HashMap<>();
    for (int i = 0; i < uncovered.size(); i++) {
      int splitIndex = nextIndex + i;
      @SuppressWarnings("unchecked")
      Source<T> source =
          (Source<T>)
              SplitauditKafkaPartitions.splitFor(
                  beamSource, Collections.singletonList(uncovered.get(i)), splitIndex, fromEarliest);
      splits
          .computeIfAbsent(i % parallelism, ignored -> new ArrayList<>())
          .add(new FlinkSourceSplit<>(splitIndex, source));
    }
    return splits;
  }
}
