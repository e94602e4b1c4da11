package dev.splitaudit.flinkjobs;

import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Map;
import java.util.Properties;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.connector.kafka.dynamic.metadata.KafkaMetadataService;
import org.apache.flink.connector.kafka.dynamic.metadata.SingleClusterTopicMetadataService;
import org.apache.flink.connector.kafka.dynamic.source.DynamicKafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceOptions;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * {@link KafkaLineageJob} with the connector's {@code DynamicKafkaSource} instead of {@code KafkaSource}: the
 * streams it reads are the {@code --topic} names, resolved by a {@code SingleClusterTopicMetadataService} on
 * one cluster, {@value #CLUSTER_ID}, at {@code --bootstrapServers}; or, with {@code --clusters
 * id=bootstrap,id2=bootstrap}, the topic of that name on each of those clusters at once ({@link
 * StaticClustersMetadataService}). Its splits and enumerator state name the cluster with every partition ({@code
 * DynamicKafkaSourceSplit}, {@code DynamicKafkaSourceEnumState}).
 *
 * <p>Same arguments and sink as {@link KafkaLineageJob} ({@code --partitionDiscoveryIntervalMs} goes to each
 * cluster's sub-enumerator); operators carry the uids {@code dynamic-kafka-source} and {@code lineage-sink}. It
 * restarts up to {@value #RESTART_ATTEMPTS} times, a second apart, after a failure.
 */
public final class DynamicKafkaLineageJob {

  /** The Kafka cluster id the metadata service names the stack's broker with. */
  public static final String CLUSTER_ID = "splitaudit-kafka";

  /** Fixed-delay restart attempts, a second apart. */
  static final int RESTART_ATTEMPTS = 60;

  private DynamicKafkaLineageJob() {}

  public static void main(String[] args) throws Exception {
    String[] names = Arrays.copyOf(KafkaLineageJob.ARGUMENTS, KafkaLineageJob.ARGUMENTS.length + 1);
    names[names.length - 1] = "clusters"; // the Kafka jobs' arguments, and the clusters to read
    Map<String, String> options = KafkaLineageJob.parse(args, names);
    String bootstrap = KafkaLineageJob.required(options, "bootstrapServers");
    String[] topics = KafkaLineageJob.required(options, "topic").split(",");
    String group = KafkaLineageJob.required(options, "groupId");
    String sinkDir = KafkaLineageJob.required(options, "sinkDir");
    int parallelism = Integer.parseInt(KafkaLineageJob.required(options, "parallelism"));
    long checkpointing = Long.parseLong(options.getOrDefault("checkpointingInterval", "1000"));

    Properties cluster = new Properties();
    cluster.setProperty("bootstrap.servers", bootstrap);
    String clusters = options.get("clusters");
    KafkaMetadataService metadata =
        clusters == null
            ? new SingleClusterTopicMetadataService(CLUSTER_ID, cluster)
            : new StaticClustersMetadataService(
                StaticClustersMetadataService.parse(clusters), new HashSet<>(Arrays.asList(topics)));
    Properties properties = new Properties();
    String discovery = options.get("partitionDiscoveryIntervalMs");
    if (discovery != null) {
      properties.setProperty(KafkaSourceOptions.PARTITION_DISCOVERY_INTERVAL_MS.key(), discovery);
    }

    // Restarts: more attempts than the cluster's 3, so that a job whose TaskManager was killed waits for a new one
    // to register (its JVM start on a busy machine outlasts 3 attempts a second apart) instead of failing.
    Configuration conf = new Configuration();
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, RESTART_ATTEMPTS);
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofSeconds(1));
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
    env.setParallelism(parallelism);
    env.enableCheckpointing(checkpointing);

    DynamicKafkaSource<LineageRecord> source =
        DynamicKafkaSource.<LineageRecord>builder()
            .setStreamIds(new HashSet<>(Arrays.asList(topics)))
            .setKafkaMetadataService(metadata)
            .setGroupId(group)
            .setStartingOffsets(OffsetsInitializer.earliest())
            .setProperties(properties)
            .setDeserializer(new LineageDeserializer())
            .build();

    env.fromSource(source, WatermarkStrategy.noWatermarks(), "Dynamic Kafka Source")
        .uid("dynamic-kafka-source")
        .addSink(new JsonLinesSink(sinkDir))
        .uid("lineage-sink")
        .name("JSON lines with lineage");

    env.execute("splitaudit DynamicKafkaSource lineage: " + String.join(",", topics));
  }
}
