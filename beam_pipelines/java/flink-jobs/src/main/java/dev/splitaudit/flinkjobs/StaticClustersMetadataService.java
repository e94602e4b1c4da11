package dev.splitaudit.flinkjobs;

import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.flink.connector.kafka.dynamic.metadata.ClusterMetadata;
import org.apache.flink.connector.kafka.dynamic.metadata.KafkaMetadataService;
import org.apache.flink.connector.kafka.dynamic.metadata.KafkaStream;

/**
 * A {@code KafkaMetadataService} that maps every stream id to the topic of the same name on each of a fixed set of
 * clusters (cluster id to bootstrap servers): the same topic read from several clusters at once, as a migration
 * from one cluster to another reads it. The connector ships only a single-cluster service.
 */
final class StaticClustersMetadataService implements KafkaMetadataService {

  private static final long serialVersionUID = 1L;

  private final LinkedHashMap<String, String> clusters;
  private final Set<String> streamIds;

  StaticClustersMetadataService(Map<String, String> clusters, Set<String> streamIds) {
    this.clusters = new LinkedHashMap<>(clusters);
    this.streamIds = new HashSet<>(streamIds);
  }

  /** {@code id=host:port,id2=host:port}: the clusters in the order given. */
  static LinkedHashMap<String, String> parse(String clusters) {
    LinkedHashMap<String, String> parsed = new LinkedHashMap<>();
    for (String entry : clusters.split(",")) {
      int equals = entry.indexOf('=');
      if (equals <= 0 || equals == entry.length() - 1) {
        throw new IllegalArgumentException("--clusters wants id=bootstrap[,id=bootstrap...], got " + entry);
      }
      parsed.put(entry.substring(0, equals), entry.substring(equals + 1));
    }
    return parsed;
  }

  private KafkaStream stream(String streamId) {
    Map<String, ClusterMetadata> metadata = new HashMap<>();
    for (Map.Entry<String, String> cluster : clusters.entrySet()) {
      Properties properties = new Properties();
      properties.setProperty("bootstrap.servers", cluster.getValue());
      Set<String> topics = new HashSet<>();
      topics.add(streamId);
      metadata.put(cluster.getKey(), new ClusterMetadata(topics, properties));
    }
    return new KafkaStream(streamId, metadata);
  }

  @Override
  public Set<KafkaStream> getAllStreams() {
    Set<KafkaStream> streams = new HashSet<>();
    for (String streamId : streamIds) {
      streams.add(stream(streamId));
    }
    return streams;
  }

  @Override
  public Map<String, KafkaStream> describeStreams(Collection<String> ids) {
    Map<String, KafkaStream> described = new HashMap<>();
    for (String streamId : ids) {
      if (streamIds.contains(streamId)) {
        described.put(streamId, stream(streamId));
      }
    }
    return described;
  }

  @Override
  public boolean isClusterActive(String kafkaClusterId) {
    return clusters.containsKey(kafkaClusterId);
  }

  @Override
  public void close() {}
}
