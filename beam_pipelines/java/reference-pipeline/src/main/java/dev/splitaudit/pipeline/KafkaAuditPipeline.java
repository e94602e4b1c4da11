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

import dev.splitaudit.lineage.KafkaLineage;
import dev.splitaudit.lineage.ReaderStamped;
import dev.splitaudit.lineage.ReaderStamping;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.apache.beam.runners.flink.FlinkRunner;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.coders.ByteArrayCoder;
import org.apache.beam.sdk.coders.NullableCoder;
import org.apache.beam.sdk.coders.StringUtf8Coder;
import org.apache.beam.sdk.io.kafka.KafkaIO;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.options.PipelineOptionsValidator;
import org.apache.beam.sdk.transforms.ParDo;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.joda.time.Instant;

/**
 * The reference pipeline of splitaudit: reads every partition of one or more Kafka topics with {@code KafkaIO.read}
 * and writes one JSON-lines row per record, with lineage, to a directory.
 *
 * <pre>
 *   Read            KafkaIO.read: the legacy KafkaUnboundedSource, which the classic FlinkRunner runs
 *                   through Beam's FLIP-27 FlinkSource (the code path of beam#31313)
 *   ToAuditRow      one JSON object per record (see ToAuditRowFn), paced by --maxRecordsPerSecond
 *   WriteJsonLines  one file per bundle (see WriteJsonLinesFn)
 * </pre>
 *
 * <p>Transform names are fixed: Flink operator uids derive from them, so a savepoint of one build
 * restores into another. Meant to be submitted to a Flink cluster ({@code --flinkMaster=[auto]}, the
 * default, over REST {@code /jars/<id>/run} or {@code flink run}) with program arguments such as
 * {@code --bootstrapServers=127.0.0.1:9092 --topic=t --sinkDir=/runs/1/sink --parallelism=2}.
 *
 * <p>The lineage columns come from splitaudit's lineage kit ({@code dev.splitaudit:beam-kafka-lineage}): the
 * values are stamped by reader ({@code ReaderStamping}), and the {@code job_id} column holds the Flink job id
 * the submitter fixed ({@code KafkaLineage.submittedJobId()}), or {@code unknown}.
 */
public final class KafkaAuditPipeline {
  /** Checkpointing is always on; this interval applies unless --checkpointingInterval is given. */
  static final long DEFAULT_CHECKPOINTING_INTERVAL_MILLIS = 1000L;

  private KafkaAuditPipeline() {}

  public static void main(String[] args) {
    AuditPipelineOptions options =
        PipelineOptionsFactory.fromArgs(args).as(AuditPipelineOptions.class);
    options.setRunner(FlinkRunner.class);
    // Validated only now: validation resolves the default runner (DirectRunner), which is not bundled.
    PipelineOptionsValidator.validate(AuditPipelineOptions.class, options);
    options.setStreaming(true);
    // Submit and return (FlinkDetachedRunnerResult): a REST /jars/<id>/run submission is detached, and in
    // attached mode FlinkRunner asks the detached result for accumulators and fails after submitting.
    options.setAttachedMode(false);
    if (options.getCheckpointingInterval() <= 0) {
      options.setCheckpointingInterval(DEFAULT_CHECKPOINTING_INTERVAL_MILLIS);
    }
    Pipeline pipeline = Pipeline.create(options);
    String jobId = KafkaLineage.submittedJobId();
    // By default a group, auto.offset.reset=earliest (a fresh group starts at the beginning of each partition,
    // so a first run reads every record) and commitOffsetsInFinalize; the options give the other consumer
    // configs users run, whose twin reader after a beam#31313 restore starts elsewhere (splitaudit guard).
    Map<String, Object> consumerConfig = new HashMap<>();
    if (!options.getGroupId().isEmpty()) {
      consumerConfig.put(ConsumerConfig.GROUP_ID_CONFIG, options.getGroupId());
    }
    if (!options.getAutoOffsetReset().isEmpty()) {
      consumerConfig.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, options.getAutoOffsetReset());
    }
    if (options.getEnableAutoCommit()) {
      consumerConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, true);
    }
    KafkaIO.Read<byte[], ReaderStamped<String>> read =
        KafkaIO.<byte[], ReaderStamped<String>>read()
            .withBootstrapServers(options.getBootstrapServers())
            .withTopics(Arrays.asList(options.getTopic().split(",")))
            .withKeyDeserializerAndCoder(
                ByteArrayDeserializer.class, NullableCoder.of(ByteArrayCoder.of()))
            .withValueDeserializer(ReaderStamping.of(ValueHashDeserializer.class, StringUtf8Coder.of()))
            .withConsumerConfigUpdates(consumerConfig);
    if (options.getCommitOffsetsInFinalize()) {
      read = read.commitOffsetsInFinalize();
    }
    if (options.getStartReadTime() >= 0) {
      read = read.withStartReadTime(Instant.ofEpochMilli(options.getStartReadTime()));
    }
    if (options.getFinishWhenIdleSeconds() > 0) {
      read =
          read.withTimestampPolicyFactory(
              new FinishWhenIdle<>(options.getFinishWhenIdleSeconds() * 1000L));
    }
    pipeline
        .apply("Read", read)
        .apply("ToAuditRow", ParDo.of(new ToAuditRowFn(jobId, options.getMaxRecordsPerSecond())))
        .apply("WriteJsonLines", ParDo.of(new WriteJsonLinesFn(options.getSinkDir(), jobId)));
    pipeline.run();
  }
}
