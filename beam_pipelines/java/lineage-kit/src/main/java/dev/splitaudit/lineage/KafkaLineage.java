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

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.Serializable;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.beam.sdk.coders.AtomicCoder;
import org.apache.beam.sdk.coders.StringUtf8Coder;
import org.apache.beam.sdk.coders.VarIntCoder;
import org.apache.beam.sdk.coders.VarLongCoder;
import org.apache.beam.sdk.io.kafka.KafkaRecord;
import org.apache.flink.configuration.PipelineOptionsInternal;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.checkerframework.checker.nullness.qual.Nullable;

/**
 * The lineage columns of one sink row: which Kafka record it comes from and which reader, task and job read it.
 *
 * <table>
 *   <caption>Columns, in {@link #COLUMNS} order</caption>
 *   <tr><td>{@code topic}, {@code partition}, {@code offset}</td><td>the Kafka record</td></tr>
 *   <tr><td>{@code subtask}</td><td>the Flink subtask that read it ({@link FlinkTaskAttempt})</td></tr>
 *   <tr><td>{@code reader_id}</td><td>the Beam reader instance that read it ({@link ReaderStamping})</td></tr>
 *   <tr><td>{@code attempt}</td><td>the subtask's execution attempt: failovers inside one job</td></tr>
 *   <tr><td>{@code job_id}</td><td>the Flink job ({@link #submittedJobId}): a restore is a new job</td></tr>
 * </table>
 *
 * <p>With these splitaudit's audit classifies every duplicate exactly: two readers of one partition in one job
 * (beam#31313: double assignment) or the same record read again by a later job or attempt (replay).
 */
public final class KafkaLineage implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The column names, in the order {@link #putColumns} adds them. */
  public static final List<String> COLUMNS =
      Collections.unmodifiableList(
          Arrays.asList("topic", "partition", "offset", "subtask", "reader_id", "attempt", "job_id"));

  /** The job id of a job whose submitter fixed none. */
  public static final String UNKNOWN_JOB_ID = "unknown";

  private final String topic;
  private final int partition;
  private final long offset;
  private final int subtask;
  private final String readerId;
  private final int attempt;
  private final String jobId;

  public KafkaLineage(
      String topic, int partition, long offset, int subtask, String readerId, int attempt, String jobId) {
    this.topic = topic;
    this.partition = partition;
    this.offset = offset;
    this.subtask = subtask;
    this.readerId = readerId;
    this.attempt = attempt;
    this.jobId = jobId;
  }

  /** The lineage of {@code record}, read by {@code task} of job {@code jobId}. */
  public static KafkaLineage of(
      KafkaRecord<?, ? extends ReaderStamped<?>> record, FlinkTaskAttempt task, String jobId) {
    ReaderStamped<?> value = record.getKV().getValue();
    if (value == null) {
      throw new IllegalArgumentException(
          "a record without a reader stamp: read it with ReaderStamping as the value deserializer");
    }
    return new KafkaLineage(
        record.getTopic(),
        record.getPartition(),
        record.getOffset(),
        task.subtask(),
        value.getReaderId(),
        task.attempt(),
        jobId);
  }

  /**
   * The Flink job id the submitter fixed for this run ({@code jobId} in a REST {@code /jars/<id>/run} request,
   * Flink's {@code $internal.pipeline.job-id}), or {@value #UNKNOWN_JOB_ID}. Call it in {@code main}, before
   * the pipeline runs: a DoFn cannot ask Flink 1.19 for its job id, and Beam exposes none.
   */
  public static String submittedJobId() {
    return StreamExecutionEnvironment.getExecutionEnvironment()
        .getConfiguration()
        .getOptional(PipelineOptionsInternal.PIPELINE_FIXED_JOB_ID)
        .orElse(UNKNOWN_JOB_ID);
  }

  /** Adds the columns to {@code row}, named and ordered as {@link #COLUMNS}. */
  public void putColumns(Map<String, Object> row) {
    row.put("topic", topic);
    row.put("partition", partition);
    row.put("offset", offset);
    row.put("subtask", subtask);
    row.put("reader_id", readerId);
    row.put("attempt", attempt);
    row.put("job_id", jobId);
  }

  public String getTopic() {
    return topic;
  }

  public int getPartition() {
    return partition;
  }

  public long getOffset() {
    return offset;
  }

  public int getSubtask() {
    return subtask;
  }

  public String getReaderId() {
    return readerId;
  }

  public int getAttempt() {
    return attempt;
  }

  public String getJobId() {
    return jobId;
  }

  @Override
  public boolean equals(@Nullable Object other) {
    if (!(other instanceof KafkaLineage)) {
      return false;
    }
    KafkaLineage that = (KafkaLineage) other;
    return topic.equals(that.topic)
        && partition == that.partition
        && offset == that.offset
        && subtask == that.subtask
        && readerId.equals(that.readerId)
        && attempt == that.attempt
        && jobId.equals(that.jobId);
  }

  @Override
  public int hashCode() {
    return Objects.hash(topic, partition, offset, subtask, readerId, attempt, jobId);
  }

  @Override
  public String toString() {
    return "KafkaLineage{" + topic + "-" + partition + "@" + offset + ", subtask=" + subtask + ", reader="
        + readerId + ", attempt=" + attempt + ", job=" + jobId + "}";
  }

  /** Encodes a {@link KafkaLineage} field by field. */
  public static final class Coder extends AtomicCoder<KafkaLineage> {
    private static final Coder INSTANCE = new Coder();
    private static final StringUtf8Coder STRING = StringUtf8Coder.of();
    private static final VarIntCoder INT = VarIntCoder.of();
    private static final VarLongCoder LONG = VarLongCoder.of();

    public static Coder of() {
      return INSTANCE;
    }

    @Override
    public void encode(KafkaLineage lineage, OutputStream out) throws IOException {
      STRING.encode(lineage.topic, out);
      INT.encode(lineage.partition, out);
      LONG.encode(lineage.offset, out);
      INT.encode(lineage.subtask, out);
      STRING.encode(lineage.readerId, out);
      INT.encode(lineage.attempt, out);
      STRING.encode(lineage.jobId, out);
    }

    @Override
    public KafkaLineage decode(InputStream in) throws IOException {
      return new KafkaLineage(
          STRING.decode(in), INT.decode(in), LONG.decode(in), INT.decode(in), STRING.decode(in), INT.decode(in),
          STRING.decode(in));
    }

    @Override
    public void verifyDeterministic() {}
  }
}
