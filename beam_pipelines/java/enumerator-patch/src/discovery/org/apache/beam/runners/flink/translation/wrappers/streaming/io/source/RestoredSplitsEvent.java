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

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import org.apache.flink.api.connector.source.SourceEvent;

/**
 * splitaudit: what a source reader holds when it starts, sent to the enumerator so that, after a
 * restore, it knows which partitions the readers already read (it has no other way: Flink gives each
 * reader its splits back from the reader's own state). Sent by every reader, also on a fresh start,
 * where it holds nothing and the enumerator ignores it.
 */
public final class RestoredSplitsEvent implements SourceEvent {
  private static final long serialVersionUID = 1L;

  private final ArrayList<FlinkSourceSplit<?>> splits;

  private RestoredSplitsEvent(ArrayList<FlinkSourceSplit<?>> splits) {
    this.splits = splits;
  }

  /** The event for the splits a reader holds. */
  public static RestoredSplitsEvent of(Collection<? extends FlinkSourceSplit<?>> splits) {
    return new RestoredSplitsEvent(new ArrayList<>(splits));
  }

  /** The splits the reader held when it started. */
  public List<FlinkSourceSplit<?>> splits() {
    return Collections.unmodifiableList(splits);
  }

  @Override
  public String toString() {
    return "RestoredSplitsEvent" + splits;
  }
}
