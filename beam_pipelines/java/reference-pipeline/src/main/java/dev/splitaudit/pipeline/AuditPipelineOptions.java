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

import org.apache.beam.runners.flink.FlinkPipelineOptions;
import org.apache.beam.sdk.options.Default;
import org.apache.beam.sdk.options.Description;
import org.apache.beam.sdk.options.Validation;

/**
 * Options of {@link KafkaAuditPipeline}, on top of the classic Flink runner's own ({@code --parallelism},
 * {@code --maxParallelism}, {@code --checkpointingInterval}, ...).
 */
public interface AuditPipelineOptions extends FlinkPipelineOptions {

  @Description("Kafka bootstrap servers, host:port[,host:port...].")
  @Validation.Required
  String getBootstrapServers();

  void setBootstrapServers(String value);

  @Description("The topic to read, every partition of it; several topics separated by commas.")
  @Validation.Required
  String getTopic();

  void setTopic(String value);

  @Description(
      "Kafka consumer group; offsets are committed to it when Flink completes a checkpoint (with"
          + " --commitOffsetsInFinalize). Empty: the read has no group.id.")
  @Default.String("splitaudit")
  String getGroupId();

  void setGroupId(String value);

  @Description(
      "The consumer's auto.offset.reset, where a reader without a checkpoint mark or committed offset starts."
          + " Empty: not set, so KafkaIO's default (latest) applies.")
  @Default.String("earliest")
  String getAutoOffsetReset();

  void setAutoOffsetReset(String value);

  @Description("KafkaIO.Read.commitOffsetsInFinalize(): commit the read offsets when a checkpoint completes.")
  @Default.Boolean(true)
  boolean getCommitOffsetsInFinalize();

  void setCommitOffsetsInFinalize(boolean value);

  @Description("Sets the consumer's enable.auto.commit=true (KafkaIO sets it false by default).")
  @Default.Boolean(false)
  boolean getEnableAutoCommit();

  void setEnableAutoCommit(boolean value);

  @Description(
      "KafkaIO.Read.withStartReadTime, in epoch milliseconds: a reader without a checkpoint mark starts at the"
          + " first offset whose timestamp is at or after it. Negative: not set.")
  @Default.Long(-1L)
  long getStartReadTime();

  void setStartReadTime(long value);

  @Description(
      "Bounded input: a partition's reader ends once it has read no record for this many seconds, and the job"
          + " finishes when every reader has (0: never, the read is unbounded). A savepoint's readers keep the"
          + " setting of the job that took it.")
  @Default.Integer(0)
  int getFinishWhenIdleSeconds();

  void setFinishWhenIdleSeconds(int value);

  @Description("Directory the sink writes its JSON-lines files into (created if missing).")
  @Validation.Required
  String getSinkDir();

  void setSinkDir(String value);

  @Description(
      "Records each subtask processes per second at most (0: as fast as it can). Paces the job like one"
          + " doing real work per record, so a restored job's backlog takes a while to read.")
  @Default.Integer(0)
  int getMaxRecordsPerSecond();

  void setMaxRecordsPerSecond(int value);
}
