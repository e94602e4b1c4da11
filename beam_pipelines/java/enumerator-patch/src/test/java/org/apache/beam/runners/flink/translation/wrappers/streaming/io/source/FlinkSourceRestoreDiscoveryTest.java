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

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.beam.runners.core.construction.SerializablePipelineOptions;
import org.apache.beam.runners.flink.FlinkPipelineOptions;
import org.apache.beam.sdk.io.Source;
import org.apache.beam.sdk.io.kafka.KafkaTestSources;
import org.apache.beam.sdk.io.kafka.SplitauditKafkaPartitions;
import org.apache.beam.sdk.transforms.SerializableFunction;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.connector.testutils.source.reader.TestingSplitEnumeratorContext;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.PartitionInfo;
import org.junit.After;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.JUnit4;

/**
 * Partition discovery on restore: after every reader reported the splits it restored, the partitions
 * of the topic that no split covers (held by a reader or pending in the enumerator) get new splits,
 * spread over the readers; none when the topic did not grow; the job fails when Kafka does not answer
 * unless the job allows it.
 */
@RunWith(JUnit4.class)
public class FlinkSourceRestoreDiscoveryTest {
  private static final int PARALLELISM = 2;
  private static final String TOPIC = "orders";
  private static final String BOOTSTRAP = "127.0.0.1:9092";

  @After
  public void clearOptions() {
    System.clearProperty(RestorePartitionDiscovery.ALLOW_UNREACHABLE_PROPERTY);
    System.clearProperty(RestorePartitionDiscovery.TIMEOUT_PROPERTY);
  }

