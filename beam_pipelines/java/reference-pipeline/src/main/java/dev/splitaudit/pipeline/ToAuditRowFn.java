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
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.beam.sdk.io.kafka.KafkaRecord;
import org.apache.beam.sdk.transforms.DoFn;

/**
 * Turns each Kafka record into one sink row, a JSON object on one line with the columns of the
 * reference sink: {@code topic, partition, offset} (the record), {@code subtask, attempt} (the Flink task
 * that emitted it), {@code reader_id} (the Beam reader that read it), {@code job_id} (the Flink job), and
 * {@code key_hash, value_hash} (content, to tell a replay of the same record from a different record).
 */
class ToAuditRowFn extends DoFn<KafkaRecord<byte[], ReaderStampedValue>, String> {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String jobId;
  private transient FlinkTaskAttempt task;

  /** {@code jobId} is the Flink job id the submitter fixed for this run (see KafkaAuditPipeline). */
  ToAuditRowFn(String jobId) {
    this.jobId = jobId;
  }

  @Setup
  public void setup() {
    task = FlinkTaskAttempt.ofCurrentThread();
  }

  @ProcessElement
  public void processElement(
      @Element KafkaRecord<byte[], ReaderStampedValue> record, OutputReceiver<String> out)
      throws JsonProcessingException {
    byte[] key = record.getKV().getKey();
    ReaderStampedValue value = record.getKV().getValue();
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("topic", record.getTopic());
    row.put("partition", record.getPartition());
    row.put("offset", record.getOffset());
    row.put("subtask", task.subtask);
    row.put("reader_id", value.getReaderId());
    row.put("attempt", task.attempt);
    row.put("job_id", jobId);
    row.put("key_hash", key == null ? null : Hashes.sha256Prefix(key));
    row.put("value_hash", value.getValueHash());
    out.output(JSON.writeValueAsString(row));
  }
}
