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
package dev.splitaudit.lineage;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Flink subtask index and execution attempt number of the task running the calling thread.
 *
 * <p>Beam's DoFn API does not expose Flink's {@code RuntimeContext}. Flink (1.16 to 1.19) does name every task's
 * main thread after {@code TaskInfo.getTaskNameWithSubtasks()}: {@code "<task name> (<subtask+1>/<parallelism>)#<attempt>"}
 * ({@code org.apache.flink.runtime.taskmanager.Task}), and the chained Beam operators (source reader, DoFns)
 * open and process elements on that thread. The attempt number starts at 0 for every job, so it counts
 * failovers inside one job; a restore from a savepoint is a new job (a new job id).
 */
public final class FlinkTaskAttempt {
  private static final Pattern TASK_THREAD_NAME = Pattern.compile(".* \\((\\d+)/(\\d+)\\)#(\\d+)$", Pattern.DOTALL);

  private final int subtask;
  private final int attempt;

  private FlinkTaskAttempt(int subtask, int attempt) {
    this.subtask = subtask;
    this.attempt = attempt;
  }

  /** The 0-based index of the subtask. */
  public int subtask() {
    return subtask;
  }

  /** The execution attempt of the subtask within its job: 0, then +1 for every failover restart. */
  public int attempt() {
    return attempt;
  }

  /** Reads the current thread's name; fails if it is not a Flink task thread. */
  public static FlinkTaskAttempt ofCurrentThread() {
    return ofThreadName(Thread.currentThread().getName());
  }

  /** Parses a Flink task thread's name; fails if it does not have that shape. */
  public static FlinkTaskAttempt ofThreadName(String name) {
    Matcher matcher = TASK_THREAD_NAME.matcher(name);
    if (!matcher.matches()) {
      throw new IllegalStateException(
          "not running in a Flink task thread (expected '<task> (i/n)#attempt'): " + name);
    }
    return new FlinkTaskAttempt(Integer.parseInt(matcher.group(1)) - 1, Integer.parseInt(matcher.group(3)));
  }
}
