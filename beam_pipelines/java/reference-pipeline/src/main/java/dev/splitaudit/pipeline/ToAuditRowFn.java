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

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.splitaudit.lineage.FlinkTaskAttempt;
import dev.splitaudit.lineage.KafkaLineage;
import dev.splitaudit.lineage.ReaderStamped;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import org.apache.beam.sdk.io.kafka.KafkaRecord;
import org.apache.beam.sdk.transforms.DoFn;

/**
 * Turns each Kafka record into one sink row, a JSON object on one line with the columns of the
 * reference sink: {@code topic, partition, offset} (the record), {@code subtask, attempt} (the Flink task
 * that emitted it), {@code reader_id} (the Beam reader that read it), {@code job_id} (the Flink job), and
 * {@code key_hash, value_hash} (content, to tell a replay of the same record from a different record).
 *
 * <p>With a maximum rate it waits before each record until the subtask's pace allows it. It runs chained to
 * the Kafka source in the same task thread, so the wait slows the readers themselves: a job that reads its
 * backlog over seconds, as a job doing real work per record does, rather than in one burst.
 */
class ToAuditRowFn extends DoFn<KafkaRecord<byte[], ReaderStamped<String>>, String> {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static final long SECOND_NANOS = 1_000_000_000L;

  private final String jobId;
  private final int maxRecordsPerSecond;
  private transient FlinkTaskAttempt task;
  private transient long paceStartNanos;
  private transient long pacedRecords;

  /**
   * {@code jobId} is the Flink job id the submitter fixed for this run ({@code KafkaLineage.submittedJobId()}); {@code
   * maxRecordsPerSecond} the subtask's pace (0: none).
   */
  ToAuditRowFn(String jobId, int maxRecordsPerSecond) {
    this.jobId = jobId;
    this.maxRecordsPerSecond = maxRecordsPerSecond;
  }

  @Setup
  public void setup() {
    task = FlinkTaskAttempt.ofCurrentThread();
  }

  @ProcessElement
  public void processElement(
      @Element KafkaRecord<byte[], ReaderStamped<String>> record, OutputReceiver<String> out)
      throws JsonProcessingException {
    pace();
    byte[] key = record.getKV().getKey();
    Map<String, Object> row = new LinkedHashMap<>();
    KafkaLineage.of(record, task, jobId).putColumns(row);
    row.put("key_hash", key == null ? null : Hashes.sha256Prefix(key));
    row.put("value_hash", record.getKV().getValue().getValue());
    out.output(JSON.writeValueAsString(row));
  }

  /** Wait until the next record is due at {@code maxRecordsPerSecond} since the pace started. */
  private void pace() {
    if (maxRecordsPerSecond <= 0) {
      return;
    }
    long now = System.nanoTime();
    long due = paceStartNanos + pacedRecords * SECOND_NANOS / maxRecordsPerSecond;
    // A new pace after an idle second: records arriving after a pause are not let through in a burst.
    if (pacedRecords == 0 || now - due > SECOND_NANOS) {
      paceStartNanos = now;
      pacedRecords = 1;
      return;
    }
    if (due > now) {
      LockSupport.parkNanos(due - now);
    }
    pacedRecords++;
  }
}
