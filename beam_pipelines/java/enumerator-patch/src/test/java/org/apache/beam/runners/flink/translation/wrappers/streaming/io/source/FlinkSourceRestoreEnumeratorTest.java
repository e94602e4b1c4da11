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
import static org.junit.Assert.assertTrue;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.apache.beam.runners.core.construction.SerializablePipelineOptions;
import org.apache.beam.runners.flink.FlinkPipelineOptions;
import org.apache.beam.sdk.io.CountingSource;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.connector.testutils.source.reader.TestingSplitEnumeratorContext;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.JUnit4;

/**
 * The enumerator patch for beam#31313: a restored enumerator does not split the Beam source again, a
 * fresh one does, and splits in the restored enumerator checkpoint are still handed out, also those
 * pending for a reader index a restore at a lower parallelism no longer has.
 */
@RunWith(JUnit4.class)
public class FlinkSourceRestoreEnumeratorTest {
  private static final int PARALLELISM = 2;

  private final FlinkSource<Long, ?> source =
      FlinkSource.unbounded(
          "Read",
          CountingSource.unbounded(),
          new SerializablePipelineOptions(FlinkPipelineOptions.defaults()),
          PARALLELISM);

  private static TestingSplitEnumeratorContext<FlinkSourceSplit<Long>> contextWithReaders() {
    TestingSplitEnumeratorContext<FlinkSourceSplit<Long>> context =
        new TestingSplitEnumeratorContext<>(PARALLELISM);
    for (int subtask = 0; subtask < PARALLELISM; subtask++) {
      context.registerReader(subtask, "localhost");
    }
    return context;
  }

  private static int assignedSplits(TestingSplitEnumeratorContext<FlinkSourceSplit<Long>> context) {
    return context.getSplitAssignments().values().stream()
        .mapToInt(state -> state.getAssignedSplits().size())
        .sum();
  }

  @Test
  public void freshEnumeratorSplitsTheSourceAndAssignsEverySplit() throws Exception {
    TestingSplitEnumeratorContext<FlinkSourceSplit<Long>> context = contextWithReaders();
    SplitEnumerator<FlinkSourceSplit<Long>, Map<Integer, List<FlinkSourceSplit<Long>>>> enumerator =
        source.createEnumerator(context);
    enumerator.start();
    context.triggerAllActions();
    assertEquals(PARALLELISM, assignedSplits(context));
    assertEquals(Collections.emptyMap(), enumerator.snapshotState(1L));
  }

  @Test
  public void restoredEnumeratorDoesNotSplitTheSourceAgain() throws Exception {
    TestingSplitEnumeratorContext<FlinkSourceSplit<Long>> context = contextWithReaders();
    SplitEnumerator<FlinkSourceSplit<Long>, Map<Integer, List<FlinkSourceSplit<Long>>>> enumerator =
        source.restoreEnumerator(context, Collections.emptyMap());
    enumerator.start();
    context.triggerAllActions();
    // Stock 2.62.0 assigns PARALLELISM fresh splits here, twins of the splits the readers restored.
    assertEquals(0, assignedSplits(context));
    enumerator.addReader(0);
    assertTrue(context.getSplitAssignments().get(0).hasReceivedNoMoreSplitsSignal());
  }

  @Test
  public void restoredEnumeratorStillAssignsTheSplitsItsCheckpointHolds() throws Exception {
    TestingSplitEnumeratorContext<FlinkSourceSplit<Long>> context = contextWithReaders();
    FlinkSourceSplit<Long> pending = new FlinkSourceSplit<>(1, CountingSource.unbounded());
    SplitEnumerator<FlinkSourceSplit<Long>, Map<Integer, List<FlinkSourceSplit<Long>>>> enumerator =
        source.restoreEnumerator(context, Collections.singletonMap(1, Collections.singletonList(pending)));
    enumerator.start();
    context.triggerAllActions();
    enumerator.addReader(1);
    assertEquals(
        Collections.singletonList(pending), context.getSplitAssignments().get(1).getAssignedSplits());
    assertEquals(1, assignedSplits(context));
  }

  @Test
  public void restoredAtLowerParallelismAssignsSplitsPendingForReadersThatAreGone() throws Exception {
    // The checkpoint of a parallelism-4 job holds a split pending for reader 3; restored at parallelism 2,
    // reader 3 never registers, so the split goes to reader 3 mod 2 = 1.
    TestingSplitEnumeratorContext<FlinkSourceSplit<Long>> context = contextWithReaders();
    FlinkSourceSplit<Long> pending = new FlinkSourceSplit<>(3, CountingSource.unbounded());
    SplitEnumerator<FlinkSourceSplit<Long>, Map<Integer, List<FlinkSourceSplit<Long>>>> enumerator =
        source.restoreEnumerator(context, Collections.singletonMap(3, Collections.singletonList(pending)));
    enumerator.start();
    context.triggerAllActions();
    enumerator.addReader(0);
    enumerator.addReader(1);
    assertEquals(
        Collections.singletonList(pending), context.getSplitAssignments().get(1).getAssignedSplits());
    assertEquals(1, assignedSplits(context));
  }
}
