package dev.splitaudit.flinkjobs;

import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.KafkaSourceOptions;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * A Flink-native job (no Beam) reading Kafka with the connector's FLIP-27 {@code KafkaSource}: every record
 * becomes one JSON line with its lineage (topic, partition, offset, the subtask, attempt and job that emitted it,
 * content hashes), in files under {@code --sinkDir} that each checkpoint completes ({@link JsonLinesSink}).
 *
 * <p>Arguments, {@code --name=value}, the restore scenarios' own ({@code lab/splitaudit_lab/scenario/restore.py}):
 * {@code --bootstrapServers --topic (comma-separated) --groupId --sinkDir --parallelism}, and optionally
 * {@code --checkpointingInterval} (ms, default 1000), {@code --partitionDiscoveryIntervalMs} (the connector's
 * {@code partition.discovery.interval.ms}; a non-positive value disables periodic discovery; unset: the
 * connector's default, 5 minutes in 3.3.0), {@code --startingOffsets} ({@code earliest}, the default, or
 * {@code latest}: the builder's {@code setStartingOffsets}, which also sets the consumers' {@code
 * auto.offset.reset}) and {@code --boundedAt} (an offset: a bounded source whose every partition stops there,
 * {@link StopAtOffset}; unset: unbounded). Operators carry uids: {@code kafka-source}
 * ({@code --sourceUid} gives another: a restore with it and {@code allowNonRestoredState} drops the source's splits,
 * as a renamed uid does; the SQL job, whose operators have none, ignores it), {@code lineage-sink}. With {@code
 * --plainSinkDir}, the DataStream job also writes every record without its lineage, its {@code value_hash} alone,
 * into files under that folder (uid {@code plain-sink}): a sink the audit judges by record identity. With {@code
 * --sinkTopic}, it also writes each record's JSON line (the files' columns) as the value of a record of that topic
 * on the same cluster (uids {@code lineage-json}, {@code topic-sink}; the connector's {@code KafkaSink}, at least
 * once: flushed at each checkpoint).
 */
public final class KafkaLineageJob {

  private KafkaLineageJob() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options = parse(args);
    String bootstrap = required(options, "bootstrapServers");
    String[] topics = required(options, "topic").split(",");
    String group = required(options, "groupId");
    String sinkDir = required(options, "sinkDir");
    int parallelism = Integer.parseInt(required(options, "parallelism"));
    long checkpointing = Long.parseLong(options.getOrDefault("checkpointingInterval", "1000"));

    Properties properties = new Properties();
    String discovery = options.get("partitionDiscoveryIntervalMs");
    if (discovery != null) {
      properties.setProperty(KafkaSourceOptions.PARTITION_DISCOVERY_INTERVAL_MS.key(), discovery);
    }

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(parallelism);
    env.enableCheckpointing(checkpointing);

    KafkaSourceBuilder<LineageRecord> builder =
        KafkaSource.<LineageRecord>builder()
            .setBootstrapServers(bootstrap)
            .setTopics(Arrays.asList(topics))
            .setGroupId(group)
            .setStartingOffsets(startingOffsets(options.getOrDefault("startingOffsets", "earliest")))
            .setProperties(properties)
            .setDeserializer(new LineageDeserializer());
    String boundedAt = options.get("boundedAt");
    if (boundedAt != null) {
      builder.setBounded(new StopAtOffset(Long.parseLong(boundedAt)));
    }
    KafkaSource<LineageRecord> source = builder.build();

    DataStream<LineageRecord> records =
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "Kafka Source")
            .uid(options.getOrDefault("sourceUid", "kafka-source"));
    records.addSink(new JsonLinesSink(sinkDir)).uid("lineage-sink").name("JSON lines with lineage");
    String sinkTopic = options.get("sinkTopic");
    if (sinkTopic != null) {
      KafkaSink<String> topicSink =
          KafkaSink.<String>builder()
              .setBootstrapServers(bootstrap)
              .setRecordSerializer(
                  KafkaRecordSerializationSchema.builder()
                      .setTopic(sinkTopic)
                      .setValueSerializationSchema(new SimpleStringSchema())
                      .build())
              .setDeliveryGuarantee(DeliveryGuarantee.AT_LEAST_ONCE)
              .build();
      records
          .map(new LineageJson())
          .uid("lineage-json")
          .sinkTo(topicSink)
          .uid("topic-sink")
          .name("Kafka topic with lineage");
    }
    String plainSinkDir = options.get("plainSinkDir");
    if (plainSinkDir != null) {
      records
          .addSink(new JsonLinesSink(plainSinkDir, false))
          .uid("plain-sink")
          .name("JSON lines without lineage");
    }

    env.execute("splitaudit KafkaSource lineage: " + String.join(",", topics));
  }

  /** {@code --startingOffsets}: {@code earliest} or {@code latest}. */
  static OffsetsInitializer startingOffsets(String name) {
    switch (name) {
      case "earliest":
        return OffsetsInitializer.earliest();
      case "latest":
        return OffsetsInitializer.latest();
      default:
        throw new IllegalArgumentException("--startingOffsets is earliest or latest, not " + name);
    }
  }

  /** The arguments of the Kafka jobs, {@code --name=value} each. */
  static final String[] ARGUMENTS = {
    "bootstrapServers",
    "topic",
    "groupId",
    "sinkDir",
    "parallelism",
    "checkpointingInterval",
    "partitionDiscoveryIntervalMs",
    "startingOffsets",
    "boundedAt",
    "sourceUid",
    "plainSinkDir",
    "sinkTopic"
  };

  /** The {@link #ARGUMENTS} of either Kafka job; any other is refused. */
  static Map<String, String> parse(String[] args) {
    return parse(args, ARGUMENTS);
  }

  /** The arguments, {@code --name=value} each, of a job taking {@code names}; any other is refused. */
  static Map<String, String> parse(String[] args, String... names) {
    Set<String> known = new HashSet<>(Arrays.asList(names));
    Map<String, String> options = new HashMap<>();
    for (String arg : args) {
      int eq = arg.indexOf('=');
      if (!arg.startsWith("--") || eq < 0) {
        throw new IllegalArgumentException("expected --name=value, got " + arg);
      }
      String name = arg.substring(2, eq);
      if (!known.contains(name)) {
        throw new IllegalArgumentException("unknown argument --" + name);
      }
      options.put(name, arg.substring(eq + 1));
    }
    return options;
  }

  static String required(Map<String, String> options, String name) {
    String value = options.get(name);
    if (value == null) {
      throw new IllegalArgumentException("--" + name + " is required");
    }
    return value;
  }
}