  /** Consumers that see the topic with the given number of partitions (a fake broker: pure logic). */
  private static SerializableFunction<Map<String, Object>, Consumer<byte[], byte[]>> topicWith(
      int partitions) {
    return config -> {
      MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.EARLIEST);
      List<PartitionInfo> infos = new ArrayList<>();
      for (int partition = 0; partition < partitions; partition++) {
        infos.add(new PartitionInfo(TOPIC, partition, null, null, null));
      }
      consumer.updatePartitions(TOPIC, infos);
      return consumer;
    };
  }

  private static FlinkSource<Object, ?> source(Source<?> beamSource) {
    @SuppressWarnings("unchecked")
    FlinkSource<Object, ?> source =
        (FlinkSource<Object, ?>)
            (FlinkSource<?, ?>)
                FlinkSource.unbounded(
                    "Read",
                    (org.apache.beam.sdk.io.UnboundedSource<Object, ?>) beamSource,
                    new SerializablePipelineOptions(FlinkPipelineOptions.defaults()),
                    PARALLELISM);
    return source;
  }

  @SuppressWarnings("unchecked")
  private static FlinkSourceSplit<Object> split(
      SerializableFunction<Map<String, Object>, Consumer<byte[], byte[]>> consumers,
      int index,
      int... partitions) {
    return new FlinkSourceSplit<>(
        index, (Source<Object>) KafkaTestSources.split(TOPIC, BOOTSTRAP, consumers, index, partitions));
  }

  private static TestingSplitEnumeratorContext<FlinkSourceSplit<Object>> contextWithReaders() {
    TestingSplitEnumeratorContext<FlinkSourceSplit<Object>> context =
        new TestingSplitEnumeratorContext<>(PARALLELISM);
    for (int subtask = 0; subtask < PARALLELISM; subtask++) {
      context.registerReader(subtask, "localhost");
    }
    return context;
  }

  /** Restores the enumerator, registers both readers and delivers their reports. */
  private static SplitEnumerator<FlinkSourceSplit<Object>, Map<Integer, List<FlinkSourceSplit<Object>>>>
      restore(
          TestingSplitEnumeratorContext<FlinkSourceSplit<Object>> context,
          FlinkSource<Object, ?> source,
          Map<Integer, List<FlinkSourceSplit<Object>>> checkpoint,
          List<FlinkSourceSplit<Object>> reader0,
          List<FlinkSourceSplit<Object>> reader1)
          throws Exception {
    SplitEnumerator<FlinkSourceSplit<Object>, Map<Integer, List<FlinkSourceSplit<Object>>>> enumerator =
        source.restoreEnumerator(context, checkpoint);
    enumerator.start();
    enumerator.addReader(0);
    enumerator.addReader(1);
    enumerator.handleSourceEvent(0, RestoredSplitsEvent.of(reader0));
    // Not one reader is told "no more splits" before every reader reported.
    assertFalse(toldNoMoreSplits(context, 0));
    enumerator.handleSourceEvent(1, RestoredSplitsEvent.of(reader1));
    return enumerator;
  }

  private static Map<Integer, List<String>> assignedPartitions(
      TestingSplitEnumeratorContext<FlinkSourceSplit<Object>> context) {
    Map<Integer, List<String>> assigned = new HashMap<>();
    context
        .getSplitAssignments()
        .forEach(
            (reader, state) -> {
              for (FlinkSourceSplit<Object> split : state.getAssignedSplits()) {
                assigned
                    .computeIfAbsent(reader, ignored -> new ArrayList<>())
                    .add(
                        split.splitIndex()
                            + "="
                            + SplitauditKafkaPartitions.partitionsOf(split.getBeamSplitSource()));
              }
            });
    return assigned;
  }

  private static boolean toldNoMoreSplits(
      TestingSplitEnumeratorContext<FlinkSourceSplit<Object>> context, int reader) {
    TestingSplitEnumeratorContext.SplitAssignmentState<FlinkSourceSplit<Object>> state =
        context.getSplitAssignments().get(reader);
    return state != null && state.hasReceivedNoMoreSplitsSignal();
  }

  private static void assertEveryReaderToldNoMoreSplits(
      TestingSplitEnumeratorContext<FlinkSourceSplit<Object>> context) {
    for (int reader = 0; reader < PARALLELISM; reader++) {
      assertTrue(toldNoMoreSplits(context, reader));
    }
  }

  @Test
  public void partitionsAddedWhileTheJobWasDownGetNewSplitsSpreadOverTheReaders() throws Exception {
    SerializableFunction<Map<String, Object>, Consumer<byte[], byte[]>> consumers = topicWith(6);
    TestingSplitEnumeratorContext<FlinkSourceSplit<Object>> context = contextWithReaders();
    // Reader 0 holds partitions 0 and 2, reader 1 holds 1; partition 3 is pending for reader 1.
    restore(
        context,
        source(KafkaTestSources.topic(TOPIC, BOOTSTRAP, consumers)),
        Collections.singletonMap(1, Collections.singletonList(split(consumers, 3, 3))),
        Collections.singletonList(split(consumers, 0, 0, 2)),
        Collections.singletonList(split(consumers, 1, 1)));
    context.triggerAllActions();
    Map<Integer, List<String>> expected = new HashMap<>();
    expected.put(0, Collections.singletonList("4=[orders:4]"));
    expected.put(1, Arrays.asList("3=[orders:3]", "5=[orders:5]"));
    assertEquals(expected, assignedPartitions(context));
    assertEveryReaderToldNoMoreSplits(context);
  }

  @Test
  public void noNewSplitWhenTheTopicDidNotGrow() throws Exception {
    SerializableFunction<Map<String, Object>, Consumer<byte[], byte[]>> consumers = topicWith(4);
    TestingSplitEnumeratorContext<FlinkSourceSplit<Object>> context = contextWithReaders();
    SplitEnumerator<FlinkSourceSplit<Object>, Map<Integer, List<FlinkSourceSplit<Object>>>> enumerator =
        restore(
            context,
            source(KafkaTestSources.topic(TOPIC, BOOTSTRAP, consumers)),
            Collections.emptyMap(),
            Collections.singletonList(split(consumers, 0, 0, 2)),
            Collections.singletonList(split(consumers, 1, 1, 3)));
    context.triggerAllActions();
    assertEquals(Collections.emptyMap(), assignedPartitions(context));
    assertEveryReaderToldNoMoreSplits(context);
    assertEquals(Collections.emptyMap(), enumerator.snapshotState(1L));
  }

  @Test
  public void kafkaUnreachableFailsTheRestore() throws Exception {
    System.setProperty(RestorePartitionDiscovery.TIMEOUT_PROPERTY, "1500");
    TestingSplitEnumeratorContext<FlinkSourceSplit<Object>> context = contextWithReaders();
    // Nothing listens on port 1 of 127.0.0.1: a real Kafka consumer gets no answer.
    restore(
        context,
        source(KafkaTestSources.topic(TOPIC, "127.0.0.1:1", null)),
        Collections.emptyMap(),
        Collections.singletonList(split(null, 0, 0, 2)),
        Collections.singletonList(split(null, 1, 1, 3)));
    try {
      context.triggerAllActions();
      fail("the restore went on without knowing the topic's partitions");
    } catch (RuntimeException expected) {
      assertTrue(
          String.valueOf(expected),
          String.valueOf(expected).contains("splitaudit partition discovery on restore failed"));
    }
    assertEquals(Collections.emptyMap(), assignedPartitions(context));
    assertFalse(toldNoMoreSplits(context, 0));
  }

  @Test
  public void kafkaUnreachableRunsOnTheRestoredSplitsWhenAllowed() throws Exception {
    System.setProperty(RestorePartitionDiscovery.TIMEOUT_PROPERTY, "1500");
    System.setProperty(RestorePartitionDiscovery.ALLOW_UNREACHABLE_PROPERTY, "true");
    TestingSplitEnumeratorContext<FlinkSourceSplit<Object>> context = contextWithReaders();
    restore(
        context,
        source(KafkaTestSources.topic(TOPIC, "127.0.0.1:1", null)),
        Collections.emptyMap(),
        Collections.singletonList(split(null, 0, 0, 2)),
        Collections.singletonList(split(null, 1, 1, 3)));
    context.triggerAllActions();
    assertEquals(Collections.emptyMap(), assignedPartitions(context));
    assertEveryReaderToldNoMoreSplits(context);
  }
}
